"""The adversarial suite's host layer (grader/tests/adversarial/, README.md there): every
case.toml is valid, every student file compiles (or fails to) as the lab's CMake would compile
it, the static checks refuse what must be refused and pass the fair code, and four cases go
through `grader grade --no-gpu` end to end. The GPU layer is tools/adversarial_check.sh.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from grader import static_checks, workspace
from grader.paths import ROOT
from grader.rubric import load_rubric
from grader.tests import needs
from grader.tests.adversarial import suite
from grader.tools import find_catch2, find_nlohmann_json, find_tool

# --------------------------------------------------------------------------- static adapter
# The one place that knows the static checks' API: grader.static_checks' allow-lists
# (load_rules, student_compile_command, check_submission: what the object references and
# defines, and the preprocessed source), fed as the pipeline feeds them, except that there is
# no build tree here, so no harness objects are passed (the protected names and namespaces
# still apply). A student file that does not compile outside the grader's tree gets the
# source check alone.


def _static_violations(case_dir: Path) -> list[str]:
    """What the static checks say about a case's student file(s), one line per violation;
    empty when they let it through."""
    case = suite.load_case(Path(case_dir))
    if case.name not in _STATIC:
        _STATIC[case.name] = _check_statically(case)
    return _STATIC[case.name]


def _check_statically(case: suite.Case) -> list[str]:
    built = _built(case)
    rules = static_checks.load_rules(case.lab.folder, load_rubric(case.lab).static)
    nvcc = find_tool("nvcc") or "nvcc"
    found: list[str] = []
    for rel in case.student_files:
        source = built.submission / rel
        if not source.is_file():
            continue
        work = _tmp() / "static" / case.name
        cmd = static_checks.student_compile_command(nvcc, ROOT, case.lab.folder, source,
                                                    obj=built.obj)
        run = static_checks.local_run()
        try:
            if built.ok:
                violations = static_checks.check_submission(
                    built.obj, _reference_object(case), cmd, rules, str(ROOT), rel, run, work)
            else:
                pre = static_checks.preprocess(cmd, work, run)
                violations = static_checks.check_preprocessed(pre, rules, str(ROOT),
                                                              rel).violations
        except static_checks.CheckError as err:  # no verdict: the test says so
            _CHECK_ERRORS[case.name] = str(err)
            continue
        found += [v.describe() for v in violations]
    return found


_REFERENCE: dict[str, Path | None] = {}
_CHECK_ERRORS: dict[str, str] = {}  # case -> why the static checks could not be made
_STATIC: dict[str, list[str]] = {}


def _reference_object(case: suite.Case) -> Path | None:
    """The lab's reference compiled like the student's file (its definitions are the
    interface a student file may define)."""
    if case.lab.folder not in _REFERENCE:
        obj = _tmp() / "reference" / f"{case.lab.folder}.o"
        obj.parent.mkdir(parents=True, exist_ok=True)
        cmd = static_checks.student_compile_command(find_tool("nvcc") or "nvcc", ROOT,
                                                    case.lab.folder, case.lab.solution_file,
                                                    obj=obj)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        _REFERENCE[case.lab.folder] = obj if proc.returncode == 0 and obj.is_file() else None
    return _REFERENCE[case.lab.folder]


# Cases the static checks are known to get wrong, with why: skipped with that reason so the
# suite stays green while the gap is open (the GPU runner still counts them as failures). A
# case that starts passing needs no change here; remove it from the list when it does.
KNOWN_GAPS: dict[str, str] = {
    "04_include_solution_relative":
        "a file that is only an #include of the reference gets no verdict: the preprocessed "
        "source check raises CheckError (the student's own lines are not found) instead of "
        "refusing the include",
    "05_include_solution_checkout":
        "a file that is only an #include of the reference gets no verdict: the preprocessed "
        "source check raises CheckError (the student's own lines are not found) instead of "
        "refusing the include",
}

# The end-to-end cases: one work folder (lab 04 builds once), one of each kind of outcome.
E2E_CASES = ("04_popen", "04_fair_device_helpers", "04_skeleton", "04_leak_ifstream_relative")


class _Built:
    def __init__(self, submission: Path, ok: bool, log: str, obj: Path) -> None:
        self.submission, self.ok, self.log, self.obj = submission, ok, log, obj


_TMP: Path | None = None
_BUILT: dict[str, _Built] = {}


def _tmp() -> Path:
    global _TMP
    if _TMP is None:
        _TMP = Path(tempfile.mkdtemp(prefix="cml-adversarial-"))
        _TMP.chmod(0o755)  # run as root, the student's code runs as another user in here
    return _TMP


def _built(case: suite.Case) -> _Built:
    if case.name not in _BUILT:
        sub = suite.materialize(case, _tmp() / "subs" / case.name)
        ok, log, obj = suite.compile_object(case, sub, _tmp() / "obj")
        _BUILT[case.name] = _Built(sub, ok, log, obj)
    return _BUILT[case.name]


# One compile more than the cores (at most four): nvcc's steps wait on files now and then, and
# the suite's other entries (CTest runs two at once) often sleep through a timeout on purpose;
# the spare compile takes up a core either leaves idle.
_WORKERS = min(4, (os.cpu_count() or 2) + 1)


def _build_all(cases: list[suite.Case]) -> None:
    todo = [c for c in cases if c.name not in _BUILT]
    with cf.ThreadPoolExecutor(_WORKERS) as pool:
        list(pool.map(_built, todo))


def tearDownModule():
    if _TMP is not None:
        shutil.rmtree(_TMP, ignore_errors=True)


HAVE_SOLUTIONS = (ROOT / "solutions").is_dir()
NEEDS = "the suite needs solutions/ (it is not part of a student copy)"


def _missing(tools=("nvcc",)) -> str:
    return ", ".join(t for t in tools if not find_tool(t))


@unittest.skipUnless(HAVE_SOLUTIONS, NEEDS)
class CaseFilesTest(unittest.TestCase):
    def test_every_case_is_valid(self):
        cases = suite.load_cases()  # raises naming every bad case.toml
        self.assertGreaterEqual(len(cases), 45)
        labs = {c.lab.number for c in cases}
        self.assertEqual(labs, {p.name[:2] for p in (ROOT / "labs").glob("[0-9][0-9]_*")})
        for cls in suite.CLASSES:
            mine = [c for c in cases if c.cls == cls]
            self.assertGreaterEqual(len({c.lab.number for c in mine}), 2,
                                    f"class {cls} should span several labs")
        for c in cases:
            if c.expect.get("refused") == "static":
                self.assertTrue(c.expect.get("names"), f"{c.name}: name what must be refused")
        self.assertEqual(set(KNOWN_GAPS) - {c.name for c in cases}, set(),
                         "KNOWN_GAPS names a case that does not exist")

    def test_the_fair_corpus_spans_every_lab(self):
        # The allow-list is derived from the fair cases: enough correct code in enough styles
        # that a check too narrow for common code fails here, in every lab.
        fair = [c for c in suite.load_cases() if c.cls == "fair"]
        self.assertGreaterEqual(len(fair), 60)
        for number in sorted({p.name[:2] for p in (ROOT / "labs").glob("[0-9][0-9]_*")}):
            mine = [c.name for c in fair if c.lab.number == number]
            self.assertGreaterEqual(len(mine), 7, f"lab {number}'s fair cases: {mine}")
        for c in fair:
            # The optional bonus left undone is fair: only the lab's own parts count here.
            zero = sorted(k for k, v in c.expect.items() if v == "zero" and k != "bonus")
            self.assertEqual(zero, [], f"{c.name}: fair code expects no part at zero")

    def test_a_bad_case_is_reported_with_its_problems(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "04_bad"
            folder.mkdir()
            (folder / "case.toml").write_text(
                'lab = "04"\nclass = "fair"\ncolour = "red"\n\n[expect]\ntotal = "some"\n')
            with self.assertRaises(suite.CaseError) as caught:
                suite.load_case(folder)
        message = str(caught.exception)
        for part in ("colour", "description", "total", "tiled_matmul.cu is missing"):
            self.assertIn(part, message)

    def test_the_suite_holds_no_line_of_a_reference_or_hidden_test(self):
        # Written from the interfaces, never copied: a solution line here would end up in
        # every copy of the grader's tests (made cases take the reference at test time).
        cases = suite.load_cases()
        for lab in sorted({c.lab.folder for c in cases}):
            secrets = suite.secret_lines(lab)
            for c in (c for c in cases if c.lab.folder == lab):
                for rel in c.student_files:
                    path = c.dir / rel
                    if c.make_from == "base":  # the lab's base file as the case patches it
                        data = suite.based(c, rel)
                    elif path.is_file():
                        data = path.read_bytes()
                    else:
                        continue
                    text = " ".join(data.decode().split())
                    found = sorted(s for s in secrets if s in text)
                    self.assertEqual(found, [], f"{c.name} copies solution lines")

    def test_recipes_make_what_they_say(self):
        cases = {c.name: c for c in suite.load_cases()}
        with tempfile.TemporaryDirectory() as tmp:
            crlf = suite.materialize(cases["02_fair_crlf_bom"], Path(tmp) / "crlf")
            data = (crlf / "labs/02_coalescing/coalescing.cu").read_bytes()
            self.assertTrue(data.startswith(b"\xef\xbb\xbf"))
            self.assertEqual(data.count(b"\n"), data.count(b"\r\n"))
            link = suite.materialize(cases["07_symlink_lab_folder"], Path(tmp) / "link")
            self.assertTrue((link / "labs/07_occupancy").is_symlink())
            self.assertEqual((link / "labs/07_occupancy/occupancy.cu").resolve(),
                             (ROOT / "solutions/07_occupancy/occupancy.cu").resolve())
            sub = suite.materialize(cases["05_include_solution_checkout"], Path(tmp) / "sub")
            text = (sub / "labs/05_boundary_checks/boundary_checks.cu").read_text()
            self.assertIn(str(ROOT.resolve()) + "/solutions/", text)
            self.assertNotIn(suite.REPO_MARK, text)


@unittest.skipUnless(HAVE_SOLUTIONS, NEEDS)
@unittest.skipIf(_missing(("nvcc", "nm")), f"compiling the cases needs: {_missing(('nvcc', 'nm'))}")
class CompileAndStaticTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cases = suite.load_cases()
        _build_all(cls.cases)
        checked = [c for c in cls.cases if c.cls == "fair"
                   or c.expect.get("refused") in ("static", "any")]
        for c in checked:
            _reference_object(c)
        with cf.ThreadPoolExecutor(_WORKERS) as pool:
            list(pool.map(lambda c: _static_violations(c.dir), checked))

    def test_each_student_file_compiles_as_the_lab_would(self):
        for c in self.cases:
            with self.subTest(c.name):
                built = _built(c)
                self.assertEqual(built.ok, c.compiles,
                                 f"{c.name}: expected it to {'compile' if c.compiles else 'fail'}"
                                 f"\n{built.log[-1500:]}")

    def _gap(self, name: str) -> None:
        if name in KNOWN_GAPS:
            self.skipTest(f"known gap of the static checks: {KNOWN_GAPS[name]}")

    def test_refusals(self):
        for c in self.cases:
            want = c.expect.get("refused")
            if want not in ("static", "any", "submission"):
                continue
            with self.subTest(c.name):
                if want == "submission":
                    with tempfile.TemporaryDirectory() as tmp:
                        problems = [workspace.place_student_file(_built(c).submission, rel,
                                                                 Path(tmp))
                                    for rel in c.student_files]
                    self.assertTrue(any(problems), f"{c.name}: the submission was accepted")
                    continue
                violations = _static_violations(c.dir)
                if want == "any" and not _built(c).ok:
                    continue  # it does not even compile outside the grader's tree
                if not violations:
                    self._gap(c.name)
                self.assertTrue(violations, f"{c.name}: the static checks let it through"
                                + (f" (they could not be made: {_CHECK_ERRORS[c.name]})"
                                   if c.name in _CHECK_ERRORS else ""))
                text = "\n".join(violations)
                missing = [n for n in c.expect.get("names", []) if n not in text]
                if missing:
                    self._gap(c.name)
                self.assertEqual(missing, [], f"{c.name}: refused, but not for {missing}: {text}")

    def test_fair_code_passes_the_static_checks(self):
        for c in self.cases:
            if c.cls != "fair":
                continue
            with self.subTest(c.name):
                violations = _static_violations(c.dir)
                if violations:
                    self._gap(c.name)
                self.assertEqual(violations, [], f"{c.name}: a false alarm")


def _e2e_missing() -> str:
    missing = [t for t in ("cmake", "nvcc", "g++", "nm") if not find_tool(t)]
    if not find_catch2()[0]:
        missing.append("Catch2")
    if not find_nlohmann_json()[0]:
        missing.append("nlohmann-json")
    return ", ".join(missing)


@unittest.skipUnless(HAVE_SOLUTIONS, NEEDS)
@unittest.skipIf(_e2e_missing(), f"grading needs these, missing here: {_e2e_missing()}")
class EndToEndTest(unittest.TestCase):
    """`grader grade --no-gpu` on a few lab 04 cases sharing one work folder."""

    @classmethod
    def setUpClass(cls):
        cls.cases = {c.name: c for c in suite.load_cases() if c.name in E2E_CASES}
        cls.work = _tmp() / "work"

    def grade(self, name: str) -> tuple[suite.Case, dict, list[Path]]:
        case = self.cases[name]
        sub = suite.materialize(case, _tmp() / "e2e" / name)
        out = _tmp() / "e2e-out" / name
        proc = subprocess.run(
            [sys.executable, "-m", "grader", "grade", str(sub), "--labs", case.lab.number,
             "--out", str(out), "--work-dir", str(self.work), "--no-gpu", "--seed", "11", "-q",
             "--format", "gradescope,prairielearn,junit,markdown", *needs.cache_args()],
            cwd=ROOT, capture_output=True, text=True, timeout=1500,
            env=dict(os.environ, NO_COLOR="1"))
        self.assertEqual(proc.returncode, 0, proc.stdout[-2000:] + proc.stderr[-2000:])
        result = json.loads((out / "result.json").read_text())
        return case, result, suite.output_files(out)

    def assert_as_expected(self, name: str) -> list[suite.Check]:
        case, result, files = self.grade(name)
        secrets = suite.secret_lines(case.lab.folder, own=suite.own_lines(
            _tmp() / "e2e" / name, case))
        checks = suite.check_result(case, result, files, gpu=False, secrets=secrets,
                                    tree_paths=[str(ROOT.resolve()), str(self.work)])
        failed = [f"{c.key}: {c.detail}" for c in checks if c.verdict == suite.FAIL]
        self.assertEqual(failed, [], f"{name}: {suite.got_summary(result, case.lab.folder)}")
        self.assertTrue(any(c.verdict == suite.PASS for c in checks))
        return checks

    def test_1_fair_code_keeps_every_host_point(self):
        checks = self.assert_as_expected("04_fair_device_helpers")
        self.assertIn("total", {c.key for c in checks if c.verdict == suite.PASS})

    def test_2_the_skeleton_earns_nothing(self):
        self.assert_as_expected("04_skeleton")

    def test_3_a_forbidden_call_is_refused_before_anything_runs(self):
        import inspect

        from grader.stages import static
        calls = inspect.getsource(static)
        if not any(f in calls for f in ("check_submission", "check_object", "check_preprocessed")):
            self.skipTest("grader/stages/static.py does not call the allow-list static checks")
        checks = self.assert_as_expected("04_popen")
        self.assertIn("refused", {c.key for c in checks if c.verdict == suite.PASS})

    def test_4_what_the_code_finds_is_not_shown(self):
        checks = self.assert_as_expected("04_leak_ifstream_relative")
        self.assertIn("no_leak", {c.key for c in checks if c.verdict == suite.PASS})


@unittest.skipUnless(HAVE_SOLUTIONS, NEEDS)
class BonusExpectationTest(unittest.TestCase):
    """`bonus = "zero" | "partial" | "full"`: the optional bonus's parts together, read from a
    result.json's parts that offer points above the maximum (details["bonus"])."""

    def check(self, level: str, correctness: float, speed: float, gpu: bool = True,
              status: str = "graded") -> suite.Check:
        case = next(c for c in suite.load_cases() if c.name == "04_bonus_missing")
        case = dataclasses.replace(case, expect={"bonus": level})
        parts = [
            {"kind": "correctness", "name": "Tiled kernel", "status": "graded", "points": 25,
             "max_points": 25, "details": {}},
            {"kind": "correctness", "name": "Bonus: register-tiled kernel", "status": status,
             "points": correctness, "max_points": 0, "details": {"bonus": 4}},
            {"kind": "performance", "name": "Bonus speed", "status": status, "points": speed,
             "max_points": 0, "details": {"bonus": 6}},
        ]
        result = {"labs": [{"lab": case.lab.folder, "points": 25 + correctness + speed,
                            "max_points": 25, "parts": parts}]}
        return next(c for c in suite.check_result(case, result, [], gpu=gpu) if c.key == "bonus")

    def test_levels(self):
        for level, correctness, speed, verdict in (
                ("zero", 0, 0, suite.PASS), ("zero", 3.43, 0, suite.FAIL),
                ("partial", 3.43, 0, suite.PASS), ("partial", 0, 0, suite.FAIL),
                ("partial", 4, 6, suite.FAIL), ("full", 4, 6, suite.PASS),
                ("full", 4, 5.2, suite.FAIL)):
            with self.subTest(level=level, correctness=correctness, speed=speed):
                self.assertEqual(self.check(level, correctness, speed).verdict, verdict)

    def test_without_a_gpu(self):
        self.assertEqual(self.check("zero", 0, 0, gpu=False, status="not_graded").verdict,
                         suite.NA)
        self.assertEqual(self.check("zero", 1, 0, gpu=False, status="not_graded").verdict,
                         suite.FAIL)


