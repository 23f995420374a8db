"""Grading the students' pull requests from the course's own repository: the open pull
requests of the student repositories, listed with a read-only token; for each head commit not
graded yet, only the student files of the labs it changes, fetched by commit through the
contents API; and the comments, posted later by a job that runs nothing of the student's.

Nothing here runs or even unpacks student code: the files are written as bytes into a queue
folder, the grade is made by `grader ci` from the course's pristine checkout (which takes
only the rubrics' `student_files` from the queue, as `grade` does), and the comment job reads
which pull request each result belongs to from the queue, never from the grade's results.

The state ("which head commits were graded") is the comment itself: each comment the course
posts carries `<!-- cml-grader head=SHA -->`, and only comments written by the course's
commenter (`commenter`, a login) are believed. A pull request whose head is named there is
not graded again; a new push (a new head) is.

Standard library only: urllib against GitHub's REST API, behind a `Transport` that the tests
replace with a fake one.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..paths import discover_labs
from ..rubric import RubricError, load_rubric
from ..workspace import MAX_STUDENT_FILE, too_large

API_URL = "https://api.github.com"
MARKER = "<!-- cml-grader -->"  # the same as `grader ci`'s (a test keeps them equal)
HEAD_MARKER = "<!-- cml-grader head={sha} -->"
_HEAD_RE = re.compile(r"<!-- cml-grader head=([0-9a-f]{40}) -->")
_SHA = re.compile(r"^[0-9a-f]{40}$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
PAGE = 100
MAX_PAGES = 30  # 3000 items: GitHub lists at most 3000 files of a pull request
COMMENT_LIMIT = 65536  # GitHub's limit on a comment's body, in characters
QUEUE_FILE = "queue.json"
JOB_FILE = "job.json"

# (method, url, headers, body) -> (status, headers, body)
Transport = Callable[[str, str, dict[str, str], bytes | None],
                     tuple[int, dict[str, str], bytes]]


class ApiError(Exception):
    """A call to the API failed; `status` is the HTTP status (0: no answer)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def urllib_transport(timeout: float = 30) -> Transport:
    """The real transport: one HTTPS request with urllib."""
    def send(method: str, url: str, headers: dict[str, str],
             body: bytes | None) -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers or {}), err.read()
        except (urllib.error.URLError, OSError) as err:
            raise ApiError(0, f"{method} {url}: {err}") from err
    return send


