"""Every shipped workflow, read under GitHub's documented semantics for each trigger: no job
that runs code a pull request (or a student) controls holds a write token, a secret or a GPU
runner label. The course's workflows (.github/workflows/) and the student copy's (what
`grader release` writes: student_copy.overlay) are both read; a copy of the workflow that
graded pull requests on the GPU runner before (grader/tests/data/workflows/) must fail.

What GitHub does, per trigger (its "Events that trigger workflows", "Automatic token
authentication" and "Using secrets in GitHub Actions" pages), is the table TRIGGERS. Who
writes the file that runs decides who controls a job:

- in the course's repository, staff write the branches; a pull request's author does not,
  but under `pull_request` GitHub runs the merge commit's copy of the workflow file, which the
  pull request writes: every job of it is the pull request's, whatever the base's file says;
  under `pull_request_target` (and `workflow_run`) the base's file runs, and a job is the pull
  request's when it checks out the pull request's commits;
- in a student's repository the student writes every branch, the default one included:
  every job of every trigger runs what the student wrote. Its token writes only to the
  student's own repository, which the student can already write (a fork's pull request gets
  a read-only token): there the rule is no secret and no GPU runner, anywhere.

A job whose file a pull request writes can ask for anything its repository gives workflows:
so the repository's secrets must all sit in environments that only the default branch may
use (the guide sets them up so), referenced only from scheduled or dispatched workflows; and
a GPU runner label is asked for only by the one workflow the runner group admits
(ADMITTED, on its default branch), started only by the clock or by hand.
"""

from __future__ import annotations

import re
import unittest
from dataclasses import dataclass

from grader.paths import ROOT

try:
    import yaml
except ImportError:  # Debian: python3-yaml
    yaml = None

NO_YAML = "PyYAML is not installed (Debian: apt-get install python3-yaml)"
COURSE = (ROOT / "solutions").is_dir()  # a student copy has no solutions/
OLD = ROOT / "grader" / "tests" / "data" / "workflows" / "grade-pr-on-pull-request.yml"
ADMITTED = ".github/workflows/grade-student-prs.yml"  # the runner group's one workflow
GITHUB_HOSTED = re.compile(r"^(ubuntu|windows|macos)-[\w.-]+$")
SECRET = re.compile(r"\$\{\{[^}]*\bsecrets\.([A-Za-z_][A-Za-z0-9_]*)")
PR_REF = re.compile(r"pull_request\.head|head_ref|refs/pull/|merge_commit_sha|workflow_run\.head")
STUDENT_ARTIFACT = "student-prs"  # the queue of student files (grade-student-prs.yml)


@dataclass(frozen=True)
class Trigger:
    file: str  # whose copy of the workflow file GitHub runs
    pr_writes_file: bool  # the pull request's author writes that copy
    token: str  # the GITHUB_TOKEN it gets
    secrets: str  # the secrets it gets


TRIGGERS = {
    "pull_request": Trigger(
        "the merge commit's (refs/pull/N/merge)", True,
        "read-only for a fork's pull request; otherwise what the (pull request's) file asks",
        "none for a fork's pull request; the repository's for a same-repository one"),
    "pull_request_target": Trigger(
        "the base branch's", False, "write unless the file asks for less", "the repository's"),
    "push": Trigger("the pushed commit's", False, "what the file asks", "the repository's"),
    "schedule": Trigger("the default branch's", False, "what the file asks",
                        "the repository's"),
    "workflow_dispatch": Trigger("the chosen branch's (the default branch's)", False,
                                 "what the file asks", "the repository's"),
    "repository_dispatch": Trigger("the default branch's", False, "what the file asks",
                                   "the repository's"),
    "workflow_run": Trigger("the default branch's", False, "what the file asks",
                            "the repository's"),
}
CLOCK_OR_HAND = {"schedule", "workflow_dispatch"}


