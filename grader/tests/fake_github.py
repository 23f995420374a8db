"""A fake GitHub for the course's pull-request grading (grader/course/student_prs.py): the
REST paths it calls, answered from a local bare git repository that holds one student's
repository (its default branch `main`, and `refs/pull/N/head` for each open pull request).

`FakeGitHub` is a `student_prs.Transport` (the tests call it in-process); `serve` puts it
behind an HTTP server on 127.0.0.1, so that a separate process (`grader pr-queue` run by a
workflow's steps, with GITHUB_API_URL set to its address) reaches it too.
`StudentRepository` makes the student's repository from this checkout's labs.
test_student_prs and tools/pr_latency.py use them.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import shutil
import subprocess
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator

from grader.course import student_prs
from grader.paths import ROOT


def git(repo: Path, *args: str, data: bytes | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=s", "-c",
                           "user.email=s@example.invalid", *args], check=True, input=data,
                          capture_output=True).stdout.decode()


class FakeGitHub:
    """The REST paths student_prs calls, answered from a bare repository, for the student
    repository `repo` (OWNER/NAME) of organisation `org`, whose pull requests `student`
    opens. The read token may only GET; the comment token may only read and write issue
    comments, which it writes as `commenter`."""

    def __init__(self, bare: Path, org: str, repo: str, read_token: str, comment_token: str,
                 commenter: str, student: str = "alice") -> None:
        self.bare = bare
        self.org, self.repo, self.student = org, repo, student
        self.read_token, self.comment_token, self.commenter = read_token, comment_token, commenter
        self.forks: dict[int, str] = {}  # pull number -> the fork its head is in
        self.comments: dict[int, list[dict]] = {}
        self.requests: list[tuple[str, str, str]] = []  # (token, method, path)

    def pulls(self) -> list[int]:
        refs = git(self.bare, "for-each-ref", "--format=%(refname)", "refs/pull/")
        return sorted(int(r.split("/")[2]) for r in refs.split())

    def head(self, number: int) -> str:
        return git(self.bare, "rev-parse", f"refs/pull/{number}/head").strip()

    def __call__(self, method: str, url: str, headers: dict[str, str],
                 body: bytes | None) -> tuple[int, dict[str, str], bytes]:
        parts = urllib.parse.urlsplit(url)
        path, query = parts.path, urllib.parse.parse_qs(parts.query)
        token = headers.get("Authorization", "").removeprefix("Bearer ")
        self.requests.append((token, method, path))
        page = int(query.get("page", ["1"])[0])
        per = int(query.get("per_page", ["30"])[0])
        repo = self.repo

        def answer(status, doc):
            return status, {}, json.dumps(doc).encode()

        def listing(items):
            return answer(200, items[(page - 1) * per:page * per])

        comments_path = path.startswith(f"/repos/{repo}/issues/")
        if token not in (self.read_token, self.comment_token) or (
                token == self.read_token and method != "GET") or (
                token == self.comment_token and not comments_path):
            return answer(403, {"message": "Resource not accessible by token"})
        if path == f"/orgs/{self.org}/repos":
            return listing([{"name": repo.split("/")[1], "full_name": repo},
                            {"name": "website", "full_name": f"{self.org}/website"}])
        if path == f"/repos/{repo}/pulls":
            return listing([{"number": n, "title": f"pr {n}", "user": {"login": self.student},
                             "html_url": f"https://github.com/{repo}/pull/{n}",
                             "head": {"sha": self.head(n),
                                      "repo": {"full_name": self.forks.get(n, repo)}}}
                            for n in self.pulls()])
        if path.startswith(f"/repos/{repo}/pulls/") and path.endswith("/files"):
            n = int(path.split("/")[5])
            base = git(self.bare, "merge-base", "main", self.head(n)).strip()
            names = git(self.bare, "diff", "--name-only", base, self.head(n)).split()
            return listing([{"filename": name} for name in names])
        if path.startswith(f"/repos/{repo}/contents/"):
            rel = urllib.parse.unquote(path[len(f"/repos/{repo}/contents/"):])
            entry = git(self.bare, "ls-tree", query["ref"][0], "--", rel).split()
            if not entry:
                return answer(404, {"message": "Not Found"})
            mode, kind, oid = entry[:3]
            data = subprocess.run(["git", "-C", str(self.bare), "cat-file", "-p", oid],
                                  capture_output=True, check=True).stdout
            if kind == "tree":
                return answer(200, [{"type": "file", "name": "x"}])
            if mode == "120000":
                return answer(200, {"type": "symlink", "target": data.decode(), "size": 0})
            return answer(200, {"type": "file", "encoding": "base64", "size": len(data),
                                "content": base64.encodebytes(data).decode()})
        if comments_path:
            segments = path.split("/")
            now = datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="milliseconds")
            if segments[5] == "comments" and method == "PATCH":
                for thread in self.comments.values():
                    for c in thread:
                        if c["id"] == int(segments[6]):
                            c.update(body=json.loads(body or b"{}")["body"], updated_at=now)
                            return answer(200, c)
                return answer(404, {"message": "Not Found"})
            thread = self.comments.setdefault(int(segments[5]), [])
            if method == "GET":
                return listing(thread)
            login = self.commenter if token == self.comment_token else self.student
            made = {"id": 100 + sum(map(len, self.comments.values())),
                    "body": json.loads(body or b"{}")["body"], "user": {"login": login},
                    "created_at": now, "updated_at": now}
            thread.append(made)
            return answer(201, made)
        return answer(404, {"message": "Not Found"})


@contextlib.contextmanager
def serve(transport: student_prs.Transport) -> Iterator[str]:
    """`transport` behind an HTTP server on 127.0.0.1, in a thread, while the block runs;
    yields its address (for GITHUB_API_URL)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            status, _headers, data = transport(self.command, f"{url}{self.path}",
                                               dict(self.headers.items()), body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="fake-github", daemon=True)
    thread.start()
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class StudentRepository:
    """The student's repository as a work tree and the bare repository it pushes to: the
    course's files of the labs `folders` (as the student copy has them), then pull
    requests."""

    def __init__(self, tmp: Path, folders: tuple[str, ...]) -> None:
        self.work, self.bare = tmp / "work", tmp / "bare.git"
        for folder in folders:
            shutil.copytree(ROOT / "labs" / folder, self.work / "labs" / folder)
        for rel in ("CMakeLists.txt", "CMakePresets.json", "grader/scoring.py"):
            (self.work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / rel, self.work / rel)
        self.write(".github/workflows/build.yml", "on: push\njobs:\n  build:\n"
                   "    runs-on: ubuntu-latest\n    steps:\n      - run: cmake --preset default\n")
        git(tmp, "init", "-q", "-b", "main", str(self.work))
        git(tmp, "init", "-q", "--bare", str(self.bare))
        git(self.work, "remote", "add", "origin", str(self.bare))
        self.commit("the student copy", push="main")
        self.prs = 0

    def write(self, rel: str, text: str) -> None:
        path = self.work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def commit(self, message: str, push: str) -> str:
        git(self.work, "add", "-A")
        git(self.work, "commit", "-qm", message)
        git(self.work, "push", "-qf", "origin", f"HEAD:{push}")
        return git(self.work, "rev-parse", "HEAD").strip()

    def pull_request(self, name: str, edit: Callable[["StudentRepository"], object]) -> int:
        """A branch from main with `edit` applied, opened as the next pull request."""
        git(self.work, "checkout", "-qB", name, "main")
        edit(self)
        self.prs += 1
        self.commit(name, push=f"refs/pull/{self.prs}/head")
        git(self.work, "checkout", "-q", "main")
        return self.prs
