"""Deadlines for a batch (grader/README.md, "Grading a class"): `--deadline` and per-student
extensions; for a git submission, the commit that is graded (the last one before the
student's deadline, or the newest under a policy that accepts late work), exported with
`git archive` so the working tree — uncommitted edits included — is never graded; and a
late policy that turns a commit's lateness into a factor and a gradebook column.

Commit times are the committer dates recorded in the student's repository: a student can
set them, so they prove nothing about when the work was done. What does prove it is a copy
made by the staff: `batch --fetched-at` takes the time each repository was cloned or
fetched (one time, or a CSV `student,fetched_at`); the grader then grades the repository's
HEAD as fetched — what was there at that moment — and the lateness comes from the fetch
time, never from a commit date (`pin_fetched`).
"""

from __future__ import annotations

import io
import math
import subprocess
import tarfile
from dataclasses import dataclass
from datetime import datetime, time as dtime
from pathlib import Path
from typing import Literal, Mapping, overload


class DeadlineError(ValueError):
    """Said to the user as is."""


# --------------------------------------------------------------------------- times

def parse_time(text: str) -> datetime:
    """An ISO 8601 time with its offset ("2026-03-01T23:59+01:00"); without an offset the
    grader's local time zone; a date alone means the end of that day (23:59:59)."""
    text = text.strip()
    try:
        if len(text) == 10:
            when = datetime.combine(datetime.fromisoformat(text).date(), dtime(23, 59, 59))
        else:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise DeadlineError(f"cannot read the time {text!r} (use ISO 8601, e.g. "
                            "2026-03-01T23:59+01:00)") from None
    return when if when.tzinfo else when.astimezone()


def deadline_for(student: str, deadline: datetime | str | None,
                 extensions: Mapping[str, datetime | str] | None = None) -> datetime | None:
    """The student's deadline: their extension when they have one, else the batch's."""
    chosen = (extensions or {}).get(student, deadline)
    if chosen is None or chosen == "":
        return None
    return parse_time(chosen) if isinstance(chosen, str) else chosen


# --------------------------------------------------------------------------- git

@dataclass
class Commit:
    sha: str
    time: datetime  # committer date


@overload
def _git(repo: Path, *args: str, binary: Literal[False] = False) -> str: ...
@overload
def _git(repo: Path, *args: str, binary: Literal[True]) -> bytes: ...


def _git(repo: Path, *args: str, binary: bool = False) -> str | bytes:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                          text=not binary, timeout=120)
    if proc.returncode != 0:
        err = proc.stderr if not binary else proc.stderr.decode(errors="replace")
        raise DeadlineError(f"git {' '.join(args)} in {repo}: {err.strip()}")
    out: str | bytes = proc.stdout  # text, or bytes where `binary`
    return out


def is_git(path: Path) -> bool:
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--git-dir"],
                          capture_output=True, text=True)
    return proc.returncode == 0


def commit_info(repo: Path, rev: str) -> Commit:
    sha, when = _git(repo, "show", "-s", "--format=%H%x00%cI", rev, "--").strip() \
        .split("\0")
    return Commit(sha, datetime.fromisoformat(when))


def last_commit_before(repo: Path, deadline: datetime | None) -> Commit | None:
    """The newest commit of HEAD's history made at or before `deadline` (None: HEAD);
    None when there is none."""
    if deadline is None:
        return commit_info(repo, "HEAD")
    iso = deadline.isoformat()
    sha = _git(repo, "rev-list", "-1", f"--before={iso}", "HEAD").strip()
    return commit_info(repo, sha) if sha else None


def commits_after(repo: Path, deadline: datetime) -> int:
    """How many commits of HEAD's history were made after `deadline`."""
    text = _git(repo, "rev-list", "--count", f"--since={deadline.isoformat()}", "HEAD")
    return int(text.strip() or 0)


def export_commit(repo: Path, sha: str, dest: Path) -> Path:
    """The tree of commit `sha` (never the working tree) written into `dest`."""
    data = _git(repo, "archive", "--format=tar", sha, binary=True)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
        if hasattr(tarfile, "data_filter"):
            # The filter argument exists wherever tarfile.data_filter does (3.12, and the
            # security releases of 3.10 and 3.11), which older stubs do not know.
            tar.extractall(dest, members=members, filter="data")  # type: ignore[call-arg]
        else:  # Python < 3.12 without the backported filter: regular files and folders only
            tar.extractall(dest, members=[m for m in members
                                          if not Path(m.name).is_absolute()
                                          and ".." not in Path(m.name).parts])
    return dest


# --------------------------------------------------------------------------- late policy

