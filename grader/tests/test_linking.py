"""Student-linked executables linked from a reference-cache entry (grader/linking.py): the
link command's rewrite (the skeleton's library and the output replaced, anything else
refused), the plan an entry gives, and grades of lab 01 with a warm cache that configure
and compile nothing in the grader's tree and grade exactly as without a cache — the
reference, a compile error, a definition the harness already has (refused by the static
check, whose harness objects now come from the entry) and a missing definition (the
linker's error)."""

from __future__ import annotations

import json
import shutil
import tempfile
import unittest
from pathlib import Path

from grader import linking, pipeline, refcache, static_checks
from grader.paths import ROOT, find_lab
from grader.result import COMPILE_ERROR, STATIC_VIOLATION

from . import needs
from .needs import missing as _missing
from .test_golden import GOLDEN, SEED, normalise

SKELETON = "labs/01_warp_sizing/liblab01_student.a"
LINK = (": && /usr/bin/c++ -O3 -DNDEBUG -Wl,--wrap=cudaLaunchKernel "
        "common/CMakeFiles/cml_test_main.dir/src/test_main.cpp.o "
        "labs/01_warp_sizing/CMakeFiles/lab01_public_tests.dir/tests/test_a.cpp.o "
        "-o labs/01_warp_sizing/lab01_tests_student -L/usr/local/cuda/lib64 "
        f"-Wl,-rpath,/usr/local/cuda/lib  {SKELETON}  labs/01_warp_sizing/liblab01_given.a "
        " common/libcml.a -lcudart_static -lrt -lpthread -ldl && :")


class RewriteTest(unittest.TestCase):
    def rewrite(self, command: str):
        return linking.rewrite(command, SKELETON, "/w/student-build/lib.a", "/w/build/out")

    def test_the_library_and_the_output_are_replaced(self):
        argv = self.rewrite(LINK)
        self.assertEqual(argv[0], "/usr/bin/c++")
        self.assertEqual(argv[-1], "-ldl")  # CMake's ": && ... && :" taken off
        self.assertNotIn(SKELETON, argv)
        self.assertEqual(argv.count("/w/student-build/lib.a"), 1)
        self.assertEqual(argv[argv.index("-o") + 1], "/w/build/out")
        self.assertIn("common/libcml.a", argv)
        # the same without CMake's wrapper
        self.assertEqual(self.rewrite(LINK[5:-5]), argv)

    def test_the_linkers_dependency_file_is_left_out(self):
        # CMake 3.27 and later: written beside the target's objects, which an entry need not
        # have (its objects are the tests' object libraries'), and never into an entry
        depfile = "-Wl,--dependency-file=labs/01_warp_sizing/CMakeFiles/x.dir/link.d"
        argv = self.rewrite(LINK.replace("-Wl,--wrap", f"{depfile} -Wl,--wrap", 1))
        self.assertIsNotNone(argv)
        self.assertEqual(argv, self.rewrite(LINK))
        self.assertFalse([t for t in argv if "dependency-file" in t])

    def test_what_cannot_be_rewritten_safely_is_refused(self):
        refused = {
            "no skeleton library": LINK.replace(SKELETON, "labs/x/libother.a"),
            "two skeleton libraries": LINK.replace(" common/libcml.a", f" {SKELETON}"),
            "no -o": LINK.replace("-o labs/", "labs/"),
            "two -o": LINK.replace(" -ldl", " -o other"),
            "a joined -o": LINK.replace("-o labs/", "-olabs/"),
            "-o last": LINK[5:-5] + " -o",
            "two commands": LINK.replace(" && :", " && touch x && :"),
            "a redirection": LINK[5:-5] + " > log",
            "unbalanced quotes": LINK + " '",
            "empty": "",
        }
        for why, command in refused.items():
            with self.subTest(why):
                self.assertIsNone(self.rewrite(command))


class PlanTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-plan-"))
        self.lab = find_lab("01")
        self.kinds = linking.linked_kinds(self.lab)
        (self.tmp / "build").mkdir()
        self.write({k: LINK.replace("lab01_tests_student", f"lab01_{k}") for k in self.kinds})

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, kinds):
        (self.tmp / linking.LINKS_FILE).write_text(json.dumps({"kinds": kinds}))

    def plan(self):
        return linking.plan(self.tmp, self.lab, Path("/w/sb"), Path("/w/b"))

    def test_every_kind_planned_into_the_grades_tree(self):
        planned = self.plan()
        self.assertEqual(sorted(planned), sorted(self.kinds))
        for kind, argv in planned.items():
            self.assertEqual(argv[argv.index("-o") + 1], f"/w/b/labs/01_warp_sizing/lab01_{kind}")
            self.assertIn("/w/sb/labs/01_warp_sizing/liblab01_student.a", argv)

    def test_a_missing_kind_an_unsafe_command_or_no_objects_plan_nothing(self):
        self.write({k: LINK for k in self.kinds[1:]})
        self.assertIsNone(self.plan())
        self.write({k: LINK.replace(" && :", " && rm -rf x && :") for k in self.kinds})
        self.assertIsNone(self.plan())
        self.write({k: LINK for k in self.kinds})
        shutil.rmtree(self.tmp / "build")
        self.assertIsNone(self.plan())
        self.assertIsNone(linking.plan(None, self.lab, Path("/w/sb"), Path("/w/b")))


class TogetherTest(unittest.TestCase):
    """build.together with one lab linked from its entry: the grader's tree builds only the
    other lab's targets; a failed link leaves each lab to build alone."""

    def run_together(self, link_ok: bool):
        from types import SimpleNamespace
        from unittest import mock

        from grader import workspace
        from grader.rubric import load_rubric
        from grader.stages import build
        from grader.stages.job import LabJob
        student = SimpleNamespace(build=Path("/sb"), env={}, identity=None, jail=None)
        entry = SimpleNamespace(path=Path("/cache/e01"))
        trees = SimpleNamespace(build=Path("/b"), build_env={}, student=student,
                                references={"01_warp_sizing": entry},
                                links={"01_warp_sizing": {"tests_student": ["c++"]}})
        jobs = [LabJob(find_lab(k), load_rubric(find_lab(k)), trees, 1, 60, 60, False, "")
                for k in ("01", "04")]
        calls, linked = [], []

        def fake_build(tree, targets, timeout, env, **kw):
            calls.append((str(tree), list(targets)))
            return workspace.BuildOutcome(True, 1.0)

        def fake_links(work, env):
            linked.extend(work)
            return {lab.folder: workspace.BuildOutcome(link_ok, 0.5, False, [], "log")
                    for lab, *_ in work}

        with mock.patch.object(build.workspace, "cmake_build", fake_build), \
                mock.patch.object(build.linking, "link_labs", fake_links):
            build.together(jobs)
        return jobs, calls, linked

    def test_the_cached_lab_is_linked_from_its_entry(self):
        jobs, calls, linked = self.run_together(True)
        self.assertEqual(calls[0], ("/sb", ["lab01_student", "lab04_student"]))
        self.assertFalse([t for t in calls[1][1] if t.startswith("lab01_")], calls)
        self.assertIn("lab04_tests_student", calls[1][1])
        self.assertEqual([(lab.folder, path) for lab, path, *_ in linked],
                         [("01_warp_sizing", Path("/cache/e01"))])
        self.assertTrue(all(j.prebuilt is not None and j.prebuilt.outcome.ok for j in jobs))

    def test_a_failed_link_leaves_each_lab_to_build_alone(self):
        jobs, _calls, _linked = self.run_together(False)
        self.assertTrue(all(j.prebuilt is None for j in jobs))


LAB = "01_warp_sizing"
SOLUTION = ROOT / "solutions" / LAB / "warp_sizing.cu"
# What a student's file can get wrong at build time, each on top of the reference.
BROKEN = {
    "compile_error": lambda text: text + "\nint broken = ;\n",
    # lab01::scale is the given code's (baseline.cu): the static check names it
    "harness_symbol": lambda text: text + (
        "\nnamespace lab01 {\nvoid scale(const float*, float*, int, float, int) {}\n}\n"),
    # no lab01::idle_lanes: the linker says what is undefined
    "missing_symbol": lambda text: text.replace("int idle_lanes(int threads_per_block)",
                                                "int idle_lanes_gone(int threads_per_block)"),
}


FAILURE = {"compile_error": COMPILE_ERROR, "harness_symbol": STATIC_VIOLATION,
           "missing_symbol": COMPILE_ERROR}


