"""`ci`: grades the labs a pull request touches, inside a GitHub Actions job.

What it reads from the job's environment (all optional outside Actions):

    GITHUB_EVENT_PATH     the event's JSON (pull_request: number, head and base repositories)
    GITHUB_EVENT_NAME     "pull_request" (anything else: graded, but no comment)
    GITHUB_BASE_REF       the pull request's base branch (for the diff)
    GITHUB_REPOSITORY     owner/name, where the comment goes
    GITHUB_TOKEN          the job's token (needs pull-requests: write to comment)
    GITHUB_API_URL        https://api.github.com, or a GitHub Enterprise server's
    GITHUB_STEP_SUMMARY   the file the job summary is appended to

The labs touched are those whose student files (grading.toml `student_files`) or folders
(labs/NN_topic/, solutions/NN_topic/) changed between the merge base of the base ref and
HEAD. They are graded like `grade` grades a submission: this checkout provides everything
but the student files, which come from --submission (default: this checkout). The result
goes to --out (result.json, junit.xml, summary.md, report.html, and comment.md: the
comment's body), the Markdown to the job summary, and into ONE pull-request comment that is
found by a hidden marker and updated on every push. A fork's pull request gets a read-only
token, so nothing is posted for it and the summary says so. A comment that cannot be posted
never fails the job. With --no-comment nothing is posted: a later job without the student's
code can post comment.md (create it when result.json exists, else only update it).

The summary names the submission by --name (default: the pull request's number, else the
folder's name), never by a folder of the runner, and says what was graded and what was not:
the labs, the GPU parts, and whose grader (the course's, with its hidden tests and
reference, or a student copy's, without them: then it is feedback, not the grade). Without a
GPU its headline says "host parts only"; with --require-gpu that fails the job instead.

Exit status: 0 when grading completed (whatever the score) or no lab was touched; 1 when
the grader could not grade (see `grade`); 3 with --require-gpu when no GPU was usable
(nothing is graded, or what was graded without one is written but the job fails); 130 when
interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ..exports import write_exports
from ..paths import ROOT, LabPaths, discover_labs
from ..result import GradeResult
from ..rubric import RubricError, load_rubric
from ..tools import Gpu, query_gpus
from ._common import (GradingFlags, Subcommands, add_grading_flags, grade_submission,
                      labs_or_say, table, write_result)

HELP = "grade the labs a pull request touches (GitHub Actions): summary, artifacts, comment"
MARKER = "<!-- cml-grader -->"
FORMATS = ["junit", "markdown", "html"]
COMMENT_LIMIT = 65536  # GitHub's limit on a comment's body, in characters
SUMMARY_LIMIT = 1_000_000  # a step summary may hold 1 MiB
NO_GPU = 3  # the exit status of --require-gpu without a usable GPU

GradeFn = Callable[[Path, list[LabPaths], argparse.Namespace], tuple[GradeResult, int]]


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("ci", help=HELP, description=HELP)
    p.add_argument("--out", type=Path, default=Path("ci-results"),
                   help="where result.json, junit.xml, summary.md and report.html go "
                        "(default: ci-results)")
    p.add_argument("--base", default=None,
                   help="the ref to diff against (default: the pull request's base commit, "
                        "else origin/$GITHUB_BASE_REF)")
    p.add_argument("--labs", default="",
                   help="grade these labs (comma-separated numbers) instead of the touched ones")
    p.add_argument("--submission", type=Path, default=None,
                   help="the pull request's checkout, when the grader runs from a separate "
                        "checkout of the base branch (default: this checkout)")
    p.add_argument("--no-comment", action="store_true",
                   help="write the summary and files only; post nothing")
    p.add_argument("--require-gpu", action="store_true",
                   help="fail (exit status 3) when no GPU is usable, instead of grading the "
                        "host parts only: for a runner that is meant to have one")
    p.add_argument("--name", default="",
                   help="the submission's name in the summary and result.json (default: the "
                        "pull request's number, else the submission folder's name)")
    p.add_argument("--because", default="",
                   help="with --labs: why these labs, as the summary says it (default: "
                        "\"the labs asked for\")")
    add_grading_flags(p, "seed of tests and bench", "grade without the GPU parts",
                      show_timeouts=False)
    p.add_argument("--work-dir", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    return p


@dataclass
class PullRequest:
    """What the event says about the pull request (number None: not a pull request)."""

    event_name: str
    repository: str
    number: int | None
    head_repository: str
    base_sha: str | None
    base_ref: str | None

    @property
    def is_fork(self) -> bool:
        return bool(self.number and self.head_repository
                    and self.head_repository != self.repository)


def read_event(env: Mapping[str, str]) -> PullRequest:
    event: dict[str, Any] = {}
    path = env.get("GITHUB_EVENT_PATH")
    if path:
        try:
            event = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            event = {}
    pr: dict[str, Any] = (event["pull_request"] if isinstance(event.get("pull_request"), dict)
                          else {})
    repository = (event.get("repository") or {}).get("full_name") or env.get(
        "GITHUB_REPOSITORY") or ""
    head = ((pr.get("head") or {}).get("repo") or {}).get("full_name") or ""
    base = pr.get("base") or {}
    number: Any = pr.get("number") or event.get("number")
    return PullRequest(env.get("GITHUB_EVENT_NAME", ""), repository,
                       int(number) if isinstance(number, int) or str(number).isdigit() else None,
                       head, base.get("sha"), env.get("GITHUB_BASE_REF") or base.get("ref"))


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          timeout=120, check=False)


def changed_files(repo: Path, bases: list[str]) -> tuple[list[str] | None, str]:
    """Files changed between the merge base of the first resolvable ref in `bases` and
    HEAD; (None, why) when no ref resolves or git fails."""
    for ref in bases:
        if not ref or _git(repo, "rev-parse", "--verify", "--quiet",
                           f"{ref}^{{commit}}").returncode != 0:
            continue
        merge_base = _git(repo, "merge-base", ref, "HEAD")
        if merge_base.returncode != 0:
            return None, f"no merge base of {ref} and HEAD ({merge_base.stderr.strip()})"
        diff = _git(repo, "diff", "--name-only", merge_base.stdout.strip(), "HEAD")
        if diff.returncode != 0:
            return None, f"git diff failed: {diff.stderr.strip()}"
        return [line for line in diff.stdout.splitlines() if line], ref
    tried = ", ".join(r for r in bases if r) or "none given"
    return None, (f"none of the base refs could be found ({tried}); check out with "
                  "fetch-depth: 0 or pass --base")


def touched_labs(files: list[str], labs: list[LabPaths]) -> list[LabPaths]:
    """Labs one of whose student files or folders is among `files`."""
    touched = []
    for lab in labs:
        try:
            watched = set(load_rubric(lab).student_files)
        except (RubricError, OSError):
            watched = set()
        prefixes = (f"labs/{lab.folder}/", f"solutions/{lab.folder}/")
        if any(f in watched or f.startswith(prefixes) for f in files):
            touched.append(lab)
    return touched


def _grade(submission: Path, labs: list[LabPaths], args: argparse.Namespace) -> tuple[
        GradeResult, int]:
    return grade_submission(submission, labs, GradingFlags.of(args), args.work_dir, args.quiet)


# ---------------------------------------------------------------- the pull-request comment

class GitHub:
    """The few REST calls the comment needs, with urllib."""

    def __init__(self, api_url: str, repository: str, token: str, timeout: float = 30) -> None:
        self.api = api_url.rstrip("/")
        self.repository = repository
        self.token = token
        self.timeout = timeout

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The JSON GitHub answers (None for an empty answer)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.api}{path}", data=data, method=method)
        request.add_header("Accept", "application/vnd.github+json")
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("X-GitHub-Api-Version", "2022-11-28")
        request.add_header("User-Agent", "cml-grader")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            text = response.read().decode("utf-8", errors="replace")
        return json.loads(text) if text.strip() else None

    def find_comment(self, number: int) -> dict[str, Any] | None:
        """The pull request's comment that holds MARKER (the first 50 pages of comments)."""
        page = 1
        comment: dict[str, Any]  # each comment's JSON
        while page <= 50:
            comments = self.call("GET", f"/repos/{self.repository}/issues/{number}/comments"
                                        f"?per_page=100&page={page}")
            if not isinstance(comments, list):
                return None
            for comment in comments:
                if MARKER in str(comment.get("body", "")):
                    return comment
            if len(comments) < 100:
                return None
            page += 1
        return None

    def upsert_comment(self, number: int, body: str, create: bool = True) -> str:
        """Updates the marked comment or creates one; returns what was done."""
        existing = self.find_comment(number)
        if existing is not None:
            self.call("PATCH", f"/repos/{self.repository}/issues/comments/{existing['id']}",
                      {"body": body})
            return f"updated comment {existing.get('html_url') or existing['id']}"
        if not create:
            return "no comment to update"
        made = self.call("POST", f"/repos/{self.repository}/issues/{number}/comments",
                         {"body": body})
        return f"created comment {(made or {}).get('html_url') or (made or {}).get('id', '')}"