class Api:
    """The few REST calls this needs, each through `transport`."""

    def __init__(self, token: str, api_url: str = API_URL,
                 transport: Transport | None = None) -> None:
        self.token = token
        self.api = api_url.rstrip("/")
        self.transport = transport or urllib_transport()

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        headers = {"Accept": "application/vnd.github+json", "User-Agent": "cml-grader",
                   "X-GitHub-Api-Version": "2022-11-28"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        status, _headers, raw = self.transport(method, f"{self.api}{path}", headers, data)
        text = raw.decode("utf-8", errors="replace")
        if status >= 400:
            try:
                message = json.loads(text or "{}").get("message", "")
            except (ValueError, AttributeError):
                message = ""
            raise ApiError(status, f"{method} {path}: HTTP {status} {message}".rstrip())
        try:
            return json.loads(text) if text.strip() else None
        except ValueError as err:
            raise ApiError(status, f"{method} {path}: not JSON ({err})") from err

    def pages(self, path: str) -> list[Any]:
        """Every item of a listing, PAGE at a time (at most MAX_PAGES pages)."""
        sep = "&" if "?" in path else "?"
        items: list[Any] = []
        for page in range(1, MAX_PAGES + 1):
            chunk = self.call("GET", f"{path}{sep}per_page={PAGE}&page={page}")
            if not isinstance(chunk, list):
                raise ApiError(200, f"GET {path}: not a list")
            items += chunk
            if len(chunk) < PAGE:
                break
        return items


# ------------------------------------------------------------------------------ the labs

@dataclass(frozen=True)
class Lab:
    """A lab of the course's checkout and the files a student submits for it."""

    folder: str
    student_files: tuple[str, ...]


def course_labs(root: Path) -> list[Lab]:
    """The labs of the course's checkout, their student files from its own rubrics."""
    labs = []
    for lab in discover_labs(root):
        try:
            files = tuple(load_rubric(lab).student_files)
        except (RubricError, OSError):
            continue
        labs.append(Lab(lab.folder, files))
    return labs


def touched(changed: Iterable[str], labs: list[Lab]) -> list[Lab]:
    """The labs one of whose student files, or anything under whose folder, changed (as
    `grader ci` decides from a diff); which labs get graded is all a pull request's list of
    files decides."""
    changed = list(changed)
    return [lab for lab in labs
            if any(f in lab.student_files or f.startswith(f"labs/{lab.folder}/")
                   for f in changed)]


# ------------------------------------------------------------------- the pull requests

@dataclass
class Pull:
    repo: str  # owner/name of the student repository
    number: int
    head_sha: str
    head_repo: str  # where the head commit lives (a fork's name for a fork's pull request)
    title: str = ""
    author: str = ""
    url: str = ""  # the pull request's page

    @property
    def key(self) -> str:
        """A folder name for this pull request's head: owner--name--N--sha12."""
        return f"{self.repo.replace('/', '--')}--{self.number}--{self.head_sha[:12]}"


def repositories(api: Api, org: str, prefix: str) -> list[str]:
    """The repositories of `org` whose name starts with `prefix` (GitHub Classroom names a
    student's repository ASSIGNMENT-LOGIN)."""
    found = api.pages(f"/orgs/{urllib.parse.quote(org)}/repos?type=all")
    return sorted(r["full_name"] for r in found
                  if isinstance(r, dict) and str(r.get("name", "")).startswith(prefix)
                  and not r.get("archived") and _REPO.match(str(r.get("full_name", ""))))


def open_pulls(api: Api, repo: str) -> list[Pull]:
    pulls = []
    for p in api.pages(f"/repos/{repo}/pulls?state=open"):
        head = p.get("head") or {}
        sha = str(head.get("sha", ""))
        if not _SHA.match(sha) or not isinstance(p.get("number"), int):
            continue
        pulls.append(Pull(repo, p["number"], sha,
                          str((head.get("repo") or {}).get("full_name", "")),
                          str(p.get("title", "")), str((p.get("user") or {}).get("login", "")),
                          str(p.get("html_url", ""))))
    return pulls


def changed_files(api: Api, pull: Pull) -> list[str]:
    return [str(f.get("filename", "")) for f in
            api.pages(f"/repos/{pull.repo}/pulls/{pull.number}/files")]


def graded_heads(api: Api, pull: Pull, commenter: str) -> set[str]:
    """The head commits the course's comment on this pull request says were graded: the
    markers of comments written by `commenter` (anyone else's are ignored)."""
    heads: set[str] = set()
    for c in api.pages(f"/repos/{pull.repo}/issues/{pull.number}/comments"):
        if str((c.get("user") or {}).get("login", "")) == commenter:
            heads.update(_HEAD_RE.findall(str(c.get("body", ""))))
    return heads


def fetch_file(api: Api, repo: str, path: str, sha: str) -> tuple[bytes | None, str]:
    """(content, "") or (None, why) for one file at commit `sha`. Only a regular file is
    taken: a symbolic link, a folder or a submodule at the path is refused, as `grade`
    refuses them in a folder."""
    quoted = urllib.parse.quote(path)
    try:
        doc = api.call("GET", f"/repos/{repo}/contents/{quoted}?ref={sha}")
    except ApiError as err:
        if err.status == 404:
            return None, f"{path} is not in the pull request's head commit"
        raise
    if not isinstance(doc, dict):
        return None, f"{path} is a folder in the pull request's head commit, not a file"
    kind = doc.get("type")
    if kind != "file":
        return None, (f"{path} is a {kind or 'thing'} in the pull request's head commit; "
                      "submit the file itself (links are never followed)")
    size = int(doc.get("size") or 0)
    if size > MAX_STUDENT_FILE:
        return None, too_large(path, size, "in the pull request's head commit")
    if doc.get("encoding") != "base64":
        return None, f"{path}: the API gave no content to read (encoding {doc.get('encoding')!r})"
    try:
        data = base64.b64decode(str(doc.get("content", "")), validate=False)
    except ValueError:
        return None, f"{path}: the API's content could not be decoded"
    if len(data) != size:
        return None, f"{path}: the API gave {len(data)} bytes of {size}"
    return data, ""


# ----------------------------------------------------------------------------- the queue

@dataclass
class Job:
    """One head commit to grade, as the fetching job found it."""

    repo: str
    number: int
    head_sha: str
    labs: list[str]  # lab folders
    key: str = ""
    problems: list[str] = field(default_factory=list)  # files refused, with the reason
    url: str = ""  # the pull request's page

    def label(self) -> str:
        """What the comment calls the submission: the pull request's address and commit, no
        folder of any machine."""
        where = self.url if self.url.startswith("https://") else f"pull request #{self.number}"
        return f"{where} at {self.head_sha[:12]}"

    def lab_numbers(self) -> str:
        return ",".join(folder[:2] for folder in self.labs)


@dataclass
class Plan:
    jobs: list[Job] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "repo#N: why"


def plan(api: Api, repos: list[str], labs: list[Lab], commenter: str,
         limit: int = 20) -> Plan:
    """The head commits to grade: open pull requests of `repos`, from the repository itself
    (a fork's commits are someone else's), whose head no comment of `commenter` names, that
    change a lab; at most `limit` (the rest wait for the next run)."""
    out = Plan()
    for repo in repos:
        if not _REPO.match(repo):
            out.skipped.append(f"{repo}: not an owner/name")
            continue
        for pull in open_pulls(api, repo):
            where = f"{repo}#{pull.number}"
            if pull.head_repo != repo:
                source = pull.head_repo or "a deleted fork"
                out.skipped.append(f"{where}: its commits are in {source}, not the student's "
                                   "repository")
                continue
            if pull.head_sha in graded_heads(api, pull, commenter):
                out.skipped.append(f"{where}: {pull.head_sha[:12]} was graded")
                continue
            chosen = touched(changed_files(api, pull), labs)
            if not chosen:
                out.skipped.append(f"{where}: changes no lab")
                continue
            if len(out.jobs) >= limit:
                out.skipped.append(f"{where}: left for the next run (at most {limit} a run)")
                continue
            out.jobs.append(Job(repo, pull.number, pull.head_sha,
                                [lab.folder for lab in chosen], pull.key, url=pull.url))
    return out


def fetch(api: Api, job: Job, labs: list[Lab], dest: Path) -> Job:
    """Writes the student files of the job's labs at its head commit under
    dest/submission/ (as bytes, nothing else) and dest/job.json."""
    submission = dest / "submission"
    if dest.exists():
        shutil.rmtree(dest)
    submission.mkdir(parents=True)
    wanted = [lab for lab in labs if lab.folder in job.labs]
    for lab in wanted:
        for rel in lab.student_files:
            data, why = fetch_file(api, job.repo, rel, job.head_sha)
            if data is None:
                job.problems.append(why)
                continue
            target = submission / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    (dest / JOB_FILE).write_text(json.dumps(asdict(job), indent=2) + "\n")
    return job


def write_queue(api: Api, found: Plan, labs: list[Lab], queue: Path) -> list[Job]:
    """Fetches every job of the plan into queue/<key>/ and writes queue/queue.json."""
    queue.mkdir(parents=True, exist_ok=True)
    jobs = [fetch(api, job, labs, queue / job.key) for job in found.jobs]
    (queue / QUEUE_FILE).write_text(json.dumps(
        {"jobs": [asdict(j) for j in jobs], "skipped": found.skipped}, indent=2) + "\n")
    return jobs


def read_queue(queue: Path) -> list[Job]:
    """The jobs of a queue folder (what the fetching job wrote)."""
    doc = json.loads((queue / QUEUE_FILE).read_text())
    jobs = []
    for item in doc.get("jobs", []):
        job = Job(str(item["repo"]), int(item["number"]), str(item["head_sha"]),
                  [str(lab) for lab in item["labs"]], str(item.get("key", "")),
                  [str(p) for p in item.get("problems", [])], str(item.get("url", "")))
        if (not _REPO.match(job.repo) or not _SHA.match(job.head_sha)
                or job.key != Pull(job.repo, job.number, job.head_sha, job.repo).key):
            raise ValueError(f"{queue / QUEUE_FILE}: a job that is not well formed: {item}")
        jobs.append(job)
    return jobs


# -------------------------------------------------------------------------- the comments

def comment_text(job: Job, body: str) -> str:
    """The comment: the grade's comment.md (it starts with MARKER), the files that were
    refused, and the head marker that says this commit was graded."""
    if not body.startswith(MARKER):
        body = f"{MARKER}\n{body}"
    notes = "".join(f"- {p}\n" for p in job.problems)
    if notes:
        notes = "\n**Files not taken from the pull request:**\n\n" + notes
    tail = f"{notes}\n{HEAD_MARKER.format(sha=job.head_sha)}\n"
    if len(body) + len(tail) > COMMENT_LIMIT:
        body = body[:COMMENT_LIMIT - len(tail) - 100] + "\n\n*(cut to fit a comment)*\n"
    return body.rstrip("\n") + "\n" + tail


def upsert_comment(api: Api, repo: str, number: int, body: str, commenter: str) -> str:
    """Edits the course's marked comment on the pull request, or creates one."""
    for c in api.pages(f"/repos/{repo}/issues/{number}/comments"):
        if (str((c.get("user") or {}).get("login", "")) == commenter
                and MARKER in str(c.get("body", ""))):
            api.call("PATCH", f"/repos/{repo}/issues/comments/{c['id']}", {"body": body})
            return f"updated comment {c['id']} on {repo}#{number}"
    api.call("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})
    return f"commented on {repo}#{number}"


def post_results(api: Api, queue: Path, results: Path, commenter: str) -> list[str]:
    """Posts each graded job's comment. Which pull request a result goes to comes from the
    queue (written by the job that fetched), never from the results (written by the job that
    ran student code); a result without result.json and comment.md is not posted (the
    commit is graded again next run)."""
    said = []
    for job in read_queue(queue):
        folder = results / job.key
        body_file, result_file = folder / "comment.md", folder / "result.json"
        if not (body_file.is_file() and result_file.is_file()):
            said.append(f"{job.label()}: no grade to post (graded again next run)")
            continue
        body = body_file.read_text(encoding="utf-8", errors="replace")
        try:
            said.append(upsert_comment(api, job.repo, job.number, comment_text(job, body),
                                       commenter))
        except ApiError as err:
            said.append(f"{job.label()}: not posted ({err})")
    return said


__all__ = ["Api", "ApiError", "Job", "Lab", "Plan", "Pull", "course_labs", "touched",
           "repositories", "open_pulls", "changed_files", "graded_heads", "fetch_file",
           "plan", "fetch", "write_queue", "read_queue", "comment_text", "upsert_comment",
           "post_results", "urllib_transport", "MARKER", "HEAD_MARKER"]
