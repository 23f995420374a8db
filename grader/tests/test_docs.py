"""Promises of the docs that can be checked: the README's quick start installs what `.ci/run`
installs or says what each extra package adds; Gradescope's setup.sh asks for the CMake the
presets need."""

from __future__ import annotations

import json
import re
import unittest

from grader.paths import ROOT


def apt_packages(text: str) -> list[str]:
    """The packages of the first `apt-get install` command in `text` (continued lines joined,
    options and redirections left out)."""
    text = text.replace("\\\n", " ")
    line = re.search(r"apt-get install ([^\n&|;]*)", text).group(1)
    return [w for w in line.split() if not w.startswith(("-", ">"))]


class QuickStartTest(unittest.TestCase):
    def test_the_readme_accounts_for_every_package_ci_installs(self):
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
        listed = set(apt_packages(quick))
        extras = set(re.findall(r"`([a-z0-9.+-]+)`", quick))
        ci = apt_packages((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
        self.assertTrue(ci)
        self.assertEqual([p for p in ci if p not in listed and p not in extras], [])
        self.assertEqual(sorted(listed - set(ci)), [])  # nothing the CI does not test

    def test_gradescope_setup_asks_for_the_presets_cmake(self):
        need = json.loads((ROOT / "CMakePresets.json").read_text())["cmakeMinimumRequired"]
        setup = (ROOT / "integrations" / "gradescope" / "setup.sh").read_text()
        self.assertIn(f"CMAKE_MIN={need['major']}.{need['minor']}", setup)
        self.assertNotRegex(setup, r"grader grade[^\n]*(\\\n[^\n]*)*\|\| true")


if __name__ == "__main__":
    unittest.main()