def comment_body(markdown: str, limit: int = COMMENT_LIMIT) -> str:
    """The comment: the marker, then the summary, cut (at a line) to GitHub's limit."""
    note = ("\n\n*The summary was cut to fit a comment; the job summary and the `ci-results` "
            "artifact have all of it.*\n")
    body = f"{MARKER}\n{markdown}"
    if len(body) <= limit:
        return body
    cut = body[:limit - len(note) - 20]
    cut = cut[:cut.rfind("\n")] if "\n" in cut else cut
    if cut.count("<details>") > cut.count("</details>"):
        cut += "\n</details>"
    return cut + note


def post_comment(pr: PullRequest, env: Mapping[str, str], markdown: str,
                 create: bool = True) -> tuple[bool, str]:
    """(posted, what happened or why not). Never raises for a network or API problem."""
    if pr.number is None:
        return False, f"not a pull request (event '{pr.event_name or 'none'}'): no comment"
    if pr.is_fork:
        return False, (f"this pull request comes from the fork {pr.head_repository}, whose "
                       "token cannot write to this repository: no comment was posted (the "
                       "results are in this summary and the ci-results artifact)")
    token = env.get("GITHUB_TOKEN", "")
    if not token or not pr.repository:
        return False, "no GITHUB_TOKEN or GITHUB_REPOSITORY in the environment: no comment"
    hub = GitHub(env.get("GITHUB_API_URL") or "https://api.github.com", pr.repository, token)
    try:
        return True, hub.upsert_comment(pr.number, comment_body(markdown), create)
    except urllib.error.HTTPError as err:
        detail = ""
        try:
            detail = json.loads(err.read().decode() or "{}").get("message", "")
        except (ValueError, OSError, AttributeError):
            pass
        hint = (" (the workflow needs `permissions: pull-requests: write`)"
                if err.code in (401, 403, 404) else "")
        return False, f"the comment could not be posted: HTTP {err.code} {detail}".rstrip() + hint
    except (urllib.error.URLError, OSError, ValueError, KeyError) as err:
        return False, f"the comment could not be posted: {err}"


