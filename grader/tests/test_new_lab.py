"""`grader new-lab`: a lab pair made from the template in a temporary copy of the tree,
then loaded, checked, configured, built and its host tests run, as a new lab's author
would. The template itself is built and checked only here."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from grader.course import skeletonize
from grader.commands.new_lab import NewLabError, make_lab, substitute
from grader.paths import ROOT, LabPaths, discover_labs
from grader.rubric import RubricError, load_rubric, rubric_warnings
from grader.tools import find_tool

from . import needs

FOLDER = "08_probe_lab"
LAB = "lab08"
# What CMake needs to configure the lab and what the command needs to make it.
TREE = ("CMakeLists.txt", "CMakePresets.json", "cmake", "common", "docs", "grader",
        "labs/_template", "solutions/_template")


def _copy_tree(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "tests", "build", "build-*", ".grader")
    for rel in TREE:
        source, target = ROOT / rel, dest / rel
        if source.is_dir():
            shutil.copytree(source, target, ignore=ignore if rel == "grader" else None)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _missing() -> str:
    return needs.missing(("cmake", "ninja", "nvcc", "g++"))


# The student copy (grader release) has no solutions/: nothing to make a lab from there.
NO_TEMPLATE = "" if (ROOT / "solutions" / "_template").is_dir() else \
    "no solutions/_template here (a student copy)"


@unittest.skipIf(NO_TEMPLATE, NO_TEMPLATE)
class NewLabTest(unittest.TestCase):
    """Making the pair and what the grader reads of it (no build)."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="cml-new-lab-")
        self.root = Path(self._tmp.name)
        _copy_tree(self.root)
        self.written = make_lab(FOLDER, "Probe lab", root=self.root)
        self.lab = LabPaths(FOLDER, "08", "probe_lab", self.root)

    def tearDown(self):
        self._tmp.cleanup()

    def test_pair_has_every_part_named_after_the_folder(self):
        rels = {p.relative_to(self.root).as_posix() for p in self.written}
        for rel in (f"labs/{FOLDER}/probe_lab.cu", f"labs/{FOLDER}/probe_lab.cuh",
                    f"labs/{FOLDER}/baseline.cu", f"labs/{FOLDER}/grading.toml",
                    f"labs/{FOLDER}/CMakeLists.txt", f"labs/{FOLDER}/tests/test_probe_lab.cpp",
                    f"labs/{FOLDER}/bench/bench_probe_lab.cpp",
                    f"solutions/{FOLDER}/probe_lab.cu", f"solutions/{FOLDER}/tests/test_hidden.cpp",
                    f"handouts/{FOLDER}.md"):
            self.assertIn(rel, rels)
        self.assertFalse((self.root / "labs" / FOLDER / "README.md").exists())
        for path in self.written:
            text = path.read_text()
            for name in ("labNN", "NN_topic", "topic.cu", "Lab NN"):
                self.assertNotIn(name, text, f"{path.name} still says {name}")
        self.assertEqual([lab.folder for lab in discover_labs(self.root)], [FOLDER])

    def test_rubric_derives_file_and_tag_from_the_folder(self):
        rubric = load_rubric(self.lab)
        self.assertEqual(rubric.student_files, [f"labs/{FOLDER}/probe_lab.cu"])
        self.assertEqual(rubric.title, "Probe lab")
        self.assertEqual([g.tests for g in rubric.tables["correctness"]],
                         [f"[{LAB}][model]", f"[{LAB}][kernel]"])
        self.assertEqual(rubric.tables["memory_safety"].tests, f"[{LAB}][kernel]")
        self.assertIsNotNone(rubric.tables["performance"])
        self.assertEqual(rubric_warnings(rubric), [])

    def test_skeleton_is_in_sync_and_differs_from_the_solution(self):
        self.assertEqual(skeletonize.check([self.lab]), [])
        self.assertNotEqual(self.lab.student_file.read_text(), self.lab.solution_file.read_text())
        self.assertNotIn("2LL * n", self.lab.student_file.read_text())  # no answer in it

    def test_performance_without_a_reference_is_an_error(self):
        self.lab.solution_file.unlink()
        with self.assertRaises(RubricError) as ctx:
            load_rubric(self.lab)
        self.assertIn(f"solutions/{FOLDER}/probe_lab.cu does not exist", str(ctx.exception))

    def test_refuses_bad_names_and_existing_labs(self):
        for bad in ("8_x", "08-x", "08_X", FOLDER, "08_other"):
            with self.subTest(name=bad), self.assertRaises(NewLabError):
                make_lab(bad, root=self.root)
        self.assertFalse((self.root / "labs" / "08_other").exists())

    def test_substitution_leaves_other_words_alone(self):
        self.assertEqual(substitute("labNN_test::x; topics; NNN; test_topic.cpp; Topic", "09_ab",
                                    "Ab"), "lab09_test::x; topics; NNN; test_ab.cpp; Ab")


@unittest.skipIf(NO_TEMPLATE, NO_TEMPLATE)
@unittest.skipIf(_missing(), f"building a lab needs these, missing here: {_missing()}")
class NewLabBuildTest(unittest.TestCase):
    """The new lab configured by the top-level CMake (found by its folder) and built."""

    def test_configures_builds_and_passes_its_host_tests(self):
        with tempfile.TemporaryDirectory(prefix="cml-new-lab-build-") as tmp:
            root = Path(tmp)
            _copy_tree(root)
            make_lab(FOLDER, root=root)
            env = dict(os.environ)
            env["PATH"] = os.pathsep.join([os.path.dirname(find_tool("nvcc")), env["PATH"]])
            env.setdefault("CUDAARCHS", "75")  # one architecture: the build stays short
            build = root / "build"

            def run(*cmd: str, timeout: float = 300, check: bool = True) -> str:
                proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                                      timeout=timeout)
                if check:
                    self.assertEqual(proc.returncode, 0, f"{' '.join(cmd)}:\n"
                                     f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
                return proc.stdout

            run("cmake", "--preset", "default", "-B", str(build))
            run("cmake", "--build", str(build), "--target", f"{LAB}_tests_solution",
                f"{LAB}_tests_student", f"{LAB}_bench_solution", "-j2", timeout=600)
            listed = run("ctest", "--test-dir", str(build), "-N", "-L", "host")
            for name in (f"{LAB}.solution.host", f"{LAB}.student.host", f"{LAB}.skeleton.host",
                         "grader.skeleton_sync"):
                self.assertIn(name, listed)
            # The reference passes its host tests; the untouched skeleton fails every one
            # that needs the student's work, without crashing.
            run("ctest", "--test-dir", str(build), "--output-on-failure", "-R",
                rf"^({LAB}\.solution\.host|{LAB}\.skeleton\.host|grader\.skeleton_sync)$")
            # (Catch2 2.x exits with the number of cases listed.)
            cases = run(str(build / "labs" / FOLDER / f"{LAB}_tests_solution"), "--list-tests",
                        "[host]", check=False)
            self.assertIn("scale moves one float in and one out per element", cases)
            self.assertIn("2 matching test cases", cases)  # the public one and the hidden one


if __name__ == "__main__":
    unittest.main()
