"""The options of `batch` (commands/grade_class.py), by what they are for: grading here,
Slurm, regrades, deadlines and the gradebook."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .. import batch
from ..batch import schedule
from ..batch.regrade_rules import STATUSES
from ..cluster import job_options
from ._common import add_format_flag, add_grading_flags


def add_all(p: argparse.ArgumentParser) -> None:
    """Every option of `batch` but its hidden ones, onto its parser `p`."""
    _add_run_flags(p)
    _add_slurm_flags(p)
    _add_regrade_flags(p)
    _add_deadline_flags(p)
    _add_gradebook_flags(p)


def _add_run_flags(p: argparse.ArgumentParser) -> None:
    """batch's flags for grading here: the folder, jobs, labs, limits, exports, locks, reuse."""
    p.add_argument("--out", type=Path, help="the batch's folder: DIR/<student>/result.json, "
                   "gradebook.csv, summary.md, manifest.json")
    p.add_argument("-j", "--jobs", type=int, default=None,
                   help="submissions graded at the same time, each on its share of the "
                        f"CPUs (default: {schedule.JOBS_PER_GPU} per GPU, at most CPUs / 4; "
                        "CPUs / 4 without a GPU)")
    p.add_argument("--labs", default="", help="comma-separated lab numbers (default: all)")
    p.add_argument("--timeout", type=float, default=batch.DEFAULT_TIMEOUT,
                   help="wall-clock seconds per submission, time waiting for the GPU "
                        f"excluded (default {batch.DEFAULT_TIMEOUT:g})")
    add_grading_flags(p, "one seed for every submission (default: the batch's earlier seed, "
                         "else a fresh one)", "grade as on a machine without a GPU")
    add_format_flag(p, "exports written beside each result.json")
    p.add_argument("--gpu-lock", default=os.environ.get("CML_GPU_LOCK", batch.DEFAULT_LOCK),
                   help="where the GPU locks live, shared by every grader on this machine: "
                        "one lock file per GPU, this name with .gpu<UUID> before its suffix "
                        "(this file itself where no GPU is listed) "
                        f"(default: $CML_GPU_LOCK or {batch.DEFAULT_LOCK})")
    p.add_argument("--force", action="store_true",
                   help="grade again even the submissions that have not changed")
    p.add_argument("--keep-work", action="store_true",
                   help="keep the build folders (DIR/.work) afterwards")


def _add_slurm_flags(p: argparse.ArgumentParser) -> None:
    """batch's flags for a Slurm job array, and the tools every grading machine must have."""
    p.add_argument("--slurm", action="store_true",
                   help="write DIR/slurm/grade.sbatch (a job array, one task per submission) "
                        "instead of grading here")
    p.add_argument("--slurm-time", type=float, default=None,
                   help="the job array's time limit per task in seconds (default: "
                        "--timeout + 15 minutes)")
    p.add_argument("--slurm-cpus", type=int, default=4, help="CPUs per array task (default 4)")
    p.add_argument("--slurm-parallel", type=int, default=None,
                   help="at most this many array tasks at once (%%N)")
    p.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                   help="an extra #SBATCH line, e.g. --sbatch=--qos=short (repeatable)")
    job_options.add_arguments(p)
    p.add_argument("--slurm-prep", action=argparse.BooleanOptionalAction, default=True,
                   help="a prep job that fills the reference cache once, the array after it "
                        "(default on)")
    p.add_argument("--require-tools", default="", metavar="TOOLS",
                   help="comma-separated tools every grading machine must have (e.g. "
                        "compute-sanitizer,ncu): refused where one is missing, so the "
                        "maximum cannot differ between nodes")


def _add_regrade_flags(p: argparse.ArgumentParser) -> None:
    """batch's flags for grading some students again, or rescoring their stored results."""
    p.add_argument("--only", default=None, metavar="NAMES",
                   help="grade again these students only (comma-separated), merged into the "
                        "existing gradebook")
    p.add_argument("--only-status", default=None, metavar="STATUSES",
                   help="grade again the students with one of these statuses: "
                        + ", ".join(repr(s) if " " in s else s for s in STATUSES)
                        + " (grader/README.md, 'Statuses in the gradebook')")
    p.add_argument("--rescore", action="store_true",
                   help="recompute the points of --out's stored results from the current "
                        "rubrics (a change of points only), then collect")


def _add_deadline_flags(p: argparse.ArgumentParser) -> None:
    """batch's flags for git submissions: the deadline, the late policy, when they were fetched."""
    p.add_argument("--deadline", default=None, metavar="TIME",
                   help="ISO 8601 (2026-03-01T23:59+01:00): git submissions are graded at "
                        "their last commit before it; a roster column extension or deadline "
                        "gives a student another")
    p.add_argument("--late-policy", default="cutoff",
                   help="cutoff (default: later commits ignored), accept, zero, or "
                        "per-day:PERCENT[:MAXDAYS] (the newest commit, points reduced)")
    p.add_argument("--fetched-at", default=None, metavar="TIME|CSV",
                   help="when the git submissions were cloned or fetched by the staff: one "
                        "ISO 8601 time, or a CSV student,fetched_at; each is graded at its "
                        "HEAD as fetched, late by that time (commit dates are the student's "
                        "claim), recorded in the gradebook's fetched_at column")


def _add_gradebook_flags(p: argparse.ArgumentParser) -> None:
    """batch's flags for the gradebook: collecting it, the LMS's roster and the LMS's imports."""
    p.add_argument("--collect", type=Path, metavar="DIR",
                   help="merge DIR's results into DIR/gradebook.csv and DIR/summary.md")
    p.add_argument("--roster", type=Path, default=None,
                   help="the LMS's roster CSV (Canvas's or Moodle's export): its id, SIS, "
                        "e-mail and section columns are added to gradebook.csv")
    p.add_argument("--export", default="", help="also write gradebooks the LMS imports: "
                   "canvas (canvas-import.csv), moodle (moodle-import.csv), or both")