def triggers(doc: dict) -> list[str]:
    on = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
    if isinstance(on, str):
        return [on]
    return list(on or [])


def labels(job: dict) -> list[str]:
    runs_on = job.get("runs-on", [])
    if isinstance(runs_on, dict):
        return ([f"group:{runs_on['group']}"] if "group" in runs_on else []) + list(
            runs_on.get("labels", []))
    return [runs_on] if isinstance(runs_on, str) else list(runs_on)


def self_hosted(job: dict) -> list[str]:
    """The labels no GitHub-hosted runner has (self-hosted, gpu, a scale set's name)."""
    return [label for label in labels(job) if not GITHUB_HOSTED.match(str(label))]


def writes(doc: dict, job: dict) -> list[str]:
    """The token's write scopes ("the repository's default" when nothing says)."""
    perms = job.get("permissions", doc.get("permissions"))
    if perms is None:
        return ["the repository's default (write, in older repositories)"]
    if isinstance(perms, str):
        return ["write-all"] if perms == "write-all" else []
    return [f"{scope}: write" for scope, level in perms.items() if level == "write"]


def secrets(job: dict) -> list[str]:
    text = yaml.safe_dump(job)
    found = sorted(set(SECRET.findall(text)) - {"GITHUB_TOKEN"})
    return found + (["inherit"] if re.search(r"secrets:\s*inherit", text) else [])


def checks_out_pr(job: dict) -> bool:
    return any("actions/checkout" in str(s.get("uses", "")) and PR_REF.search(
        str((s.get("with") or {}).get("ref", ""))) for s in job.get("steps", []))


def takes_student_files(job: dict) -> bool:
    return any("download-artifact" in str(s.get("uses", ""))
               and (s.get("with") or {}).get("name") == STUDENT_ARTIFACT
               for s in job.get("steps", []))


def runs(job: dict) -> list[str]:
    return [str(s["run"]) for s in job.get("steps", []) if "run" in s]


def findings(files: dict[str, str], student_repository: bool) -> list[str]:
    """Every way a job of `files` (path -> text) gives what a pull request or a student
    controls a write token, a secret or a GPU runner, under TRIGGERS."""
    found = []
    for path, text in sorted(files.items()):
        doc = yaml.safe_load(text)
        events = triggers(doc)
        unknown = [e for e in events if e not in TRIGGERS]
        if unknown:
            found.append(f"{path}: trigger(s) {unknown} are not in the model")
            continue
        by_pr = [e for e in events if TRIGGERS[e].pr_writes_file]
        for name, job in (doc.get("jobs") or {}).items():
            where = f"{path}: job `{name}`"
            if student_repository:
                whose = ("the student writes every branch of their repository, so every "
                         f"trigger ({', '.join(events)}) runs a file the student wrote")
            elif by_pr:
                whose = (f"{by_pr[0]} runs {TRIGGERS[by_pr[0]].file} copy of this file, which "
                         "the pull request writes")
            elif checks_out_pr(job):
                whose = "it checks out the pull request's commits and runs them"
            else:
                whose = ""
            hosted = self_hosted(job)
            held = secrets(job)
            if whose:  # the job runs code a pull request (or the student) controls
                if hosted:
                    found.append(f"{where} runs code a pull request controls ({whose}) on the "
                                 f"runner label(s) {', '.join(map(str, hosted))}")
                if held:
                    found.append(f"{where} runs code a pull request controls ({whose}) "
                                 f"holding the secret(s) {', '.join(held)}")
                if not student_repository and writes(doc, job):
                    found.append(f"{where} runs code a pull request controls ({whose}) "
                                 f"with a write token ({', '.join(writes(doc, job))})")
                continue
            # A file the pull request does not write: what the repository gives must still
            # be out of reach of the files pull requests do write.
            if hosted and (path != ADMITTED or set(events) - CLOCK_OR_HAND):
                found.append(f"{where} asks for the runner label(s) "
                             f"{', '.join(map(str, hosted))}: the runner group admits only "
                             f"{ADMITTED} from the default branch, started by the clock or "
                             "by hand")
            if held and (not job.get("environment") or set(events) - CLOCK_OR_HAND):
                found.append(f"{where} reads the secret(s) {', '.join(held)} outside an "
                             "environment of a scheduled or dispatched workflow: a "
                             "repository secret, which a same-repository pull request's "
                             "edited workflow gets too")
            if takes_student_files(job):
                if held or writes(doc, job):
                    found.append(f"{where} takes the students' files and holds "
                                 f"{', '.join(held + writes(doc, job))}")
                strangers = [r for r in runs(job) if not r.startswith("python3 -m grader ")]
                if strangers:
                    found.append(f"{where} takes the students' files and runs more than the "
                                 f"grader (which jails their code): {strangers}")
            if held and (hosted or any(re.search(r"grader (ci|grade|check|pr-queue grade)\b",
                                                 r) for r in runs(job))):
                found.append(f"{where} holds {', '.join(held)} and runs students' code or "
                             "runs on a self-hosted runner")
    return found


