"""End to end on lab 04 without a GPU: real builds of deliberately right, wrong and cheating
submissions (fixtures/lab04). All share one work tree, so the reference builds once and each
submission rebuilds only the student's targets. In a CTest run the grades take the run's
shared reference cache (needs.shared_cache) and link from it, as a grade with the default
cache does; test_golden keeps grading lab 04 without a cache."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from grader import pipeline
from grader.paths import ROOT, find_lab
from grader.result import NOT_GRADED, PASSED, TIMEOUT

from . import needs

from .lab_fixtures import STUDENT_REL, line_of, make_submission

HOST_POINTS = 15.0  # the model (10) and tile chooser (5) groups: graded without a GPU


def _missing() -> str:
    return needs.missing()


@unittest.skipIf(_missing(), f"end-to-end grading needs these, missing here: {_missing()}")
class Lab04EndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-e2e-"))
        cls.tmp.chmod(0o755)  # run as root, the student's code runs as 'nobody' in here
        cls.work = cls.tmp / "work"
        cls.lab = find_lab("04")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def grade(self, name: str, **kw):
        sub = make_submission(name, self.tmp / "subs" / name)
        opts = pipeline.Options(submission=sub, labs=[self.lab], seed=1234,
                                work_dir=self.work, gpu=False, cache=needs.shared_cache(), **kw)
        result = pipeline.grade(opts)
        self.assertEqual(result.errors, [], "the grader itself reported problems")
        self.assertEqual(len(result.labs), 1)
        lab = result.labs[0]
        self._last = lab
        return result, lab

    def tearDown(self):
        lab = getattr(self, "_last", None)
        outcome = getattr(self, "_outcome", None)
        failed = outcome is not None and any(
            err for _test, err in getattr(outcome.result, "failures", [])[-1:]
            if _test is self)
        if lab is not None and failed:
            for p in lab.parts:
                print(f"  {p.kind}/{p.name}: {p.status} {p.points}/{p.max_points} {p.reason[:300]}")
            for t in lab.tests:
                print(f"  {t.status} {t.name}: {t.messages[:2]}")
            print("  build:", lab.build)

    def parts(self, lab, kind):
        return {p.name: p for p in lab.parts if p.kind == kind}

    def assert_gpu_parts_not_graded(self, lab):
        for p in lab.parts:
            if p.kind in ("memory_safety", "performance", "metric"):
                self.assertEqual(p.status, NOT_GRADED, p.name)
                self.assertEqual(p.points, 0.0)
        for t in lab.tests:
            if t.layer == "gpu":
                self.assertEqual(t.points, 0.0)
                self.assertNotEqual(t.status, PASSED)

    def test_solution_earns_every_host_point(self):
        result, lab = self.grade("solution")
        self.assertEqual(result.points, HOST_POINTS)
        self.assertEqual(result.max_points, 100.0)
        groups = self.parts(lab, "correctness")
        self.assertEqual(groups["Global-load model"].points, 10.0)
        self.assertEqual(groups["Run-time tile chooser"].points, 5.0)
        self.assertEqual(groups["Tiled kernel, compile-time tile"].status, NOT_GRADED)
        self.assert_gpu_parts_not_graded(lab)
        hidden = [t for t in lab.tests if t.hidden and t.layer == "host"]
        self.assertTrue(hidden and all(t.status == PASSED for t in hidden))
        self.assertIn("lab04_tests_student", lab.binaries)
        self.assertEqual(result.device, None)

    def test_skeleton_earns_nothing(self):
        result, lab = self.grade("skeleton")
        self.assertEqual(result.points, 0.0)
        host = [t for t in lab.tests if t.layer == "host"]
        self.assertTrue(host and all(t.status == "failed" for t in host))
        self.assert_gpu_parts_not_graded(lab)

    def test_compile_error_points_at_the_students_line(self):
        result, lab = self.grade("compile_error")
        self.assertEqual(result.points, 0.0)
        self.assertFalse(lab.build["ok"])
        line = line_of("compile_error", "undeclared_thing")
        build = self.parts(lab, "build")["Build"]
        self.assertIn(f"{STUDENT_REL}:{line}: error", build.reason)
        self.assertIn("undeclared_thing", build.reason)
        self.assertNotIn(str(self.work), build.reason)

    def test_edited_tests_and_header_change_nothing(self):
        result, lab = self.grade("edits_tests")
        self.assertEqual(result.points, 0.0)
        host = [t for t in lab.tests if t.layer == "host"]
        self.assertTrue(host and all(t.status == "failed" for t in host))

    def test_forbidden_call_is_caught_on_the_object_file(self):
        result, lab = self.grade("forbidden_call")
        self.assertEqual(result.points, 0.0)
        static = self.parts(lab, "static")["Static checks"]
        self.assertIn("system", static.reason)
        self.assertIn("does not allow", static.reason)
        for p in self.parts(lab, "correctness").values():
            self.assertEqual(p.points, 0.0)
            self.assertIn("static check", p.reason)
        self.assertEqual(lab.tests, [])  # nothing of the student's was run

    def test_fake_test_output_is_ignored(self):
        result, lab = self.grade("fake_output")
        self.assertEqual(result.points, 0.0)
        model = [t for t in lab.tests if t.group == "Global-load model"]
        self.assertTrue(model and all(t.status == "failed" for t in model))

    def test_build_that_never_ends_is_stopped(self):
        result, lab = self.grade("build_hang", build_timeout=8)
        self.assertEqual(result.points, 0.0)
        self.assertTrue(lab.build["timed_out"])
        self.assertIn("did not finish within 8 s", self.parts(lab, "build")["Build"].reason)
        self.assertLess(lab.wall_seconds, 120)

    def test_hang_at_run_time_costs_only_that_case(self):
        result, lab = self.grade("run_hang", test_timeout=8)
        groups = self.parts(lab, "correctness")
        self.assertEqual(groups["Global-load model"].points, 10.0)
        self.assertEqual(groups["Run-time tile chooser"].points, 0.0)
        chooser = [t for t in lab.tests if t.group == "Run-time tile chooser"]
        self.assertTrue(chooser and all(t.status == TIMEOUT for t in chooser))
        self.assertEqual(result.points, 10.0)

    def test_command_line_writes_result_and_exports(self):
        sub = make_submission("solution", self.tmp / "subs" / "cli")
        out = self.tmp / "out"
        proc = subprocess.run(
            [sys.executable, "-m", "grader", "grade", str(sub), "--labs", "04", "--out",
             str(out), "--work-dir", str(self.work), "--no-gpu", "--seed", "5", "-q",
             *needs.cache_args()],
            cwd=ROOT, capture_output=True, text=True, timeout=900)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        data = json.loads((out / "result.json").read_text())
        self.assertEqual(data["schema"], "cml-result/1")
        self.assertEqual(data["seed"], 5)
        self.assertEqual(data["points"], HOST_POINTS)
        for rel in ("gradescope/results.json", "prairielearn/results.json", "junit.xml",
                    "summary.md"):
            self.assertTrue((out / rel).is_file(), rel)


if __name__ == "__main__":
    unittest.main()
