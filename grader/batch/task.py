"""One task: grades one submission of the plan with the pipeline, GPU stages under the
machine's GPU lock, within the wall-clock limit, and writes its result, exports and stamp."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from .. import pipeline
from . import regrade_rules
from ..atomic import write_atomic
from ..exports import write_exports
from ..gpu import pool_for
from ..result import GradeResult
from .fingerprint import grader_fingerprint, submission_key
from .node import node_problem
from .plan import (GRADED, GRADER_ERROR, INTERRUPTED, STAMP_FILE, TIMED_OUT, BatchError, Plan,
                   Stamp, Submission, is_current)


def run_task(out_dir: Path, index: int, work_dir: Path | None = None, force: bool = False,
             log: Callable[[str], None] | None = None) -> Stamp | None:
    """Grades submission `index` of the plan in `out_dir`; None when it was already current.
    Writes `<student>/result.json`, the exports and `<student>/stamp.json`."""
    out_dir = Path(out_dir).resolve()
    plan = Plan.load(out_dir)
    if not 0 <= index < len(plan.submissions):
        raise BatchError(f"task {index}: the plan has {len(plan.submissions)} submissions "
                         f"(0 to {len(plan.submissions) - 1})")
    sub = plan.submissions[index]
    say: Callable[[str], None] = log or (lambda text: print(text, file=sys.stderr, flush=True))
    hashes, key = submission_key(plan, sub, grader_fingerprint(plan))
    if not force and is_current(out_dir, sub.student, key):
        say(f"{sub.student}: unchanged since it was graded; kept")
        return None

    problem = node_problem(plan)
    if problem is not None:  # refused before anything is graded; graded again next time
        say(f"{sub.student}: not graded: {problem}")
        result = pipeline.new_result(pipeline.Options(submission=Path(sub.path), labs=[]))
        result.errors.append(f"not graded: {problem}")
        return _finish(out_dir, plan, sub, result, GRADER_ERROR, hashes, key, 0.0, 0.0, say)

    lock = pool_for(plan.gpu_lock, index, on_wait=say)  # one lock per GPU, this task's first
    start = time.monotonic()
    opts = pipeline.Options(submission=Path(sub.path), labs=plan.lab_paths(), seed=plan.seed,
                            work_dir=work_dir, source_root=Path(plan.repo),
                            build_timeout=plan.build_timeout, test_timeout=plan.test_timeout,
                            gpu=False if plan.no_gpu else None,
                            progress=lambda text: say(f"[{time.monotonic() - start:7.1f} s] "
                                                      f"{text}"),
                            gpu_section=lock.section, log=say,
                            cache=Path(plan.cache) if plan.cache else None)
    result, ended = pipeline.grade_submission(opts, time_limit=plan.timeout)
    status = {pipeline.ENDED_GRADED: GRADED, pipeline.ENDED_TIMED_OUT: TIMED_OUT,
              pipeline.ENDED_INTERRUPTED: INTERRUPTED}.get(ended, GRADER_ERROR)
    seconds = time.monotonic() - start
    return _finish(out_dir, plan, sub, result, status, hashes, key, seconds - lock.waited,
                   lock.waited, say)


def _finish(out_dir: Path, plan: Plan, sub: Submission, result: GradeResult, status: str,
            hashes: dict[str, str], key: str, seconds: float, waited: float,
            log: Callable[[str], None]) -> Stamp:
    """Writes the result, the exports, the stamp and a line of the student's history."""
    student_dir = out_dir / sub.student
    result.submission = sub.source or sub.path
    result.set_late(sub.late_factor, sub.late or "", sub.deadline, sub.commit_time,
                    days=sub.late_days)
    write_atomic(student_dir / "result.json", result.to_json() + "\n")
    try:
        write_exports(result, student_dir, plan.formats)
    except ValueError as err:  # a plan edited by hand with an unknown format
        log(f"{sub.student}: exports not written: {err}")
    stamp = Stamp(sub.student, sub.path, key, hashes, status, result.points, result.max_points,
                  round(seconds, 1), round(waited, 1),
                  time.strftime("%Y-%m-%dT%H:%M:%S%z"), os.uname().nodename, sub.sha,
                  sub.commit_time)
    write_atomic(student_dir / STAMP_FILE, json.dumps(asdict(stamp), indent=2) + "\n")
    entry = regrade_rules.history_entry(json.loads(result.to_json()), f"graded ({status})")
    entry.update({"host": stamp.host, "sha": sub.sha} if sub.sha else {"host": stamp.host})
    regrade_rules.append_history(student_dir, entry)
    return stamp
