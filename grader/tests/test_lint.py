"""The grader's and the tools' Python stays clean: pyflakes (Debian's pyflakes3) finds nothing
over grader/ and tools/ (unused imports and variables, names used before they exist, imports
that shadow each other), and no line carries a `noqa` comment, which no tool of the project
reads (pyflakes ignores them), so it would only hide a finding from the next reader."""

from __future__ import annotations

import re
import shutil
import subprocess
import unittest

from grader.paths import ROOT

FOLDERS = ("grader", "tools")
NOQA = re.compile(r"#\s*noqa\b", re.IGNORECASE)


class PyflakesTest(unittest.TestCase):
    @unittest.skipUnless(shutil.which("pyflakes3"), "pyflakes3 is not installed "
                         "(apt-get install pyflakes3)")
    def test_no_findings(self):
        proc = subprocess.run(["pyflakes3", *FOLDERS], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        self.assertEqual(proc.stdout + proc.stderr, "")
        self.assertEqual(proc.returncode, 0)


class NoqaTest(unittest.TestCase):
    def test_no_noqa_comments(self):
        found = []
        for folder in FOLDERS:
            for path in sorted((ROOT / folder).rglob("*.py")):
                for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                    if NOQA.search(line):
                        found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
        self.assertEqual(found, [])


if __name__ == "__main__":
    unittest.main()