# ---------------------------------------------------------------------------- the command

def append_summary(env: Mapping[str, str], text: str) -> None:
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    if len(text) > SUMMARY_LIMIT:
        text = text[:SUMMARY_LIMIT - 200] + "\n\n*(cut: the step summary is limited to 1 MiB)*\n"
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text + ("" if text.endswith("\n") else "\n"))
    except OSError as err:
        print(f"ci: cannot write the job summary ({err})", file=sys.stderr)


def is_course_grader(root: Path) -> bool:
    """The course's own checkout has the reference solutions and hidden tests; a student
    copy has neither."""
    return (root / "solutions").is_dir()


def headline(markdown: str, result: GradeResult, course: bool) -> str:
    """The summary with its first line saying whose grader this was and, without a GPU,
    that only the host parts were graded."""
    first, sep, rest = markdown.partition("\n")
    if not first.startswith("## CUDA Memory Labs"):
        return markdown
    if not course:
        first = first.replace("## CUDA Memory Labs", "## CUDA Memory Labs, feedback from your "
                              "own copy (no hidden tests, no reference)", 1) + ", not your grade"
    if result.device is None:
        first += ", host parts only (no GPU: the GPU parts were not graded)"
    return first + sep + rest


def scope_note(result: GradeResult, graded: list[LabPaths], every: list[LabPaths], how: str,
               course: bool) -> str:
    """What was graded and what was not, in two lines."""
    numbers = ", ".join(lab.number for lab in graded) or "none"
    whose = ("the course's grader, with its hidden tests and reference solution" if course
             else "your own copy's grader: no hidden tests and no reference solution, so "
                  "speed points are not measured and this is feedback, not your grade")
    gpu = (f"GPU parts on {result.device.get('name', 'a CUDA device')}" if result.device
           else "host parts only")
    left = [lab.number for lab in every if lab.folder not in {g.folder for g in graded}]
    missing = []
    if left:
        missing.append(f"lab(s) {', '.join(left)} (not changed by this pull request)"
                       if "change" in how else f"lab(s) {', '.join(left)}")
    if result.device is None:
        missing.append("the GPU parts (no GPU was usable: GPU tests, memory safety, timing "
                       "and profiler metrics)")
    return (f"\n**What was graded:** lab(s) {numbers} ({how}) by {whose}; {gpu}.  \n"
            f"**Not graded:** {'; '.join(missing) or 'nothing'}.\n")


