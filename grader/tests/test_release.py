"""The student copy: what goes in, what stays out (by path and by content), and that it
configures, builds and passes its own host tests with no solutions/ present."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from grader import release
from grader.paths import ROOT, discover_labs
from grader.tools import find_catch2, find_tool

HAVE_SOLUTIONS = (ROOT / "solutions").is_dir()


class RulesTest(unittest.TestCase):
    def test_what_goes_in_and_what_stays_out(self):
        inside = ["labs/04_tiled_matmul/tiled_matmul.cu", "labs/_template/topic.cu",
                  "handouts/figures/04_tiles.svg", "grader/tests/test_rubric.py",
                  ".github/workflows/grade.yml", "CMakePresets.json", "cmake/CmlLab.cmake",
                  "tools/gpu_check.sh", "docs/mainpage.md", "common/src/test_main.cpp"]
        outside = ["solutions/04_tiled_matmul/tiled_matmul.cu",
                   "solutions/04_tiled_matmul/tests/test_hidden.cpp",
                   "grader/tests/fixtures/lab04/recipes.json", "grader/tests/lab_fixtures.py",
                   "grader/tests/test_e2e_lab04.py", "grader/tests/test_fixtures.py",
                   ".github/CODEOWNERS", "notes/x.md",
                   "grader/__pycache__/x.pyc", "build/CMakeCache.txt"]
        for rel in inside:
            self.assertTrue(release.included(rel), rel)
        for rel in outside:
            self.assertFalse(release.included(rel), rel)

    @unittest.skipUnless(HAVE_SOLUTIONS, "no solutions/ here (a student copy)")
    def test_the_content_check_finds_a_solution_hidden_in_a_fixture(self):
        secret = release.solution_only_lines(ROOT)
        self.assertGreater(len(secret), 50)
        fixture = "grader/tests/fixtures/lab04/recipes.json"
        if (ROOT / fixture).is_file():
            self.assertTrue(release.find_leaks(ROOT, [fixture], secret))
        self.assertEqual(release.find_leaks(ROOT, ["labs/04_tiled_matmul/tiled_matmul.cu"],
                                            secret), [])


def _case_names(path: Path) -> set[str]:
    return set(re.findall(r'TEST_CASE\(\s*"([^"]+)"', path.read_text(errors="replace")))


@unittest.skipUnless(HAVE_SOLUTIONS and shutil.which("git"),
                     "needs solutions/ (not in a student copy) and git")
class ReleaseTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-release-"))
        cls.tmp.chmod(0o755)
        cls.out = cls.tmp / "copy"
        cls.made = release.make_release(cls.out)
        cls.files = sorted(str(p.relative_to(cls.out)) for p in cls.out.rglob("*")
                           if p.is_file() and ".git" not in p.relative_to(cls.out).parts)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_no_solution_or_hidden_test_by_path(self):
        self.assertEqual(sorted(self.made.files), self.files)
        for rel in self.files:
            self.assertFalse(rel.startswith("solutions"), rel)
            self.assertNotIn("hidden", Path(rel).name, rel)
            self.assertNotIn("fixtures", rel)
        for lab in discover_labs():
            self.assertIn(f"labs/{lab.folder}/{lab.topic}.cu", self.files)
            self.assertIn(f"labs/{lab.folder}/grading.toml", self.files)
        self.assertIn("labs/_template/CMakeLists.txt", self.files)

    def test_no_solution_or_hidden_test_by_content(self):
        secret = release.solution_only_lines(ROOT)
        hidden_names = set()
        for path in (ROOT / "solutions").rglob("*.c*"):
            if "tests" in path.parts:
                hidden_names |= _case_names(path)
        public_names = set()
        for path in (ROOT / "labs").rglob("*.c*"):
            public_names |= _case_names(path)
        hidden_names -= public_names
        self.assertTrue(hidden_names)
        for rel in self.files:
            try:
                text = (self.out / rel).read_text()
            except UnicodeDecodeError:
                continue
            leaked = [line for line in secret if line in text]
            self.assertEqual(leaked, [], rel)
            named = [n for n in hidden_names if f'"{n}"' in text]
            self.assertEqual(named, [], f"{rel} names hidden test cases")

    def test_skeletons_are_the_committed_ones(self):
        for lab in discover_labs():
            self.assertEqual((self.out / "labs" / lab.folder / f"{lab.topic}.cu").read_bytes(),
                             lab.student_file.read_bytes())

    def test_a_fresh_git_repository_with_one_clean_commit(self):
        log = subprocess.run(["git", "-C", str(self.out), "log", "--oneline"],
                             capture_output=True, text=True, check=True).stdout
        self.assertEqual(len(log.splitlines()), 1)
        status = subprocess.run(["git", "-C", str(self.out), "status", "--porcelain"],
                                capture_output=True, text=True, check=True).stdout
        self.assertEqual(status, "")
        tracked = subprocess.run(["git", "-C", str(self.out), "ls-files"], capture_output=True,
                                 text=True, check=True).stdout.split()
        self.assertEqual(sorted(tracked), self.files)

    def test_refuses_a_folder_that_is_not_empty(self):
        with self.assertRaises(release.ReleaseError):
            release.make_release(self.out)

    def test_the_copys_grader_tests_pass_without_solutions(self):
        proc = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s",
                               "grader/tests", "-t", "."], cwd=self.out, capture_output=True,
                              text=True, timeout=900, env=dict(os.environ, NO_COLOR="1"))
        if proc.returncode != 0:
            self.fail(proc.stderr[-3000:])

    @unittest.skipIf(not (find_tool("cmake") and find_tool("nvcc") and find_catch2()[0]),
                     "configuring the copy needs cmake, nvcc and Catch2")
    def test_the_copy_configures_builds_and_passes_its_host_tests(self):
        build = self.tmp / "build"
        env = dict(os.environ)
        nvcc = find_tool("nvcc")
        env["PATH"] = env.get("PATH", "") + os.pathsep + os.path.dirname(nvcc)
        cmd = ["cmake", "-S", str(self.out), "-B", str(build), "-DCML_LABS=04_tiled_matmul"]
        if find_tool("ninja"):
            cmd += ["-G", "Ninja"]
        configure = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        self.assertEqual(configure.returncode, 0, configure.stdout[-2000:] + configure.stderr)
        listed = subprocess.run(["ctest", "--test-dir", str(build), "-N"], capture_output=True,
                                text=True, timeout=120).stdout
        self.assertNotIn("solution", listed)
        self.assertNotIn("skeleton.", listed)
        built = subprocess.run(["cmake", "--build", str(build), "-j", str(os.cpu_count() or 2)],
                               capture_output=True, text=True, timeout=1200, env=env)
        self.assertEqual(built.returncode, 0, built.stdout[-3000:] + built.stderr[-2000:])
        # the default preset's selection (everything but `student`), without the two slow
        # ones checked elsewhere: the grader's unit tests (above) and Doxygen
        tests = subprocess.run(["ctest", "--test-dir", str(build), "-LE", "^student$", "-E",
                                "^(grader.unit|docs.build)$", "--output-on-failure",
                                "--no-tests=error"], capture_output=True, text=True,
                               timeout=600, env=env)
        self.assertEqual(tests.returncode, 0, tests.stdout[-3000:] + tests.stderr)


if __name__ == "__main__":
    unittest.main()
