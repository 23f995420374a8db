"""Promises of the docs that can be checked: the README's quick start installs exactly what
`.ci/run` installs and says what each package adds, and gives the student copy's measured
build time as the copy's README does; Gradescope's setup.sh asks for the CMake the presets
need."""

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


def quick_start() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]


class QuickStartTest(unittest.TestCase):
    def test_the_readme_installs_exactly_what_ci_installs(self):
        listed = apt_packages(quick_start())
        ci = apt_packages((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
        self.assertGreaterEqual(len(ci), 5)
        self.assertEqual(len(set(listed)), len(listed), "a package listed twice")
        self.assertEqual(sorted(listed), sorted(ci))

    def test_the_readme_says_what_each_package_adds(self):
        quick = quick_start()
        code_block = quick.index("```sh")
        said = set(re.findall(r"`([a-z0-9.+-]+)`", quick[quick.index("```", code_block + 5):]))
        self.assertEqual([p for p in apt_packages(quick) if p not in said], [])

    def test_the_readme_gives_the_student_copys_measured_build_time(self):
        from grader.course.student_copy import BUILD_TIME
        measured = re.search(r"\(measured: ([^)]*)\)", BUILD_TIME)
        self.assertIsNotNone(measured, BUILD_TIME)
        self.assertIn(measured.group(1), " ".join(quick_start().split()))
        self.assertRegex(" ".join(quick_start().split()), r"about \d+ minutes on 2 cores")

    def test_gradescope_setup_asks_for_the_presets_cmake(self):
        need = json.loads((ROOT / "CMakePresets.json").read_text())["cmakeMinimumRequired"]
        setup = (ROOT / "integrations" / "gradescope" / "setup.sh").read_text()
        self.assertIn(f"CMAKE_MIN={need['major']}.{need['minor']}", setup)
        self.assertNotRegex(setup, r"grader grade[^\n]*(\\\n[^\n]*)*\|\| true")



TEMPLATE = ROOT / "docs" / "student" / "README.md.in"  # the student copy's README


class SectionsNamedTest(unittest.TestCase):
    """A section a message or a handout sends the reader to exists in the tree it is read
    in: the course's (README.md) and the student copy's (its README's template)."""

    def test_the_no_gpu_hint_names_a_section_of_both_readmes(self):
        # Issue 36, item 13: the bench's hint named a section only the student copy had.
        bench = (ROOT / "common" / "src" / "bench.cpp").read_text(encoding="utf-8")
        joined = re.sub(r'"\s*\n\s*"', "", bench)  # C++'s adjacent string literals, one
        said = re.search(r"see README '([^']+)'", joined)
        self.assertIsNotNone(said, "the bench's no-GPU hint")
        handouts = {m for p in (ROOT / "handouts").glob("*.md")
                    for m in re.findall(r"see \*([^*]+)\* in the README",
                                        p.read_text(encoding="utf-8"))}
        self.assertTrue(handouts)
        for name in {said.group(1)} | handouts:
            for readme in (ROOT / "README.md", TEMPLATE) if TEMPLATE.is_file() else (
                    ROOT / "README.md",):  # a student copy: its README, made from it
                with self.subTest(section=name, readme=readme.name):
                    headings = [ln.lstrip("#").strip() for ln in
                                readme.read_text(encoding="utf-8").splitlines()
                                if ln.startswith("## ")]
                    self.assertIn(name, headings)

if __name__ == "__main__":
    unittest.main()
