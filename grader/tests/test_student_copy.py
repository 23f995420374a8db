"""The student copy's own README and workflows (grader/course/student_copy.py): every target, label,
path and command the README names exists in a real release and parses; the Classroom
workflow's steps and reporter agree; the build workflow's summary line reads ctest's output;
and, where CMake and nvcc are installed, `ctest --preset default -L lab04` finds the lab's
tests in the copy, and a fresh copy walked by its own README and handout (ReadmeWalkTest)
builds, runs its tests and checks a lab as they say."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from grader import gpu
from grader.course import course_file, releases, student_copy
from grader.paths import ROOT
from grader.tests import needs
from grader.tests.test_release import NEEDS, repository_like_this_checkout
from grader.tools import find_catch2, find_nlohmann_json, find_tool


def sh_blocks(markdown: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", markdown, re.S)


# What a document tells its reader to run: the lines of its ```sh blocks, and its code spans
# that start with a program a student runs (a span like `tiled_matmul.cuh` is no command).
PROGRAMS = re.compile(r"^(python3|cmake|ctest|build/\S+|ncu|compute-sanitizer|srun|sudo)\b")
ASSIGNMENT = re.compile(r"^(export\s+)?[A-Za-z_]\w*=")  # changes the shell, runs nothing
LEFT_OUT = {  # why the walk runs no such command
    "it installs software": re.compile(r"^sudo\b|\$SUDO\b|\b(apt-get|pip) .*\binstall\b"),
    "it needs the course's cluster": re.compile(r"^srun\b|--slurm\b"),
    "it is a GPU tool's step": re.compile(r"^(ncu|compute-sanitizer)\b"),
}


def doc_commands(markdown: str) -> list[str]:
    """The commands `markdown` gives, in its order: each line of a ```sh block (a line ending
    in a backslash joined to the next, comments left out) and each code span in the text
    whose first word is a program a student runs (PROGRAMS)."""
    out = []
    for lang, block, span in re.findall(r"```(\w*)\n(.*?)```|`([^`\n]+)`", markdown, re.S):
        if span and PROGRAMS.match(span):
            out.append(span.strip())
        elif lang == "sh":
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" #")[0].strip()
                if line and not line.startswith("#"):
                    out.append(" ".join(line.split()))
    return out


def labs_named(command: str) -> set[str]:
    """The lab numbers a command names: `lab04`, `lab04_bench_student`,
    `labs/04_tiled_matmul`, `check 04 01`."""
    found = set(re.findall(r"\blab(\d\d)(?!\d)|(?<![\w.])(\d\d)_[a-z]", command))
    named = {a or b for a, b in found}
    check = re.search(r"\bgrader check((?: \d\d\b)+)", command)
    return named | set(check.group(1).split() if check else ())


def ctest_statuses(output: str) -> dict[str, str]:
    """Test name -> CTest's word for how it ended ("Passed", "Failed", "Skipped", "Not Run",
    "Exception: SegFault"...), read from ctest's progress lines."""
    return dict(re.findall(r"Test +#\d+: (\S+) \.*\s*(?:\*\*\*)?(\S.*?)\s+[\d.]+ sec",
                           output))


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

    @unittest.skipIf(not (find_tool("cmake") and find_tool("nvcc") and find_catch2()[0]
                          and find_nlohmann_json()[0]),
                     "configuring the copy needs cmake, nvcc, Catch2 and nlohmann-json")
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


@NEEDS
class ReadmeWalkTest(unittest.TestCase):
    """A fresh copy walked as a student would on this machine: each command its README and the
    handout of the README's example lab give (doc_commands: read from them, so the walk
    follows what they say) is run in the copy, in their order, with one lab built, and ends as
    the README says. Builds and grader commands exit 0, with no traceback and no "grader
    problem"; the tests of the lab run (none missing, none crashed), the student's fail only
    where the README says they fail until the lab is done, and without a GPU the GPU tests are
    skipped, never passed; `check` prints its table, with the tests that need a GPU said so;
    a bench without a GPU exits with the status the README gives and names a section of it.
    Left out, each with its reason: installs, what needs a GPU or the course's cluster, and
    other labs than the one walked. The copy's grader suite, which its `cmake --workflow`
    also runs, is test_release.ReleaseTest's."""

    @classmethod
    def setUpClass(cls):
        missing = needs.missing(("cmake", "ctest", "ninja", "nvcc", "g++"))
        if missing:
            raise unittest.SkipTest(f"walking a copy's README needs {missing}")
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-walk-"))
        cls.tmp.chmod(0o755)  # a home folder's mode: as root, check runs code as nobody
        try:
            cls.walk_the_copy()
        except BaseException:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def walk_the_copy(cls) -> None:
        cls.out = cls.tmp / "copy"
        releases.make_release(cls.out, root=repository_like_this_checkout(cls.tmp / "course"))
        cls.readme = (cls.out / "README.md").read_text(encoding="utf-8")
        # the lab the README's commands take as their example, and its handout
        labs = set().union(*map(labs_named, sh_blocks(cls.readme)))
        if len(labs) != 1:
            raise AssertionError(f"the README's commands name labs {sorted(labs)}, not one")
        cls.nn = labs.pop()
        cls.handout = next((cls.out / "handouts").glob(f"{cls.nn}_*.md"))
        cls.folder = cls.handout.stem
        cls.no_gpu = not gpu.visible_devices()
        # a machine as the README's quick start asks for: nvcc where it says to look
        cls.env = dict(os.environ, NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
        cls.env["PATH"] += os.pathsep + os.path.dirname(find_tool("nvcc") or "")
        if needs.shared_cache() is None:  # not the user's reference cache
            cls.env["XDG_CACHE_HOME"] = str(cls.tmp / "cache")
        cls.ran: list[tuple[str, str, int, str]] = []  # (kind, command, status, output)
        cls.left_out: list[tuple[str, str]] = []  # (command, why)
        for doc in (cls.readme, cls.handout.read_text(encoding="utf-8")):
            for command in doc_commands(doc):
                cls.walk(command)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def walk(cls, command: str) -> None:
        """Run `command` as the student would, or note why it is left out."""
        words = command.split()
        why = next((why for why, pattern in LEFT_OUT.items() if pattern.search(command)),
                   "it is another lab's" if labs_named(command) - {cls.nn} else "")
        if why:
            cls.left_out.append((command, why))
        elif ASSIGNMENT.match(command):
            shown = subprocess.run(["bash", "-c", f"{command} && env -0"], env=cls.env,
                                   capture_output=True, text=True, check=True).stdout
            cls.env = dict(v.split("=", 1) for v in shown.split("\0") if "=" in v)
        elif words[:2] == ["cmake", "--workflow"]:  # its steps, from the presets it names
            presets = json.loads((cls.out / "CMakePresets.json").read_text())
            name = words[words.index("--preset") + 1]
            flow = next(p for p in presets["workflowPresets"] if p["name"] == name)
            for step in flow["steps"]:
                cls.walk({"configure": "cmake --preset", "build": "cmake --build --preset",
                          "test": "ctest --preset"}[step["type"]] + f" {step['name']}")
        elif words[:2] == ["cmake", "--preset"]:
            # one lab: the option the README names for building fewer labs
            option = re.search(r"fewer labs\s+with\s+`(-D\w+=)", cls.readme)
            if not option:
                raise AssertionError("the README names no option that builds fewer labs")
            cls.execute("configure", command, f"{option.group(1)}{cls.folder}")
        elif words[0] == "ctest":
            cls.execute("ctest", command, "" if "-L lab" in command else f"-L lab{cls.nn}")
        else:
            kind = ("build" if words[:2] == ["cmake", "--build"] else
                    "grader" if words[:3] == ["python3", "-m", "grader"] else
                    "bench" if re.match(r"build/\S+_bench_", command) else
                    "tests" if re.match(r"build/\S+_tests_", command) else "")
            if not kind:
                raise AssertionError(f"the walk does not know what `{command}` should do")
            cls.execute(kind, command)

    @classmethod
    def execute(cls, kind: str, command: str, narrowed: str = "") -> None:
        """Run `command` (with `narrowed`, the words that keep it to one lab) in the copy,
        once: a command the documents give twice runs the first time only."""
        shown = f"{command} {narrowed}".strip()
        if any(shown == c for _, c, _, _ in cls.ran):
            return
        proc = subprocess.run(["bash", "-c", shown], cwd=cls.out, env=cls.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=900)
        cls.ran.append((kind, shown, proc.returncode, proc.stdout))

    def commands(self, kind: str) -> list[tuple[str, int, str]]:
        return [(c, status, out) for k, c, status, out in self.ran if k == kind]

    def test_it_walks_the_lab_from_build_to_check(self):
        kinds = {kind for kind, _, _, _ in self.ran}
        self.assertLessEqual({"configure", "build", "ctest", "tests", "grader"}, kinds,
                             self.ran)
        self.assertTrue(any(re.match(r"python3 -m grader check \d\d$", c)
                            for c, _, _ in self.commands("grader")), self.ran)

    def test_builds_and_grader_commands_end_well(self):
        for kind in ("configure", "build", "grader"):
            for command, status, output in self.commands(kind):
                with self.subTest(command=command):
                    self.assertEqual(status, 0, output[-3000:])
                    self.assertNotIn("Traceback", output)
                    self.assertNotIn("grader problem", output)

    def test_the_tests_run_and_fail_only_as_the_readme_says(self):
        said = " ".join(self.readme.split())
        skeleton_fails = "Your tests fail until you have done the lab's work" in said
        for command, status, output in self.commands("ctest"):
            with self.subTest(command=command):
                statuses = ctest_statuses(output)
                self.assertTrue(statuses, output[-3000:])
                for name, how in statuses.items():
                    allowed = {"Passed", "Skipped"} | (
                        {"Failed"} if skeleton_fails and ".student." in name else set())
                    if self.no_gpu and ".gpu" in name:
                        allowed -= {"Passed"}
                    self.assertIn(how, allowed, f"{name}: {how}\n{output[-3000:]}")
                self.assertIn(status, (0, 8) if skeleton_fails else (0,), output[-3000:])
        for command, status, output in self.commands("tests"):  # a test executable itself
            with self.subTest(command=command):
                self.assertGreaterEqual(status, 0, output[-3000:])  # not killed by a signal
                self.assertTrue(status == 0 or skeleton_fails, output[-3000:])
                self.assertRegex(output, r"All tests passed|test cases:")

    def test_check_prints_its_table(self):
        checks = [(c, out) for c, _, out in self.commands("grader") if " check " in c]
        self.assertTrue(checks)
        for command, output in checks:
            with self.subTest(command=command):
                self.assertIn(f"Grade for {self.out.name} (seed", output)
                self.assertRegex(output, rf"(?m)^{self.nn} .+ pts")
                if self.no_gpu:
                    self.assertIn("no CUDA device", output)
                    self.assertRegex(output, r"\d+ passed.*, \d+ need a GPU")

    def test_a_bench_without_a_gpu_says_so(self):
        said = re.search(r"a bench says so and exits with status (\d+)",
                         " ".join(self.readme.split()))
        self.assertIsNotNone(said, "the README says how a bench ends without a GPU")
        benches = self.commands("bench")
        self.assertTrue(benches)
        headings = {ln.lstrip("#").strip() for ln in self.readme.splitlines()
                    if ln.startswith("#")}
        for command, status, output in benches:
            with self.subTest(command=command):
                if not self.no_gpu:
                    self.assertEqual(status, 0, output[-3000:])
                    continue
                self.assertEqual(status, int(said.group(1)), output[-3000:])
                section = re.search(r"see README '([^']+)'", output)
                self.assertIsNotNone(section, output)
                self.assertIn(section.group(1), headings)


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