def _submission(dest: Path, edit=lambda text: text) -> Path:
    target = dest / "labs" / LAB / "warp_sizing.cu"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(edit(SOLUTION.read_text()))
    return dest


@unittest.skipIf(_missing(solutions_of=LAB),
                 f"a real grade needs these, missing here: {_missing(solutions_of=LAB)}")
class CachedLinkGradeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-link-"))
        cls.tmp.chmod(0o755)  # run as root, the student's code runs as 'nobody' in here
        # warm is all these grades need: the run's shared cache where there is one
        cls.cache = needs.shared_cache() or cls.tmp / "cache"
        cls.lab = find_lab("01")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def grade(self, sub: Path, work: str, cache: bool = True) -> dict:
        opts = pipeline.Options(submission=sub, labs=[self.lab], seed=SEED,
                                work_dir=self.tmp / work, gpu=False,
                                cache=self.cache if cache else None)
        got = json.loads(pipeline.grade(opts).to_json())
        self.assertEqual(got["errors"], [])
        return normalise(got)

    def test_1_a_warm_grade_configures_and_compiles_nothing_of_the_grader(self):
        entry = refcache.Cache(self.cache).fill(ROOT, [self.lab])[LAB]
        self.assertEqual(sorted(linking.commands(entry.path)),
                         sorted(linking.linked_kinds(self.lab)))
        # the static check's harness: every object the student's code is linked with, the
        # public and hidden tests' among them
        harness = {p.name for p in static_checks.harness_objects(
            entry.path / linking.BUILD_DIR, self.lab.folder, self.lab.tag)}
        sources = [*self.lab.lab_dir.glob("tests/*.c*"), *self.lab.lab_dir.glob("bench/*.c*"),
                   *self.lab.solution_dir.glob("tests/*.c*"),
                   ROOT / "common" / "src" / "test_main.cpp"]
        self.assertGreater(len(sources), 3)
        for source in sources:
            self.assertIn(f"{source.name}.o", harness)
        sub = _submission(self.tmp / "sub-reference")
        want = next(x for x in json.loads((GOLDEN / "reference.json").read_text())["labs"]
                    if x["lab"] == LAB)
        for _ in range(2):  # the same work folder twice, as `--work-dir` reuses it
            got = self.grade(sub, "work-cached")
            self.assertEqual(got["labs"][0], want)
            build = self.tmp / "work-cached" / "build"
            self.assertFalse((build / "build.ninja").exists())
            self.assertFalse((build / "CMakeCache.txt").exists())
            self.assertFalse(list(build.rglob("*.o")))
            for kind in linking.linked_kinds(self.lab):
                self.assertTrue((build / "labs" / LAB / f"lab01_{kind}").is_file(), kind)
            # the student's tree compiled the student's file and nothing else
            log = (self.tmp / "work-cached" / "student-build" / ".ninja_log").read_text()
            edges = {line.split("\t")[3] for line in log.splitlines()[1:]}
            self.assertTrue(edges)
            self.assertTrue(all("lab01_student" in e for e in edges), sorted(edges))

    def test_2_build_failures_read_as_without_a_cache(self):
        refcache.Cache(self.cache).fill(ROOT, [self.lab])
        for name, edit in BROKEN.items():
            with self.subTest(name):
                sub = _submission(self.tmp / f"sub-{name}", edit)
                cached = self.grade(sub, "work-broken")["labs"][0]
                self.assertFalse((self.tmp / "work-broken" / "build" / "build.ninja").exists())
                plain = self.grade(sub, "work-plain", cache=False)["labs"][0]
                self.assertEqual(cached["failure"], FAILURE[name])
                if name == "missing_symbol":  # the linker's errors: which target fails first
                    # may differ (a parallel build), so compare what they say
                    for lab in (cached, plain):
                        self.assertTrue(lab["build"]["errors"])
                        self.assertTrue(any("idle_lanes" in e for e in lab["build"]["errors"]),
                                        lab["build"]["errors"])
                        lab["build"].pop("errors")
                        lab["parts"][0].pop("reason")
                        lab["parts"][0]["details"].pop("errors")
                self.assertEqual(cached, plain)


if __name__ == "__main__":
    unittest.main()
