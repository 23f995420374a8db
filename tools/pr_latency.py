#!/usr/bin/env python3
"""The latency from a student's push to the course's comment on the pull request, on this
machine: the jobs of .github/workflows/grade-student-prs.yml (fetch, grade, comment) run
one after another, each `run:` block as written, as GitHub runs them when the workflow is
dispatched (grader/tests/local_actions.py: a copy of this checkout per job, the variables
and `${{ }}` values GitHub gives, the artifacts handed over as folders), against a fake
GitHub API on 127.0.0.1 (grader/tests/fake_github.py; GITHUB_API_URL points the steps at
it). The fake serves one student repository with one open pull request whose head commit
puts the reference solution (solutions/) into the student files of the labs asked for,
pushed at t0. Prints each job's wall seconds, the grade step's, the total from the push to
the comment (its time as the fake API gives it back), the comment's headline, the device,
and what the clock adds before the fetch job (from the workflow's own cron).

Usage: python3 tools/pr_latency.py [--labs 04] [--no-gpu] [--warm-cache] [--out DIR]

Run it from the course's checkout as root, like the GPU runner's grader (student code then
runs as an unprivileged user in the jail); it needs git (the student's repository is a bare
one). Everything stays in --out (default: a new temporary folder): each job's folder with
its logs, the artifacts, and latency.json (the table's rows) and comments.json (the pull
request's comments as the fake API gave them back). The grade job starts with an
empty reference cache, as a fresh runner pod does; --warm-cache gives it this machine's.
Without a GPU the grade job fails as designed (its grade step asks for --require-gpu: exit
status 3) and nothing is posted; --no-gpu turns that flag into --no-gpu, so the host parts
are graded and posted, and labels the figures "host parts only" (without a GPU it also runs
the grade job as written once more, after the comment, to show that it fails).
Not in the figures: the wait for the clock, GitHub's queueing, a runner's start (a GPU
runner pod's), and the checkouts and artifacts going over the network. Exit status 0 when
the comment naming the pull request's head commit came back from the fake API.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]

from grader.commands._common import choose_labs
from grader.commands.doctor import RUNNER_WORKFLOW
from grader.course import student_prs
from grader.tests import local_actions
from grader.tests.fake_github import FakeGitHub, StudentRepository, git, serve
from grader.tools import device_name
from throughput import reference_submission

WORKFLOW = ROOT / ".github" / "workflows" / "grade-student-prs.yml"
SECRETS = ("CML_READ_TOKEN", "CML_COMMENT_TOKEN")  # what fetch reads with, what comment posts with
STUDENT = "alice"
HOST_ONLY = "host parts only"


# ---------------------------------------------------------------------- the workflow

def labels(job: dict) -> list[str]:
    runs_on = job.get("runs-on", [])
    return [runs_on] if isinstance(runs_on, str) else [str(x) for x in runs_on]


def grade_job(doc: dict) -> str:
    """The job that runs on the GPU runner (its labels name `gpu`)."""
    found = [name for name, job in (doc.get("jobs") or {}).items() if "gpu" in labels(job)]
    if len(found) != 1:
        raise SystemExit(f"pr_latency: {WORKFLOW.name}: one job on a `gpu` runner expected, "
                         f"found {found}")
    return found[0]


def grade_step(run: local_actions.JobRun, job: dict) -> local_actions.StepRun | None:
    """The step that runs `pr-queue grade`."""
    for step, done in zip(job.get("steps") or [], run.steps):
        if "pr-queue grade" in str(step.get("run", "")):
            return done
    return None


def course_sha() -> str:
    try:
        return git(ROOT, "rev-parse", "HEAD").strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


# ---------------------------------------------------------------------------- run

@dataclass
class Measured:
    """What one run of the workflow gave."""

    repo: str  # the student repository
    number: int  # its pull request
    head: str  # the pull request's head commit
    pushed: float  # when it was pushed (time.time())
    results: dict[str, local_actions.JobRun]
    comments: list[dict]  # the pull request's comments, read back through the fake API
    as_written: local_actions.JobRun | None = None  # the grade job unchanged (--no-gpu)
    edited: bool = False  # --no-gpu changed a run block


def measure(doc: dict, labs: list, out: Path, no_gpu: bool, warm_cache: bool,
            device: str) -> Measured:
    """The student's push, then the workflow's jobs, then the comments read back."""
    settings = {k: str(v) for k, v in (doc.get("env") or {}).items()}
    org, prefix, commenter = (settings.get(k, "") for k in
                              ("STUDENT_ORG", "STUDENT_PREFIX", "COMMENTER"))
    grading = grade_job(doc)
    student = StudentRepository(out / "student", tuple(lab.folder for lab in labs))
    repo = f"{org}/{prefix}{STUDENT}"
    tokens = {name: secrets.token_hex(16) for name in SECRETS}
    hub = FakeGitHub(student.bare, org, repo, tokens[SECRETS[0]], tokens[SECRETS[1]],
                     commenter, STUDENT)
    course = f"{org}/course"
    event = {"inputs": {}, "ref": "refs/heads/main", "repository": {"full_name": course},
             "sender": {"login": "course-staff"},
             "workflow": WORKFLOW.relative_to(ROOT).as_posix()}
    workflow_path = f"{course}/{WORKFLOW.relative_to(ROOT).as_posix()}"
    base_env = {RUNNER_WORKFLOW: workflow_path, **os.environ}  # the GPU runner's, as set up
    if not warm_cache:
        base_env["XDG_CACHE_HOME"] = str(out / "runner-cache")  # empty: a fresh runner's
    edits: list[str] = []

    def host_only(job: str, script: str) -> str:
        if no_gpu and job == grading and "--require-gpu" in script:
            edits.append(job)
            return script.replace("--require-gpu", "--no-gpu")
        return script

    with serve(hub) as url:
        def workflow(folder: Path) -> local_actions.Workflow:
            return local_actions.Workflow(
                doc, ROOT, folder, "workflow_dispatch", event, tokens,
                {"repository": course, "api_url": url, "graphql_url": f"{url}/graphql",
                 "sha": course_sha(), "workflow_ref": f"{workflow_path}@refs/heads/main"},
                base_env, say=lambda line: print(f"  {line}", flush=True))

        number = student.pull_request("reference", lambda s: reference_submission(labs, s.work))
        pushed = time.time()
        head = hub.head(number)
        print(f"pushed {repo}#{number} at {head[:12]} (the reference in lab(s) "
              f"{','.join(lab.number for lab in labs)}); running {WORKFLOW.name} "
              "(workflow_dispatch)", flush=True)
        run = workflow(out / "run")
        results = run.run(edit=host_only)
        thread = student_prs.Api(tokens[SECRETS[0]], url).pages(
            f"/repos/{repo}/issues/{number}/comments")
        found = Measured(repo, number, head, pushed, results,
                         [c for c in thread if (c.get("user") or {}).get("login") == commenter],
                         edited=bool(edits))
        if no_gpu and device == "no GPU" and results[grading].result != "skipped":
            print("the grade job as written (--require-gpu), once more, on this machine "
                  "without a GPU:", flush=True)
            check = workflow(out / "as-written")
            for name in local_actions.Workflow.needs(doc["jobs"][grading]):
                check.results[name] = results[name]
            shutil.copytree(run.artifacts, check.artifacts)  # the queue fetch uploaded
            found.as_written = check.run_job(grading)
    return found


def table(doc: dict, found: Measured, label: str, device: str) -> tuple[list[tuple[str, str]],
                                                                       str]:
    """The table's rows, and the comment's headline ("" when none came back)."""
    grading = grade_job(doc)
    rows: list[tuple[str, str]] = []
    for name, job in doc["jobs"].items():
        done = found.results[name]
        runs_on = ", ".join(labels(job))
        runs_on = f"[{runs_on}]" if len(labels(job)) > 1 else runs_on
        value = f"{done.seconds:.1f}" if done.result != "skipped" else "-"
        tail = (label if name == grading else "") + (
            "" if done.result == "success" else f" ({done.result.upper()})")
        rows.append((f"{name} job, {runs_on} (s)", value + tail))
        step = grade_step(done, job) if name == grading else None
        if step is not None:
            rows.append(("  of which the grade step (s)", f"{step.seconds:.1f}{label}"
                         + ("" if step.outcome == "success" else f" ({step.note})")))
    marker = student_prs.HEAD_MARKER.format(sha=found.head)
    posted = [c for c in found.comments if marker in str(c.get("body", ""))]
    headline = ""
    if posted:
        body = str(posted[-1]["body"])
        headline = next((line for line in body.splitlines() if line.startswith("## ")), "")
        created = datetime.fromisoformat(str(posted[-1]["created_at"])).timestamp()
        rows.append(("push to comment (s)", f"{created - found.pushed:.1f}{label}"))
        rows.append(("comment", f"on {found.repo}#{found.number} by "
                     f"{posted[-1]['user']['login']}, names head {found.head[:12]}"))
        rows.append(("headline", headline))
    else:
        rows.append(("push to comment (s)", "- (no comment naming the head was posted)"))
    rows.append(("device", device))
    first = next(iter(found.results))
    rows.append(("schedule", local_actions.schedule_wait(doc, f"the {first} job")))
    if found.as_written is not None:
        step = grade_step(found.as_written, doc["jobs"][grading])
        if found.as_written.result == "failure" and step is not None and step.status == 3:
            said = "FAILS (exit status 3): no usable GPU here, as designed (--require-gpu)"
        else:
            said = (f"{found.as_written.result} ({step.note if step else 'no grade step'}): "
                    "not the failure --require-gpu gives without a GPU")
        rows.append(("grade job as written", said))
    if label and not found.edited:
        rows.append(("note", f"no run block of job {grading} asks for --require-gpu: "
                     "nothing was changed for --no-gpu"))
    return rows, headline


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--labs", default="04", help="the labs the pull request changes (default 04)")
    p.add_argument("--no-gpu", action="store_true",
                   help="grade the host parts only (the grade step's --require-gpu becomes "
                        "--no-gpu)")
    p.add_argument("--warm-cache", action="store_true",
                   help="the grade job uses this machine's reference cache (default: an empty "
                        "one, as a fresh runner pod has)")
    p.add_argument("--out", type=Path, default=None, help="keep everything here")
    args = p.parse_args(argv)

    labs = choose_labs([args.labs])
    numbers = ",".join(lab.number for lab in labs)
    out = (args.out or Path(tempfile.mkdtemp(prefix="cml-pr-latency-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o755)  # student code runs as 'nobody' under here
    doc = local_actions.load_workflow(WORKFLOW)
    device = device_name()
    label = f", {HOST_ONLY}" if args.no_gpu else ""
    print(f"pr_latency: {device}; {len(os.sched_getaffinity(0))} CPUs; lab(s) {numbers}"
          f"{label}; out {out}", flush=True)
    found = measure(doc, labs, out, args.no_gpu, args.warm_cache, device)
    rows, headline = table(doc, found, label, device)

    print()
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")
    print("  (not counted: the clock's wait, GitHub's queueing, a runner's start, the "
          "checkouts and artifacts over the network)")
    grading = grade_job(doc)
    if not headline and found.results[grading].result == "failure" and not args.no_gpu and (
            device == "no GPU"):
        print(f"\nThe {grading} job fails as designed on a runner without a GPU "
              "(--require-gpu): run with --no-gpu for the host parts' figures.")
    print(f"(logs: {out / 'run' / 'jobs'})")
    (out / "comments.json").write_text(json.dumps(found.comments, indent=2) + "\n")
    (out / "latency.json").write_text(json.dumps({
        "device": device, "labs": numbers, "host_parts_only": args.no_gpu,
        "pull_request": f"{found.repo}#{found.number}", "head_sha": found.head,
        "jobs": {n: {"result": r.result, "seconds": round(r.seconds, 2)}
                 for n, r in found.results.items()},
        "rows": rows, "headline": headline}, indent=2) + "\n")
    return 0 if headline else 1


if __name__ == "__main__":
    sys.exit(main())
