"""The student copy's own README and workflows (grader/course/student_copy.py): every target, label,
path and command the README names exists in a real release and parses; the Classroom
workflow's steps and reporter agree; the build workflow's summary line reads ctest's output;
and, where CMake and nvcc are installed, `ctest --preset default -L lab04` finds the lab's
tests in the copy."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from grader.course import course_file, releases, student_copy
from grader.paths import ROOT
from grader.tests.test_release import NEEDS, repository_like_this_checkout
from grader.tools import find_catch2, find_tool


def sh_blocks(markdown: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", markdown, re.S)


@unittest.skipUnless((ROOT / student_copy.README_TEMPLATE).is_file(),
                     "the README's template is the course repository's (a student copy has none)")
class ReadmeGpuPathTest(unittest.TestCase):
    """The README names both ways to GPU feedback and the one the course file chose."""

    def render(self, course_text: str | None) -> str:
        class Files:  # the committed tree, as far as render_readme reads it
            def text(self, rel: str) -> str | None:
                if rel == str(course_file.COURSE_FILE):
                    return course_text
                path = ROOT / rel
                return path.read_text() if path.is_file() else None
        return student_copy.render_readme(Files(), ["01_warp_sizing", "04_tiled_matmul"])

    def test_each_choice_is_said(self):
        seen = set()
        for path, text in student_copy.GPU_PATH_TEXT.items():
            readme = self.render(f'[feedback]\ngpu_path = "{path}"\n')
            self.assertIn(f"**this copy is set up for {text}**", readme)
            for other, said in student_copy.GPU_PATH_TEXT.items():
                if other != path:
                    self.assertNotIn(said, readme)
            self.assertIn("python3 -m grader check 04 --slurm", readme)
            self.assertIn("Pull requests graded on the course's GPU runners", readme)
            seen.add(readme)
        self.assertEqual(len(seen), 3)
        self.assertIn(student_copy.GPU_PATH_TEXT["none"], self.render(None))
        self.assertEqual(set(student_copy.GPU_PATH_TEXT), set(course_file.GPU_PATHS))

    def test_without_a_gpu_path_the_readme_says_which_ways_apply(self):
        # Issue 36, item 7: not "set up for neither yet" and then four ways, none said to apply.
        readme = " ".join(self.render('[feedback]\ngpu_path = "none"\n').split())
        self.assertNotIn("neither yet", readme)
        said = readme[readme.index("this copy is set up for"):]
        ways = re.findall(r"^- \*\*(.+?)\*\*", self.render(None), re.M)
        self.assertEqual(len(ways), 4, ways)  # the template's order: cluster, PRs, then two
        self.assertIn("the first two ways below are not open to you", said)
        self.assertIn("only the last two can give you a score", said)
        self.assertTrue(ways[0].startswith("The course's Slurm cluster"), ways)
        self.assertTrue(ways[1].startswith("Pull requests graded"), ways)

    def test_the_limits_of_a_student_file_are_said(self):
        # Issue 36, item 12: the size limit a refusal names is in the student's README.
        from grader.workspace import MAX_STUDENT_FILE
        readme = " ".join(self.render(None).split())
        self.assertIn(f"at most {MAX_STUDENT_FILE // 2**20} MiB", readme)
        self.assertIn("NUL byte", readme)

    def test_a_bad_course_file_stops_the_release(self):
        with self.assertRaises(course_file.CourseError):
            self.render('[feedback]\ngpu_path = "cloud"\n')


@NEEDS
class StudentCopyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-student-"))
        cls.repo = repository_like_this_checkout(cls.tmp / "course")
        cls.out = cls.tmp / "copy"
        cls.made = releases.make_release(cls.out, root=cls.repo)
        cls.readme = (cls.out / "README.md").read_text()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_readme_is_the_students(self):
        self.assertIn("## GPU feedback without a GPU", self.readme)
        self.assertNotIn("solutions/", self.readme)
        self.assertNotIn("grader release", self.readme)
        self.assertNotIn("@", re.sub(r"\S+@\S+", "", self.readme).replace("`@", ""))
        for path in ("srun --gres=gpu:1", "python3 -m grader check", "Gradescope",
                     "PrairieLearn", "GitHub Classroom", "pull request",
                     "python3 -m grader check 04 --slurm", "grader/course.toml",
                     "this copy is set up for"):
            self.assertIn(path, self.readme)
        self.assertFalse((self.out / "docs" / "student").exists())

    def test_every_target_it_names_exists(self):
        targets = set(re.findall(r"\blab(\d\d)_(tests|bench|hidden)_(\w+)", self.readme))
        self.assertTrue(targets)
        for nn, kind, variant in targets:
            self.assertEqual(variant, "student", f"lab{nn}_{kind}_{variant}: not in the copy")
            self.assertNotEqual(kind, "hidden")
            folder = next(p for p in (self.out / "labs").iterdir() if p.name[:2] == nn)
            self.assertTrue(any((folder / kind).glob("*.c*")), f"{folder}/{kind}")

    def test_every_label_and_path_it_names_exists(self):
        for nn in re.findall(r"-L lab(\d\d)\b", self.readme):
            self.assertTrue(list((self.out / "labs").glob(f"{nn}_*/tests/*.c*")), nn)
        for rel in re.findall(r"(?<![\w/])((?:labs|handouts|\.github/workflows)/[\w./-]+)",
                              self.readme):
            rel = rel.rstrip(".")
            if "NN_topic" in rel:
                continue
            self.assertTrue((self.out / rel).exists(), rel)
        for rel in re.findall(r"build/labs/([\w]+)/(lab\d\d_\w+)", self.readme):
            self.assertTrue((self.out / "labs" / rel[0]).is_dir(), rel)

    def test_its_commands_parse(self):
        blocks = sh_blocks(self.readme)
        self.assertGreaterEqual(len(blocks), 4)
        for block in blocks:
            proc = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, block + proc.stderr)
        self.assertIn("SUDO=$(", blocks[0])  # works as root without sudo, and with it
        self.assertNotRegex(blocks[0], r"(?m)^sudo ")

    def test_its_cmake_minimum_is_the_presets(self):
        presets = json.loads((self.out / "CMakePresets.json").read_text())
        need = presets["cmakeMinimumRequired"]
        self.assertIn(f"it needs {need['major']}.{need['minor']}", self.readme)
        self.assertIn(f"CMake {need['major']}.{need['minor']} or newer", self.readme)
        # the presets use nothing their version does not have
        if "workflowPresets" in presets:
            self.assertGreaterEqual(presets["version"], 6)
        self.assertLessEqual({6: (3, 25), 5: (3, 24), 4: (3, 23), 3: (3, 21)}[
            presets["version"]], (need["major"], need["minor"]))

    def test_the_default_test_preset_runs_the_students_tests(self):
        presets = json.loads((self.out / "CMakePresets.json").read_text())
        default = next(p for p in presets["testPresets"] if p["name"] == "default")
        self.assertNotIn("student", json.dumps(default.get("filter", {})))
        course = json.loads((self.repo / "CMakePresets.json").read_text())
        default = next(p for p in course["testPresets"] if p["name"] == "default")
        self.assertIn("^student$", json.dumps(default["filter"]))

    def test_the_classroom_workflow(self):
        text = (self.out / ".github/workflows/classroom.yml").read_text()
        ids = re.findall(r"^\s+id: (\S+)$", text, re.M)
        self.assertTrue(ids)
        runners = re.search(r"runners: (\S+)", text).group(1).split(",")
        self.assertEqual(runners, ids)
        for step in ids:
            self.assertIn(f"{step.upper().replace('-', '_')}_RESULTS: "
                          f"\"${{{{ steps.{step}.outputs.result }}}}\"", text)
        self.assertIn("classroom-resources/autograding-command-grader@v1", text)
        self.assertIn("classroom-resources/autograding-grading-reporter@v1", text)
        self.assertIn("PRELIMINARY", text)
        self.assertIn("${GITHUB_SHA::12}", text)
        for folder, nn in re.findall(r"command: build/labs/(\w+)/lab(\d\d)_tests_student", text):
            self.assertEqual(folder[:2], nn)
            self.assertTrue((self.out / "labs" / folder / "tests").is_dir())
        # lab 04's host groups: the load model (10) and the tile chooser (5)
        scores = [int(s) for s in re.findall(
            r"lab04_tests_student '.*'\n\s+timeout: \d+\n\s+max-score: (\d+)", text)]
        self.assertEqual(sum(scores), 15)

    def test_the_build_workflow_reports_host_tests(self):
        text = (self.out / ".github/workflows/build.yml").read_text()
        self.assertIn("-L student -L host", text)
        self.assertIn("expected", text)
        script = re.search(r"sed -nE '([^']+)'", text).group(1)
        log = ("1/3 Test #4: lab04.student.host ...............***Failed    0.02 sec\n"
               "2/3 Test #9: lab05.student.host ...............   Passed    0.01 sec\n")
        proc = subprocess.run(["sed", "-nE", script], input=log, capture_output=True, text=True)
        self.assertEqual(proc.stdout, "| lab04 | Failed |\n| lab05 | Passed |\n")

    @unittest.skipIf(not (find_tool("cmake") and find_tool("nvcc") and find_catch2()[0]),
                     "configuring the copy needs cmake, nvcc and Catch2")
    def test_ctest_finds_one_labs_tests_with_the_preset(self):
        env = dict(os.environ)
        env["PATH"] = env.get("PATH", "") + os.pathsep + os.path.dirname(find_tool("nvcc"))
        cmd = ["cmake", "--preset", "default", "-DCML_LABS=04_tiled_matmul"]
        if not find_tool("ninja"):
            cmd += ["-G", "Unix Makefiles"]
        configure = subprocess.run(cmd, cwd=self.out, capture_output=True, text=True,
                                   timeout=600, env=env)
        self.assertEqual(configure.returncode, 0, configure.stdout[-2000:] + configure.stderr)
        for args in (["--preset", "default"], ["--test-dir", "build"]):
            listed = subprocess.run(["ctest", *args, "-N", "-L", "lab04"], cwd=self.out,
                                    capture_output=True, text=True, timeout=120)
            self.assertIn("lab04.student.host", listed.stdout, listed.stdout + listed.stderr)
            self.assertIn("lab04.student.gpu", listed.stdout)


class OverlayUnitTest(unittest.TestCase):
    def test_release_says_what_the_workflows_do_and_the_gpu_path(self):
        for path in course_file.GPU_PATHS:
            notes = " ".join(student_copy.workflow_notes(path))
            self.assertIn("no GPU runner and no secret", notes)
            self.assertIn("feedback from your own copy (no hidden tests, no reference)", notes)
            self.assertIn(f"GPU path: {'none' if path == 'none' else ''}", notes)
        self.assertIn("grade-student-prs.yml", " ".join(student_copy.workflow_notes(
            "pr-runners")))
        self.assertIn("--slurm", " ".join(student_copy.workflow_notes("slurm")))
        none = " ".join(student_copy.workflow_notes("none"))  # issue 36, item 7
        self.assertIn("no GPU feedback before the course grades", none)
        self.assertIn("not open to them", none)
        self.assertIn("release again", none)

    def test_student_presets_keep_the_rest(self):
        course = {"version": 6, "testPresets": [
            {"name": "default", "filter": {"exclude": {"label": "^student$"}}},
            {"name": "host", "filter": {"include": {"label": "^host$"},
                                        "exclude": {"label": "^student$"}}}]}
        out = json.loads(student_copy.student_presets(json.dumps(course)))
        self.assertNotIn("filter", out["testPresets"][0])
        self.assertEqual(out["testPresets"][1]["filter"], {"include": {"label": "^host$"}})


if __name__ == "__main__":
    unittest.main()