def course_workflows() -> dict[str, str]:
    folder = ROOT / ".github" / "workflows"
    return {p.relative_to(ROOT).as_posix(): p.read_text() for p in sorted(folder.glob("*.yml"))}


def copy_workflows() -> dict[str, str]:
    """The workflows `grader release` puts in the student copy (in a student copy: its own)."""
    if not COURSE:
        return course_workflows()
    from grader.course import copy_files, head_tree, student_copy
    tree = head_tree.read_head()
    files = {rel: tree.text(rel) or "" for rel in tree.modes
             if rel.startswith(".github/") and copy_files.included(rel)}
    overlay = student_copy.overlay(tree, tree.labs())
    files.update({rel: data.decode() for rel, data in overlay.items()
                  if rel.startswith(".github/")})
    return files


@unittest.skipIf(yaml is None, NO_YAML)
class ShippedWorkflowsTest(unittest.TestCase):
    @unittest.skipUnless(COURSE, "the course's workflows are the course repository's")
    def test_the_course_workflows(self):
        files = course_workflows()
        self.assertIn(ADMITTED, files)
        self.assertEqual(findings(files, student_repository=False), [])
        doc = yaml.safe_load(files[ADMITTED])
        self.assertEqual(set(triggers(doc)), CLOCK_OR_HAND)
        self.assertEqual(doc["permissions"], {})
        jobs = doc["jobs"]
        # the GPU job holds no secret and may only read; the jobs with secrets are
        # GitHub-hosted and each in its environment
        self.assertEqual(self_hosted(jobs["grade"]), ["self-hosted", "linux", "gpu"])
        self.assertEqual((secrets(jobs["grade"]), jobs["grade"]["permissions"]),
                         ([], {"contents": "read"}))
        self.assertTrue(takes_student_files(jobs["grade"]))
        self.assertIn("--require-gpu", " ".join(runs(jobs["grade"])))
        for name, secret in (("fetch", "CML_READ_TOKEN"), ("comment", "CML_COMMENT_TOKEN")):
            self.assertEqual((secrets(jobs[name]), self_hosted(jobs[name])), ([secret], []))
            self.assertTrue(jobs[name]["environment"])
            self.assertFalse(takes_student_files(jobs[name]))
        self.assertIn(".github/workflows/grade-student-prs.yml@refs/heads/main",
                      (ROOT / "docs" / "platforms" / "github-gpu-runners.md").read_text())

    def test_the_student_copys_workflows(self):
        files = copy_workflows()
        self.assertEqual(sorted(files), [".github/workflows/build.yml",
                                         ".github/workflows/classroom.yml"])
        self.assertEqual(findings(files, student_repository=True), [])
        for path, text in files.items():
            for name, job in yaml.safe_load(text)["jobs"].items():
                self.assertEqual(self_hosted(job), [], f"{path}: {name}")

    def test_the_old_pull_request_workflow_fails(self):
        # grade-pr.yml as it was: pull_request, the grade job on [self-hosted, linux, gpu],
        # the comment job with pull-requests: write. In the course's repository and, as it
        # was shipped, in the student copy.
        old = {".github/workflows/grade-pr.yml": OLD.read_text()}
        found = findings(old, student_repository=False)
        self.assertEqual(found, [
            ".github/workflows/grade-pr.yml: job `grade` runs code a pull request controls "
            "(pull_request runs the merge commit's (refs/pull/N/merge) copy of this file, "
            "which the pull request writes) on the runner label(s) self-hosted, linux, gpu",
            ".github/workflows/grade-pr.yml: job `comment` runs code a pull request controls "
            "(pull_request runs the merge commit's (refs/pull/N/merge) copy of this file, "
            "which the pull request writes) with a write token (pull-requests: write)"])
        in_copy = findings(old, student_repository=True)
        self.assertEqual(len(in_copy), 1)
        self.assertIn("the student writes every branch", in_copy[0])
        self.assertIn("self-hosted, linux, gpu", in_copy[0])


