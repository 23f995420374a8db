"""The grader on Python 3.10, the oldest it supports (Ubuntu 22.04's, Gradescope's default
base image): a representative part of the unit layer, a `grade --no-gpu` of lab 01's reference
and a Gradescope run of it (run_autograder with `python3` being 3.10), each with the
distribution's `tomli` on the path as Debian's and Ubuntu's python3-tomli installs it; and the
message where no TOML reader exists.

The interpreter is `python3.10` where that runs, else pyenv's (its versions/3.10.*); the tests
are skipped, with the reason, where there is none or no `tomli` for it. CTest runs this module
on its own (`grader.python310`), and no grader.unit entry runs it (test_suite_entries checks);
`CML_SKIP_PY310=1` skips it where a run discovers every module."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from grader.paths import ROOT

from . import needs
from .test_integrations import FILE, HOST_POINTS, LAB, RUN_AUTOGRADER, check_gradescope

# The unit tests run again on 3.10: the rubric and TOML reader, the scoring rules, every
# export, the student copy. The static checks run on 3.10 inside the grade below (they
# compile lab 01's reference and read its objects); their own module, which compiles dozens
# of files, is left to the 3.11 run: on 2 cores it would double the entry's time.
UNIT_MODULES = ("test_rubric", "test_scoring", "test_exports", "test_student_copy",
                "test_deadlines", "test_readers", "test_catch_spec", "test_html", "test_cli")
# Where Debian's and Ubuntu's python3-tomli puts the package (pure Python, any 3.x reads it).
DISTRIBUTION_TOMLI = Path("/usr/lib/python3/dist-packages/tomli")


def _runs_310(python: str) -> bool:
    try:
        proc = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=60)
    except OSError:
        return False
    return proc.returncode == 0 and proc.stdout.strip() == "(3, 10)"


def find_python310() -> str | None:
    """`python3.10` on the PATH when it runs (a pyenv shim may not), else pyenv's newest 3.10."""
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = [shutil.which("python3.10"), *sorted(
        glob.glob(os.path.join(pyenv, "versions", "3.10*", "bin", "python3.10")), reverse=True)]
    return next((c for c in candidates if c and _runs_310(c)), None)


PYTHON310 = find_python310()


def _has_tomli(python: str) -> bool:
    return subprocess.run([python, "-c", "import tomli"], capture_output=True,
                          timeout=60).returncode == 0


def _why_skip() -> str | None:
    if os.environ.get("CML_SKIP_PY310"):
        return "CML_SKIP_PY310 is set"
    if PYTHON310 is None:
        return "no Python 3.10 here (neither a working python3.10 nor pyenv's versions/3.10.*)"
    if not _has_tomli(PYTHON310) and not (DISTRIBUTION_TOMLI / "__init__.py").is_file():
        return ("Python 3.10 has no tomli and the distribution's python3-tomli is not "
                "installed (apt-get install python3-tomli)")
    return None


@unittest.skipIf(_why_skip(), f"not on Python 3.10: {_why_skip()}")
class Python310Test(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-py310-"))
        cls.tmp.chmod(0o755)  # the jailed student code (user nobody) passes through
        cls.work = cls.tmp / "work"
        # Only the tomli package goes on the path, not the whole folder of the system Python's
        # packages (some are compiled for its own version).
        path = []
        if not _has_tomli(PYTHON310):
            shutil.copytree(DISTRIBUTION_TOMLI, cls.tmp / "site" / "tomli")
            path.append(str(cls.tmp / "site"))
        # `python3` is 3.10 for the scripts that call it by that name (run_autograder).
        (cls.tmp / "bin").mkdir()
        (cls.tmp / "bin" / "python3").symlink_to(PYTHON310)
        cls.env = {**os.environ, "PYTHONPATH": os.pathsep.join(path),
                   "PATH": os.pathsep.join([str(cls.tmp / "bin"), os.environ.get("PATH", ""),
                                            "/usr/local/cuda/bin"]),
                   "PYTHONDONTWRITEBYTECODE": "1", "NO_COLOR": "1"}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run310(self, *args: str, timeout: float = 1500, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([PYTHON310, *args], cwd=ROOT, env=kw.get("env", self.env),
                              capture_output=True, text=True, timeout=timeout)

    def test_the_interpreter_is_310_and_reads_toml(self):
        proc = self.run310("-c", "import sys, grader.tomlreader as r; "
                           "print(sys.version_info[:2], r.tomllib.__name__)")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.split(), ["(3,", "10)", "tomli"])

    def test_unit_layer(self):
        proc = self.run310("-m", "unittest", *(f"grader.tests.{m}" for m in UNIT_MODULES))
        self.assertEqual(proc.returncode, 0, proc.stderr[-4000:])
        self.assertRegex(proc.stderr, r"Ran [1-9]\d* tests")

    @unittest.skipIf(needs.missing(solutions_of=LAB),
                     f"grading a lab needs these, missing here: "
                     f"{needs.missing(solutions_of=LAB)}")
    def test_grade_no_gpu_and_gradescope(self):
        # `grade --no-gpu` of lab 01's reference: the host groups earn all their points.
        sub = self.tmp / "submission"
        (sub / "labs" / LAB).mkdir(parents=True)
        shutil.copyfile(ROOT / "solutions" / LAB / FILE, sub / "labs" / LAB / FILE)
        out = self.tmp / "out"
        proc = self.run310("-m", "grader", "grade", str(sub), "--labs", LAB[:2], "--no-gpu",
                           "--out", str(out), "--work-dir", str(self.work), "-q")
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        result = json.loads((out / "result.json").read_text())
        self.assertEqual([lab["lab"] for lab in result["labs"]], [LAB])
        self.assertEqual(result["points"], HOST_POINTS)
        check_gradescope(self, json.loads((out / "gradescope" / "results.json").read_text()))

        # Gradescope's run_autograder, its `python3` being 3.10, on the same file uploaded flat.
        root = self.tmp / "autograder"
        (root / "submission").mkdir(parents=True)
        shutil.copyfile(ROOT / "solutions" / LAB / FILE, root / "submission" / FILE)
        proc = subprocess.run([str(RUN_AUTOGRADER)], env={
            **self.env, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_WORK_DIR": str(self.work)},
            capture_output=True, text=True, timeout=1500)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        doc = json.loads((root / "results" / "results.json").read_text())
        check_gradescope(self, doc)
        self.assertEqual(doc["score"], HOST_POINTS)

    def test_without_tomli_the_message_says_what_to_install(self):
        # -S: no site-packages, so no tomli wherever this Python keeps its own packages.
        env = {**self.env, "PYTHONPATH": ""}
        proc = self.run310("-S", "-m", "grader", "--help", env=env)
        self.assertEqual(proc.returncode, 1)
        self.assertNotIn("Traceback", proc.stderr)
        self.assertIn("apt-get install python3-tomli", proc.stderr)
        self.assertIn("has no TOML reader", proc.stderr)
        # the interpreter that ran it, and where it looked (issue 36, item 11)
        self.assertRegex(proc.stderr, r"^python3\.10 -m grader: Python 3\.10 \(/\S*python")
        self.assertIn(" -m pip install tomli", proc.stderr)
        self.assertIn("it looked for the module tomli in /", proc.stderr)


if __name__ == "__main__":
    unittest.main()