@unittest.skipUnless(HAVE_SOLUTIONS, NEEDS)
class SkipConceptTest(unittest.TestCase):
    """`skip_concept`: correct code that skips the lab's lesson, one case per lab, each bounded
    by `max_total` (the lab's points, bonus included, at most that many), checked against a
    result.json's lab points."""

    def check(self, points: float, gpu: bool = True, unmeasured: tuple = (),
              tools: dict | None = None, bound: float = 70) -> suite.Check:
        case = next(c for c in suite.load_cases() if c.name == "06_skip_unpadded")
        case = dataclasses.replace(case, expect={"max_total": bound})
        parts = [{"kind": "correctness", "name": "Conflict-degree model", "status": "graded",
                  "points": min(points, 25), "max_points": 25, "details": {}},
                 {"kind": "correctness", "name": "Padded tile transpose",
                  "status": "graded" if gpu else "not_graded",
                  "points": max(points - 25, 0), "max_points": 75, "details": {}}]
        for kind, worth in unmeasured:
            parts.append({"kind": kind, "name": f"a {kind} part", "status": "not_measured",
                          "points": 0, "max_points": 0,
                          "details": {"points_if_measured": worth}})
        most = sum(p["max_points"] for p in parts)
        result = {"labs": [{"lab": case.lab.folder, "points": points, "max_points": most,
                            "parts": parts}],
                  "tools": tools if tools is not None else {"ncu": "/usr/bin/ncu"}}
        return next(c for c in suite.check_result(case, result, [], gpu=gpu)
                    if c.key == "max_total")

    def test_the_bound_on_a_gpu(self):
        self.assertEqual(self.check(64).verdict, suite.PASS)
        self.assertEqual(self.check(70).verdict, suite.PASS)
        self.assertEqual(self.check(70.5).verdict, suite.FAIL)
        self.assertEqual(self.check(100).verdict, suite.FAIL)
        self.assertIn("more than 70", self.check(85).detail)

    def test_without_a_gpu(self):
        # The host parts alone: n/a below the bound, since the GPU parts could add points.
        self.assertEqual(self.check(25, gpu=False).verdict, suite.NA)
        self.assertEqual(self.check(0, gpu=False).verdict, suite.NA)
        # Host points already above it fail without a GPU (no lab's host parts allow it).
        self.assertEqual(self.check(25, gpu=False, bound=20).verdict, suite.FAIL)

    def test_a_part_not_measured(self):
        # 60 points and 7 left out: measured, it could not pass 70 either way.
        self.assertEqual(self.check(60, unmeasured=(("metric", 7),)).verdict, suite.PASS)
        # 66 and 7 left out: the tool missing excuses it, the tool present does not.
        self.assertEqual(self.check(66, unmeasured=(("metric", 7),), tools={}).verdict,
                         suite.NA)
        self.assertEqual(self.check(66, unmeasured=(("metric", 7),)).verdict, suite.FAIL)
        self.assertEqual(self.check(66, unmeasured=(("performance", 15),), tools={}).verdict,
                         suite.FAIL)

    def test_every_lab_has_one_and_each_is_bounded(self):
        cases = suite.load_cases()
        skips = [c for c in cases if c.cls == "skip_concept"]
        labs = {p.name[:2] for p in (ROOT / "labs").glob("[0-9][0-9]_*")}
        self.assertEqual({c.lab.number for c in skips}, labs)
        for c in skips:
            with self.subTest(c.name):
                self.assertLessEqual(c.expect["max_total"], 70)
                self.assertNotIn("total", c.expect)
                self.assertIn(f"T<={c.expect['max_total']:g}", c.expected_text())

    def test_bad_max_total_is_reported(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name, expect, problem in (
                    ("04_no_bound", 'correctness = "full"', "must expect max_total"),
                    ("04_text_bound", 'max_total = "70"', "max_total must be a positive number"),
                    ("04_zero_bound", "max_total = 0", "max_total must be a positive number"),
                    ("04_both", 'max_total = 70\ntotal = "full"', "keep one")):
                folder = Path(tmp) / name
                folder.mkdir()
                (folder / "case.toml").write_text(
                    f'lab = "04"\nclass = "skip_concept"\ndescription = "A case."\n'
                    f'make_from = "base"\n\n[expect]\n{expect}\n')
                with self.subTest(name), self.assertRaises(suite.CaseError) as caught:
                    suite.load_case(folder)
                self.assertIn(problem, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