@unittest.skipIf(yaml is None, NO_YAML)
class ModelTest(unittest.TestCase):
    """Each rule can fail: hostile or careless workflows."""

    def one(self, text: str, student: bool = False, path: str = ".github/workflows/x.yml"):
        return findings({path: text}, student)

    def test_pull_request_target_checking_out_the_head(self):
        found = self.one(
            "on: pull_request_target\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
            "    steps:\n      - uses: actions/checkout@v4\n        with:\n"
            "          ref: ${{ github.event.pull_request.head.sha }}\n"
            "      - run: make\n        env:\n          T: ${{ secrets.DEPLOY }}\n")
        self.assertEqual(len(found), 1)
        self.assertIn("checks out the pull request's commits", found[0])
        self.assertIn("DEPLOY", found[0])

    def test_a_repository_secret_in_a_push_workflow(self):
        found = self.one("on: push\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
                         "    steps:\n      - run: echo ${{ secrets.X }}\n")
        self.assertEqual(len(found), 1)
        self.assertIn("a same-repository pull request's edited workflow gets too", found[0])

    def test_a_gpu_label_anywhere_but_the_admitted_workflow(self):
        text = ("on:\n  schedule:\n    - cron: '0 * * * *'\npermissions: {}\njobs:\n  a:\n"
                "    runs-on: [self-hosted, gpu]\n    steps:\n      - run: true\n")
        self.assertIn("runner group admits only", self.one(text)[0])
        self.assertEqual(self.one(text, path=ADMITTED), [])
        self.assertIn("the student writes every branch", self.one(text, student=True)[0])

    def test_the_job_with_student_files_holds_nothing_and_runs_only_the_grader(self):
        text = ("on: workflow_dispatch\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
                "    permissions:\n      contents: write\n    steps:\n"
                "      - uses: actions/download-artifact@v4\n        with:\n"
                f"          name: {STUDENT_ARTIFACT}\n"
                "      - run: bash queue/*/submission/run.sh\n")
        found = self.one(text)
        self.assertEqual(len(found), 2, found)
        self.assertIn("holds contents: write", found[0])
        self.assertIn("runs more than the grader", found[1])

    def test_no_permissions_means_the_repositorys_default(self):
        found = self.one("on: pull_request\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
                         "    steps:\n      - run: true\n")
        self.assertIn("the repository's default", found[0])

    def test_every_trigger_of_the_shipped_files_is_modelled(self):
        for text in [*course_workflows().values(), *copy_workflows().values()]:
            for event in triggers(yaml.safe_load(text)):
                self.assertIn(event, TRIGGERS)


if __name__ == "__main__":
    unittest.main()