def run(args: argparse.Namespace, env: Mapping[str, str] | None = None,
        grade_fn: GradeFn | None = None, root: Path = ROOT,
        gpu_probe: Callable[[], tuple[list[Gpu], str]] = query_gpus) -> int:
    env = os.environ if env is None else env
    grade_fn = grade_fn or _grade
    submission = (args.submission or root).resolve()
    pr = read_event(env)
    out: Path = args.out
    require_gpu = getattr(args, "require_gpu", False)
    if require_gpu:
        gpus, why = ([], "--no-gpu was given") if args.no_gpu else gpu_probe()
        if not gpus:
            text = (f"## CUDA Memory Labs: not graded\n\nThis runner has no usable GPU "
                    f"({why}), and --require-gpu asks for one: nothing was graded.\n")
            print(f"ci: --require-gpu: no usable GPU ({why}); nothing graded", file=sys.stderr)
            append_summary(env, text)
            return NO_GPU

    if args.labs:
        labs = labs_or_say("ci", [args.labs])
        if labs is None:
            return 1
        how = getattr(args, "because", "") or "the labs asked for"
    else:
        bases = [args.base] if args.base else [
            pr.base_sha or "", f"origin/{pr.base_ref}" if pr.base_ref else "", pr.base_ref or ""]
        files, why = changed_files(submission, bases)
        if files is None:
            print(f"ci: {why}", file=sys.stderr)
            append_summary(env, f"## CUDA Memory Labs\n\nNothing was graded: {why}.\n")
            return 1
        labs = touched_labs(files, discover_labs(root))
        how = f"the labs changed since {why[:12] if len(why) == 40 else why}"
        if not labs:
            text = (f"## CUDA Memory Labs: nothing to grade\n\nNo lab's files changed in this "
                    f"pull request ({len(files)} file(s) changed since "
                    f"{why[:12] if len(why) == 40 else why}), so no lab was graded.\n")
            out.mkdir(parents=True, exist_ok=True)
            (out / "summary.md").write_text(text, encoding="utf-8")
            (out / "comment.md").write_text(comment_body(text), encoding="utf-8")
            if not args.no_comment:  # keep an earlier comment truthful; never start one
                _posted, note = post_comment(pr, env, text, create=False)
                text += f"\n<sub>{note}</sub>\n"
            append_summary(env, text)
            print(text.strip())
            return 0

    print(f"ci: grading {', '.join(lab.folder for lab in labs)} ({how})", file=sys.stderr)
    result, status = grade_fn(submission, labs, args)
    result.submission = getattr(args, "name", "") or (
        f"pull request #{pr.number}" if pr.number is not None else submission.name)
    write_result(result, out)
    written = write_exports(result, out, FORMATS)
    course = is_course_grader(root)
    markdown = (out / "summary.md").read_text(encoding="utf-8") if (
        out / "summary.md").is_file() else "Grading wrote no summary: see result.json\n"
    markdown = headline(markdown, result, course) + scope_note(
        result, labs, discover_labs(root), how, course)
    (out / "summary.md").write_text(markdown, encoding="utf-8")
    (out / "comment.md").write_text(comment_body(markdown), encoding="utf-8")

    if args.no_comment:
        note = f"not posted by the grader (--no-comment; the body is {out / 'comment.md'})"
    else:
        _posted, note = post_comment(pr, env, markdown)
    append_summary(env, markdown + f"\n<sub>Graded: {how}. Comment: {note}.</sub>\n")
    print(table(result))
    print(f"ci: {note}", file=sys.stderr)
    print(f"ci: wrote {out / 'result.json'}" + "".join(f", {p}" for p in written),
          file=sys.stderr)
    if require_gpu and result.device is None and status == 0:
        print("ci: --require-gpu: the grade ran without a GPU (host parts only)",
              file=sys.stderr)
        return NO_GPU
    return status
