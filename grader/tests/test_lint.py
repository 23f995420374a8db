"""The project checks itself: mypy over the grader with mypy.ini finds nothing, pyflakes
(Debian's pyflakes3) finds nothing over grader/ and tools/ (unused imports and variables,
names used before they exist, imports that shadow each other), and the C++ and CUDA sources
match .clang-format (the students' files aside). Each is skipped, with the reason, where its
tool is not installed. No Python line carries a `noqa`
comment: no tool of the project reads one (pyflakes ignores them), so it would only hide a
finding from the next reader."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from grader.paths import ROOT, discover_labs
from grader.rubric import load_rubric

CXX_SUFFIXES = (".cu", ".cuh", ".cpp", ".hpp", ".h")
PYTHON_FOLDERS = ("grader", "tools")  # pyflakes' and the noqa check's
NOQA = re.compile(r"#\s*noqa\b", re.IGNORECASE)


def grader_modules() -> list[Path]:
    """The grader's Python files mypy.ini has checked: all but the tests'."""
    return [p for p in sorted((ROOT / "grader").rglob("*.py"))
            if p.relative_to(ROOT / "grader").parts[0] != "tests"]


def student_files() -> set[str]:
    """The files students edit (each rubric's student_files, and the template's topic.cu):
    their style is the student's."""
    out = {"labs/_template/topic.cu"}
    for lab in discover_labs():
        out.update(load_rubric(lab).student_files)
    return out


def cxx_sources() -> list[str]:
    """The project's C++ and CUDA files under common/, labs/ and solutions/ (where there is
    one), relative to the root."""
    found = []
    for top in ("common", "labs", "solutions"):
        found += [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / top).rglob("*"))
                  if p.suffix in CXX_SUFFIXES and p.is_file()]
    return found


class MypyTest(unittest.TestCase):
    @unittest.skipUnless(shutil.which("mypy"), "mypy is not installed (apt-get install mypy)")
    def test_the_grader_type_checks(self):
        with tempfile.TemporaryDirectory(prefix="cml-mypy-") as cache:
            proc = subprocess.run([shutil.which("mypy") or "mypy", "--config-file", "mypy.ini",
                                   "--cache-dir", cache], cwd=ROOT, capture_output=True,
                                  text=True, timeout=900)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        # Every module was read: a config that checked nothing would succeed as well.
        self.assertIn(f"no issues found in {len(grader_modules())} source files", proc.stdout)


class PyflakesTest(unittest.TestCase):
    @unittest.skipUnless(shutil.which("pyflakes3"), "pyflakes3 is not installed "
                         "(apt-get install pyflakes3)")
    def test_no_findings(self):
        proc = subprocess.run(["pyflakes3", *PYTHON_FOLDERS], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        self.assertEqual(proc.stdout + proc.stderr, "")
        self.assertEqual(proc.returncode, 0)

    def test_no_noqa_comments(self):
        found = []
        for folder in PYTHON_FOLDERS:
            for path in sorted((ROOT / folder).rglob("*.py")):
                for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                    if NOQA.search(line):
                        found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
        self.assertEqual(found, [])


@unittest.skipUnless(shutil.which("clang-format"),
                     "clang-format is not installed (apt-get install clang-format)")
class ClangFormatTest(unittest.TestCase):
    def setUp(self) -> None:
        self.clang_format = shutil.which("clang-format") or "clang-format"
        self.sources = cxx_sources()

    def test_the_sources_match_the_style(self):
        skip = student_files()
        checked = [f for f in self.sources if f not in skip]
        self.assertGreater(len(checked), 10)
        proc = subprocess.run([self.clang_format, "--dry-run", "--Werror", "--style=file",
                               *checked], cwd=ROOT, capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, "not in .clang-format's style (run `clang-format "
                         f"-i FILE`):\n{proc.stderr[-6000:]}")


if __name__ == "__main__":
    unittest.main()