@dataclass
class LatePolicy:
    """"cutoff" (default): the last commit before the deadline is graded, later ones
    ignored; "accept": the newest commit, no penalty; "zero": the newest, no points when
    late; "per-day:P[:MAX]": the newest, P percent off per started day late, nothing after
    MAX days."""

    kind: str = "cutoff"
    percent_per_day: float = 0.0
    max_days: float | None = None

    @staticmethod
    def parse(text: str | None) -> "LatePolicy":
        text = (text or "cutoff").strip().lower()
        if text in ("cutoff", "accept", "zero"):
            return LatePolicy(text)
        parts = text.split(":")
        if parts[0] == "per-day" and len(parts) in (2, 3):
            try:
                pct = float(parts[1])
                top = float(parts[2]) if len(parts) == 3 else None
            except ValueError:
                pct = -1
            if 0 <= pct <= 100:
                return LatePolicy("per-day", pct, top)
        raise DeadlineError(f"unknown late policy {text!r} (cutoff, accept, zero or "
                            "per-day:PERCENT[:MAXDAYS])")

    @property
    def grades_newest(self) -> bool:
        return self.kind != "cutoff"


@dataclass
class Lateness:
    days: float  # 0 when on time
    factor: float  # what the points are multiplied by
    label: str  # the gradebook's `late` column


def lateness(submitted: datetime | None, deadline: datetime | None, policy: LatePolicy,
             ignored_commits: int = 0) -> Lateness:
    if deadline is None:
        return Lateness(0.0, 1.0, "")
    if submitted is None:
        return Lateness(0.0, 1.0, "no commit time")
    late = (submitted - deadline).total_seconds() / 86400
    if late <= 0:
        extra = f" ({ignored_commits} later commit(s) ignored)" if ignored_commits else ""
        return Lateness(0.0, 1.0, "on time" + extra)
    days = math.ceil(late * 1e6) / 1e6
    started = math.ceil(late)
    if policy.kind == "accept":
        return Lateness(days, 1.0, f"late {late:.2f} days (accepted)")
    if policy.kind == "zero":
        return Lateness(days, 0.0, f"late {late:.2f} days (no points)")
    if policy.kind == "per-day":
        if policy.max_days is not None and late > policy.max_days:
            return Lateness(days, 0.0, f"late {late:.2f} days (more than "
                                       f"{policy.max_days:g}: no points)")
        factor = max(0.0, 1 - policy.percent_per_day / 100 * started)
        return Lateness(days, round(factor, 6), f"late {late:.2f} days "
                        f"(-{100 - factor * 100:g}%)")
    return Lateness(days, 1.0, f"late {late:.2f} days")  # cutoff never grades a late commit


# --------------------------------------------------------------------------- one submission

@dataclass
class Pinned:
    """What is graded for one submission and how late it was."""

    path: Path  # the folder to grade (an export of the commit for git submissions)
    sha: str | None
    commit_time: str | None  # ISO 8601
    deadline: str | None
    late: Lateness
    error: str | None = None  # e.g. no commit before the deadline


def pin_fetched(path: Path, dest: Path, fetched_at: datetime, deadline: datetime | None,
                policy: LatePolicy | None = None) -> Pinned:
    """For a git submission fetched by the staff at `fetched_at`: exports its HEAD (what the
    repository held when it was fetched) into `dest`; late by the fetch time. Under the
    cutoff policy a fetch after the deadline is refused (DeadlineError): which commits were
    there at the deadline is then only the student's word."""
    policy = policy or LatePolicy()
    when = deadline.isoformat() if deadline else None
    if deadline is not None and fetched_at > deadline and not policy.grades_newest:
        raise DeadlineError(f"fetched at {fetched_at.isoformat()}, after the deadline {when}: "
                            "the cutoff policy cannot tell which commits were there at the "
                            "deadline (fetch at the deadline, or give a --late-policy)")
    commit = commit_info(Path(path), "HEAD")
    export_commit(Path(path), commit.sha, Path(dest))
    return Pinned(Path(dest), commit.sha, commit.time.isoformat(), when,
                  lateness(fetched_at, deadline, policy))


def pin_submission(path: Path, dest: Path, deadline: datetime | None,
                   policy: LatePolicy | None = None) -> Pinned:
    """For a git submission: exports the commit to grade into `dest` and says when it was
    made; a folder that is not a git repository is graded as it is (no commit time)."""
    policy = policy or LatePolicy()
    path = Path(path)
    if not is_git(path):
        return Pinned(path, None, None, deadline.isoformat() if deadline else None,
                      lateness(None, deadline, policy) if deadline else Lateness(0, 1, ""))
    when = deadline.isoformat() if deadline else None
    commit: Commit | None
    if deadline is None or policy.grades_newest:
        commit = commit_info(path, "HEAD")
        ignored = 0
    else:
        commit = last_commit_before(path, deadline)
        ignored = commits_after(path, deadline)
    if commit is None:
        return Pinned(path, None, None, when, Lateness(0.0, 0.0, "no commit before the "
                                                            "deadline"),
                      error=f"no commit before the deadline {when}")
    export_commit(path, commit.sha, Path(dest))
    return Pinned(Path(dest), commit.sha, commit.time.isoformat(), when,
                  lateness(commit.time, deadline, policy, ignored))
