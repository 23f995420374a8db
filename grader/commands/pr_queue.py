"""`pr-queue fetch | grade | post`: the course's repository grades the students' pull requests
(`.github/workflows/grade-student-prs.yml`, one subcommand per job; grader/course/
student_prs.py does the work).

    fetch  lists the open pull requests of the student repositories (--repos FILE, or --org
           with --prefix) with a read-only token ($CML_READ_TOKEN), and for each head commit
           no comment of --commenter names yet, writes the student files of the labs it
           changes into QUEUE/<key>/submission/, QUEUE/<key>/job.json and QUEUE/queue.json.
           It runs nothing it fetched.
    grade  grades each job of QUEUE with `grader ci` from this checkout (the course's: its
           tests, hidden tests, reference, rubrics), one process each, into OUT/<key>/; with
           --require-gpu it stops, exit status 3, at the first grade that found no GPU;
           --no-gpu grades the host parts only (a measurement on a machine without one).
    post   posts each job's OUT/<key>/comment.md to the pull request QUEUE names, with a token
           that may only comment ($CML_COMMENT_TOKEN), editing --commenter's earlier comment.

The API's address is $GITHUB_API_URL, which Actions sets on every runner (https://api.github.com,
or a GitHub Enterprise server's); without it, https://api.github.com.

Exit status: 0 done; 1 a call to GitHub failed or QUEUE cannot be read; 3 (grade) no GPU.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Mapping

from ..course import student_prs
from ..paths import ROOT
from ._common import Subcommands

HELP = "grade students' pull requests from the course's repository (fetch, grade, post)"
NO_GPU = 3  # grader ci --require-gpu's status without a usable GPU

# argv -> exit status: how `grade` runs one `grader ci` (the tests replace it)
Runner = Callable[[list[str]], int]


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("pr-queue", help=HELP, description=HELP)
    steps = p.add_subparsers(dest="step", required=True)
    f = steps.add_parser("fetch", help="list the pull requests and fetch their student files")
    f.add_argument("--queue", type=Path, required=True, help="the folder to write")
    f.add_argument("--repos", type=Path, default=None,
                   help="a file of student repositories, one owner/name a line")
    f.add_argument("--org", default="", help="the organisation of the student repositories")
    f.add_argument("--prefix", default="",
                   help="with --org: their names' prefix (GitHub Classroom: the assignment's)")
    f.add_argument("--commenter", required=True,
                   help="the login that posts the course's comments (only its markers count)")
    f.add_argument("--limit", type=int, default=20, help="at most this many grades a run")
    g = steps.add_parser("grade", help="grade every job of the queue with grader ci")
    g.add_argument("--queue", type=Path, required=True)
    g.add_argument("--out", type=Path, required=True, help="OUT/<key>/ for each job")
    g.add_argument("--require-gpu", action="store_true",
                   help="stop, exit status 3, when a grade finds no usable GPU")
    g.add_argument("--no-gpu", action="store_true",
                   help="grade the host parts only (grader ci --no-gpu)")
    g.add_argument("--cache", default="", help="the reference cache (grader ci --cache)")
    o = steps.add_parser("post", help="post each grade's comment")
    o.add_argument("--queue", type=Path, required=True)
    o.add_argument("--results", type=Path, required=True)
    o.add_argument("--commenter", required=True)
    return p


def _api(env: Mapping[str, str], token_var: str,
         transport: student_prs.Transport | None) -> student_prs.Api:
    return student_prs.Api(env.get(token_var, ""), env.get("GITHUB_API_URL")
                           or student_prs.API_URL, transport)


def _fetch(args: argparse.Namespace, env: Mapping[str, str], root: Path,
           transport: student_prs.Transport | None) -> int:
    api = _api(env, "CML_READ_TOKEN", transport)
    repos: list[str] = []
    if args.repos:
        repos += [line.strip() for line in args.repos.read_text().splitlines()
                  if line.strip() and not line.lstrip().startswith("#")]
    if args.org:
        repos += student_prs.repositories(api, args.org, args.prefix)
    if not repos:
        print("pr-queue fetch: no student repositories (give --repos or --org)",
              file=sys.stderr)
        return 1
    labs = student_prs.course_labs(root)
    found = student_prs.plan(api, sorted(set(repos)), labs, args.commenter, args.limit)
    jobs = student_prs.write_queue(api, found, labs, args.queue)
    for job in jobs:
        print(f"to grade: {job.label()}, lab(s) {job.lab_numbers()}"
              + "".join(f"\n  refused: {p}" for p in job.problems))
    for line in found.skipped:
        print(f"skipped: {line}")
    output = env.get("GITHUB_OUTPUT")
    if output:  # the workflow's next job runs only when there is something to grade
        with open(output, "a", encoding="utf-8") as f:
            f.write(f"jobs={len(jobs)}\n")
    return 0


def _grade(args: argparse.Namespace, runner: Runner) -> int:
    jobs = student_prs.read_queue(args.queue)
    status = 0
    for job in jobs:
        argv = [sys.executable, "-m", "grader", "ci", "--submission",
                str(args.queue / job.key / "submission"), "--labs", job.lab_numbers(),
                "--because", "the labs this pull request changes", "--name", job.label(),
                "--no-comment", "--out", str(args.out / job.key), "-q"]
        if args.require_gpu:
            argv.append("--require-gpu")
        if args.no_gpu:
            argv.append("--no-gpu")
        if args.cache:
            argv += ["--cache", args.cache]
        print(f"grading {job.label()}, lab(s) {job.lab_numbers()}", flush=True)
        code = runner(argv)
        if code == NO_GPU:
            print("pr-queue grade: no usable GPU on this runner: stopped (nothing more is "
                  "graded; the commits wait for the next run)", file=sys.stderr)
            return NO_GPU
        if code != 0:
            print(f"pr-queue grade: {job.label()}: grader ci ended with status {code}",
                  file=sys.stderr)
            status = 1
    return status


def _run_here(argv: list[str]) -> int:
    return subprocess.run(argv, cwd=ROOT, check=False).returncode


def run(args: argparse.Namespace, env: Mapping[str, str] | None = None, root: Path = ROOT,
        transport: student_prs.Transport | None = None, runner: Runner = _run_here) -> int:
    env = os.environ if env is None else env
    try:
        if args.step == "fetch":
            return _fetch(args, env, root, transport)
        if args.step == "grade":
            return _grade(args, runner)
        api = _api(env, "CML_COMMENT_TOKEN", transport)
        for line in student_prs.post_results(api, args.queue, args.results, args.commenter):
            print(line)
        return 0
    except student_prs.ApiError as err:
        print(f"pr-queue {args.step}: {err}", file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError) as err:
        print(f"pr-queue {args.step}: {err}", file=sys.stderr)
        return 1
