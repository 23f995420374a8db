"""`grader ci`: the labs a pull request touches, the job summary and files, and one
pull-request comment kept up to date through a fake GitHub API on 127.0.0.1."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import subprocess
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from grader.commands import ci
from grader.paths import discover_labs
from grader.result import GradeResult, LabResult, PartResult, TestResult

LABS = ("02_coalescing", "04_tiled_matmul", "06_bank_conflicts")


class FakeGitHub:
    """Issue comments of one repository, in memory, behind the REST paths `ci` calls."""

    def __init__(self, token: str = "t0ken") -> None:
        self.comments: list[dict] = []
        self.requests: list[tuple[str, str]] = []
        self.token = token
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict:
                return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

            def _handle(self, method: str) -> None:
                fake.requests.append((method, self.path))
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    return self._send(401, {"message": "Bad credentials"})
                path = self.path.split("?")[0]
                if method == "GET" and path == "/repos/course/labs/issues/7/comments":
                    page = int(self.path.split("page=")[-1]) if "page=" in self.path else 1
                    return self._send(200, fake.comments[(page - 1) * 100:page * 100])
                if method == "POST" and path == "/repos/course/labs/issues/7/comments":
                    comment = {"id": 1000 + len(fake.comments), "body": self._body()["body"],
                               "html_url": f"https://example.invalid/c{len(fake.comments)}"}
                    fake.comments.append(comment)
                    return self._send(201, comment)
                if method == "PATCH" and path.startswith("/repos/course/labs/issues/comments/"):
                    cid = int(path.rsplit("/", 1)[1])
                    for comment in fake.comments:
                        if comment["id"] == cid:
                            comment["body"] = self._body()["body"]
                            return self._send(200, comment)
                return self._send(404, {"message": "Not Found"})

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PATCH(self):
                self._handle("PATCH")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeGitHub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@example.invalid", *args], check=True,
                          capture_output=True, text=True).stdout


def fake_grade(calls: list):
    def grade(submission: Path, labs, args) -> tuple[GradeResult, int]:
        calls.append((submission, [lab.folder for lab in labs]))
        result = GradeResult(str(submission), 5, "2025-01-01T00:00:00+00:00", "0.1.0", None, {})
        for lab in labs:
            lr = LabResult(lab.folder, lab.topic, 10.0, 100.0, [
                PartResult("correctness", "Model", "graded", 10.0, 10.0),
                PartResult("correctness", "Kernel", "not_graded", 0.0, 90.0,
                           "Not graded: no CUDA device.")],
                [TestResult("model case", "Model", "host", False, "passed", 10.0, 10.0)])
            result.labs.append(lr)
        result.points = 10.0 * len(labs)
        result.max_points = 100.0 * len(labs)
        return result, 0
    return grade


class CiTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-ci-test-"))
        self.repo = self.tmp / "repo"
        for folder in LABS:  # real rubrics and student files, three labs
            lab = next(lab for lab in discover_labs() if lab.folder == folder)
            dest = self.repo / "labs" / folder
            dest.mkdir(parents=True)
            shutil.copy(lab.lab_dir / "grading.toml", dest / "grading.toml")
            shutil.copy(lab.student_file, dest / lab.student_file.name)
        (self.repo / "README.md").write_text("labs\n")
        git(self.repo.parent, "init", "-q", "-b", "main", str(self.repo))
        git(self.repo, "add", ".")
        git(self.repo, "commit", "-qm", "base")
        git(self.repo, "checkout", "-qb", "pr")
        for folder in LABS[:2]:  # the pull request touches labs 02 and 04, and the README
            lab = next(lab for lab in discover_labs(self.repo) if lab.folder == folder)
            lab.student_file.write_text(lab.student_file.read_text() + "\n// my work\n")
        (self.repo / "README.md").write_text("labs, edited\n")
        git(self.repo, "commit", "-qam", "work on 02 and 04")
        self.summary = self.tmp / "summary.md"

    def tearDown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def event(self, head: str = "course/labs") -> Path:
        path = self.tmp / "event.json"
        path.write_text(json.dumps({
            "number": 7, "repository": {"full_name": "course/labs"},
            "pull_request": {"number": 7, "head": {"repo": {"full_name": head}},
                             "base": {"ref": "main", "sha": git(self.repo, "rev-parse",
                                                                "main").strip()}}}))
        return path

    def env(self, api: str, head: str = "course/labs", token: str = "t0ken") -> dict:
        return {"GITHUB_EVENT_PATH": str(self.event(head)), "GITHUB_EVENT_NAME": "pull_request",
                "GITHUB_BASE_REF": "main", "GITHUB_REPOSITORY": "course/labs",
                "GITHUB_TOKEN": token, "GITHUB_API_URL": api,
                "GITHUB_STEP_SUMMARY": str(self.summary)}

    def args(self, *extra: str) -> argparse.Namespace:
        parser = argparse.ArgumentParser()
        ci.add_parser(parser.add_subparsers())
        return parser.parse_args(["ci", "--out", str(self.tmp / "out"), "-q", *extra])

    def run_ci(self, env: dict, *extra: str, calls: list | None = None) -> int:
        calls = [] if calls is None else calls
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return ci.run(self.args(*extra), env=env, grade_fn=fake_grade(calls), root=self.repo)

    def test_touched_labs_from_the_diff(self):
        files, ref = ci.changed_files(self.repo, ["", "origin/main", "main"])
        self.assertEqual(ref, "main")
        self.assertEqual(sorted(files), ["README.md", "labs/02_coalescing/coalescing.cu",
                                         "labs/04_tiled_matmul/tiled_matmul.cu"])
        touched = ci.touched_labs(files, discover_labs(self.repo))
        self.assertEqual([lab.folder for lab in touched], list(LABS[:2]))
        self.assertEqual(ci.touched_labs(["README.md", "grader/x.py"],
                                         discover_labs(self.repo)), [])
        missing, why = ci.changed_files(self.repo, ["no-such-ref"])
        self.assertIsNone(missing)
        self.assertIn("fetch-depth: 0", why)

    def test_comment_created_once_then_updated(self):
        with FakeGitHub() as hub:
            calls: list = []
            self.assertEqual(self.run_ci(self.env(hub.url), calls=calls), 0)
            self.assertEqual(calls, [(self.repo.resolve(), list(LABS[:2]))])
            self.assertEqual(len(hub.comments), 1)
            first = hub.comments[0]["body"]
            self.assertTrue(first.startswith(ci.MARKER))
            self.assertIn("02_coalescing"[:2] + " coalescing", first)
            # a second push: the same comment is edited, not a new one added
            self.assertEqual(self.run_ci(self.env(hub.url), "--seed", "9", calls=calls), 0)
            self.assertEqual(len(hub.comments), 1)
            self.assertEqual([m for m, _ in hub.requests], ["GET", "POST", "GET", "PATCH"])
        out = self.tmp / "out"
        for name in ("result.json", "junit.xml", "summary.md", "report.html"):
            self.assertTrue((out / name).is_file(), name)
        summary = self.summary.read_text()
        self.assertEqual(summary.count("## CUDA Memory Labs"), 2)  # appended by each run
        self.assertIn("created comment", summary)
        self.assertIn("updated comment", summary)

    def test_marker_comment_found_among_many(self):
        with FakeGitHub() as hub:
            hub.comments = [{"id": i, "body": f"chatter {i}"} for i in range(150)]
            hub.comments.append({"id": 500, "body": f"{ci.MARKER}\nold"})
            self.assertEqual(self.run_ci(self.env(hub.url)), 0)
            self.assertEqual(len(hub.comments), 151)
            self.assertIn("Points", hub.comments[-1]["body"])

    def test_fork_posts_nothing(self):
        with FakeGitHub() as hub:
            self.assertEqual(self.run_ci(self.env(hub.url, head="student/labs")), 0)
            self.assertEqual(hub.requests, [])
        summary = self.summary.read_text()
        self.assertIn("fork student/labs", summary)
        self.assertIn("no comment was posted", summary)

    def test_failed_comment_does_not_fail_the_job(self):
        with FakeGitHub(token="other") as hub:
            self.assertEqual(self.run_ci(self.env(hub.url)), 0)
            self.assertEqual(hub.comments, [])
        self.assertIn("could not be posted: HTTP 401 Bad credentials", self.summary.read_text())
        # nothing listening at all
        self.assertEqual(self.run_ci(self.env("http://127.0.0.1:9")), 0)
        self.assertIn("could not be posted", self.summary.read_text())

    def test_no_comment_flag(self):
        with FakeGitHub() as hub:
            self.assertEqual(self.run_ci(self.env(hub.url), "--no-comment"), 0)
            self.assertEqual(hub.requests, [])
        # what the workflow's comment job posts: the body, and result.json (create it)
        out = self.tmp / "out"
        body = (out / "comment.md").read_text()
        self.assertEqual(body, ci.comment_body((out / "summary.md").read_text()))
        self.assertTrue(body.startswith(ci.MARKER))
        self.assertTrue((out / "result.json").is_file())
        self.assertIn("--no-comment", self.summary.read_text())

    def test_no_comment_flag_nothing_touched(self):
        git(self.repo, "checkout", "-q", "main")
        git(self.repo, "checkout", "-qb", "docs")
        (self.repo / "README.md").write_text("only docs\n")
        git(self.repo, "commit", "-qam", "docs")
        with FakeGitHub() as hub:
            self.assertEqual(self.run_ci(self.env(hub.url), "--no-comment"), 0)
            self.assertEqual(hub.requests, [])
        out = self.tmp / "out"  # no result.json: only update an earlier comment
        self.assertIn("nothing to grade", (out / "comment.md").read_text())
        self.assertFalse((out / "result.json").exists())

    def test_nothing_touched(self):
        git(self.repo, "checkout", "-q", "main")
        git(self.repo, "checkout", "-qb", "docs")
        (self.repo / "README.md").write_text("only docs\n")
        git(self.repo, "commit", "-qam", "docs")
        calls: list = []
        with FakeGitHub() as hub:
            self.assertEqual(self.run_ci(self.env(hub.url), calls=calls), 0)
            self.assertEqual(hub.comments, [])  # no new comment for a PR with no lab
            self.assertEqual([m for m, _ in hub.requests], ["GET"])
        self.assertEqual(calls, [])
        self.assertIn("nothing to grade", self.summary.read_text())

    def test_comment_cut_to_the_limit(self):
        body = ci.comment_body("<details>\n" + "line of text\n" * 10000, limit=5000)
        self.assertLessEqual(len(body), 5000)
        self.assertTrue(body.startswith(ci.MARKER))
        self.assertIn("</details>", body)
        self.assertIn("was cut", body)

    def test_read_event(self):
        pr = ci.read_event(self.env("x", head="student/labs"))
        self.assertEqual((pr.number, pr.repository, pr.is_fork), (7, "course/labs", True))
        pr = ci.read_event({"GITHUB_EVENT_NAME": "push", "GITHUB_REPOSITORY": "a/b"})
        self.assertIsNone(pr.number)
        self.assertFalse(pr.is_fork)

    def test_registered(self):
        from grader.__main__ import build_parser
        args = build_parser().parse_args(["ci", "--no-comment", "--base", "main",
                                          "--require-gpu", "--name", "x#1"])
        self.assertEqual((args.command, args.base, args.no_comment, args.require_gpu,
                          args.name), ("ci", "main", True, True, "x#1"))

    def test_no_runner_folder_and_what_was_graded(self):
        # The fake grade has no device: the headline says host parts only, the comment names
        # the submission, not the folder it was read from, and says what was not graded.
        with FakeGitHub() as hub:
            self.assertEqual(self.run_ci(self.env(hub.url), "--no-comment"), 0)
        body = (self.tmp / "out" / "comment.md").read_text()
        self.assertNotIn(str(self.tmp), body)
        self.assertIn("Submission `pull request #7`", body)
        first = body.splitlines()[1]
        self.assertTrue(first.endswith("points, not your grade, host parts only (no GPU: the GPU "
                                       "parts were not graded)"), first)
        # this test's repository has no solutions/: a student copy's feedback, not a grade
        self.assertIn("feedback from your own copy (no hidden tests, no reference)", first)
        self.assertIn("**What was graded:** lab(s) 02, 04 (the labs changed since", body)
        self.assertIn("**Not graded:** lab(s) 06 (not changed by this pull request); the GPU "
                      "parts (no GPU was usable", body)
        self.assertEqual(json.loads((self.tmp / "out" / "result.json").read_text())
                         ["submission"], "pull request #7")

    def test_the_course_grader_says_so(self):
        (self.repo / "solutions").mkdir()
        self.assertEqual(self.run_ci(self.env("http://127.0.0.1:9"), "--no-comment",
                                     "--labs", "04", "--because", "the labs it changes",
                                     "--name", "https://github.com/o/alice/pull/3 at 0123456789ab"),
                         0)
        body = (self.tmp / "out" / "comment.md").read_text()
        self.assertTrue(body.splitlines()[1].startswith("## CUDA Memory Labs: 10 / 100 points, "
                                                        "host parts only"))
        self.assertNotIn("own copy", body)
        self.assertIn("Submission `https://github.com/o/alice/pull/3 at 0123456789ab`", body)
        self.assertIn("lab(s) 04 (the labs it changes) by the course's grader, with its hidden "
                      "tests and reference solution", body)

    def test_require_gpu(self):
        calls: list = []
        env = self.env("http://127.0.0.1:9")
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()) as err:
            status = ci.run(self.args("--no-comment", "--require-gpu"), env=env,
                            grade_fn=fake_grade(calls), root=self.repo,
                            gpu_probe=lambda: ([], "nvidia-smi not found"))
        self.assertEqual((status, calls), (ci.NO_GPU, []))  # nothing graded, the job fails
        self.assertIn("no usable GPU (nvidia-smi not found)", err.getvalue())
        self.assertIn("nothing was graded", self.summary.read_text())
        self.assertFalse((self.tmp / "out" / "comment.md").exists())
        # a GPU seen before the grade but none in it (fake_grade has no device): still fails
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            status = ci.run(self.args("--no-comment", "--require-gpu"), env=env,
                            grade_fn=fake_grade(calls), root=self.repo,
                            gpu_probe=lambda: ([object()], ""))
        self.assertEqual((status, len(calls)), (ci.NO_GPU, 1))
        # without the flag the same grade is a success that says "host parts only"
        self.assertEqual(self.run_ci(env, "--no-comment"), 0)


if __name__ == "__main__":
    unittest.main()
