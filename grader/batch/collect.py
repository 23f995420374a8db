"""After the tasks: `gradebook.csv`, `summary.md` (scores per lab, histograms, failures by
kind) and `manifest.json`, from the stamps and results in the batch's folder."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from .. import csvsafe
from ..atomic import write_all
from ..exports.common import fmt_points
from ..result import (BUILD_TIMEOUT, COMPILE_ERROR, CRASHED, ERROR, FAILED, GRADER_ERROR,
                      NO_SUBMISSION, NOT_CONFIGURED, STATIC_VIOLATION, TIMEOUT, GradeResult)
from ..parts.gates import BUILD, STATIC
from .fingerprint import grader_fingerprint
from . import regrade_rules, regrades
from .plan import PLAN_SCHEMA, TIMED_OUT, Plan, Stamp, Submission, load_result, read_stamp

FAILURE_KINDS = ("grader error", "timeout", "no submission", "compile error",
                 "static violation", "crash", "wrong results")


def failure_kind(result: GradeResult, lab_name: str, stamp: Stamp | None) -> str | None:
    """Why a lab lost points, as one word group, in this order of precedence; None when
    nothing failed (a lab that lost points only to GPU parts not graded is not a failure)."""
    lab = next((x for x in result.labs if x.lab == lab_name), None)
    if stamp is not None and stamp.status == TIMED_OUT:
        return "timeout"
    if lab is None:
        return "grader error"
    if lab.failure in (GRADER_ERROR, NOT_CONFIGURED):
        return "grader error"
    if lab.failure == BUILD_TIMEOUT or any(t.status == TIMEOUT for t in lab.tests):
        return "timeout"
    kinds = {NO_SUBMISSION: "no submission", COMPILE_ERROR: "compile error",
             STATIC_VIOLATION: "static violation"}
    if lab.failure in kinds:
        return kinds[lab.failure]
    parts = {p.kind: p for p in lab.parts}  # a result.json written before `failure` existed
    if lab.failure is None and parts.get(BUILD.kind) is not None and parts[BUILD.kind].reason:
        return "compile error"
    if lab.failure is None and parts.get(STATIC.kind) is not None and parts[STATIC.kind].reason:
        return "static violation"
    if any(t.status in (CRASHED, ERROR) for t in lab.tests):
        return "crash"
    if any(t.status == FAILED for t in lab.tests):
        return "wrong results"
    return None


def collect(out_dir: Path) -> dict[str, Any]:
    """Writes gradebook.csv, summary.md and manifest.json from the tasks' results; returns
    the manifest."""
    out_dir = Path(out_dir).resolve()
    plan = Plan.load(out_dir)
    files: dict[Path, str | None] = {}  # everything this collect writes, written as one
    overrides = regrades.apply_overrides(out_dir, plan, files)
    rows: list[dict[str, str]] = []
    manifest: dict[str, Any] = {"schema": PLAN_SCHEMA, "grader": grader_fingerprint(plan),
                      "labs": plan.labs, "seed": plan.seed, "students": {}}
    scores: dict[str, list[float]] = {lab: [] for lab in plan.labs}
    maxima: dict[str, float] = {}
    failures: dict[str, list[str]] = {kind: [] for kind in FAILURE_KINDS}
    missing: list[str] = []
    not_graded = 0
    seconds = 0.0
    late: list[tuple[str, str, float, float, float]] = []  # student, label, factor, after, before
    for sub in plan.submissions:
        stamp = read_stamp(out_dir, sub.student)
        changed = files.get(out_dir / sub.student / "result.json")
        result = (GradeResult.from_json(changed) if changed is not None else
                  load_result(out_dir, sub.student))
        row = {"student": sub.student}
        row.update(_pin_columns(plan, sub))
        if result is None:
            missing.append(sub.student)
            row.update({lab: "" for lab in plan.labs})
            row.update({"total": "", "max_points": "", "status": "not graded yet"})
            rows.append(row)
            manifest["students"][sub.student] = {"status": "not graded yet"}
            continue
        for lab in plan.labs:
            entry = next((x for x in result.labs if x.lab == lab), None)
            row[lab] = fmt_points(entry.points * sub.late_factor) if entry else ""
            if entry:
                scores[lab].append(entry.points)
                maxima[lab] = max(maxima.get(lab, 0.0), entry.max_points)
                if any(p.status == "not_graded" for p in entry.parts):
                    not_graded += 1
            kind = failure_kind(result, lab, stamp)
            if kind:
                failures[kind].append(f"{sub.student} ({lab[:2]})")
        status = stamp.status if stamp else "graded"
        lab_status = {x.lab: regrade_rules.lab_status(asdict(x))
                      for x in result.labs}
        shown = regrade_rules.student_status({"labs": [asdict(x) for x in result.labs]},
                                             status)
        total = result.points * sub.late_factor
        if sub.late_factor != 1.0:
            late.append((sub.student, sub.late, sub.late_factor, total, result.points))
        row.update({"total": fmt_points(total), "max_points": fmt_points(result.max_points),
                    "status": shown})
        row.update({f"{lab} status": lab_status.get(lab, "") for lab in plan.labs})
        rows.append(row)
        seconds += stamp.seconds if stamp else 0.0
        manifest["students"][sub.student] = {
            "submission": sub.path, "key": stamp.key if stamp else None,
            "files": stamp.files if stamp else {}, "status": status,
            "points": result.points, "max_points": result.max_points,
            "seconds": stamp.seconds if stamp else None,
            "gpu_wait_seconds": stamp.gpu_wait_seconds if stamp else None,
            "finished": stamp.finished if stamp else None,
            "labs": lab_status, "overrides": overrides.get(sub.student, []),
            **{k: v for k, v in asdict(sub).items() if k in PIN_FIELDS and v}}
    # status last: the LMS join (exports/lms.py) fills it for roster rows without a grade
    columns = ["student", *plan.labs, "total", "max_points",
               *[f"{lab} status" for lab in plan.labs], *_pin_names(plan), "status"]
    files[out_dir / "gradebook.csv"] = csvsafe.to_csv(rows, columns)
    files[out_dir / "summary.md"] = summary_markdown(plan, scores, maxima, failures, missing,
                                                     not_graded, seconds, late)
    files[out_dir / "manifest.json"] = json.dumps(manifest, indent=2) + "\n"
    write_all(files)  # the students' overridden results and the class's files, as one
    regrades.write_integrity(out_dir, plan)
    return manifest


PIN_FIELDS = ("source", "sha", "commit_time", "fetched_at", "deadline", "late", "late_factor")


def _pin_names(plan: Plan) -> list[str]:
    """The deadline columns, where the batch has deadlines or git submissions."""
    names = ["late"] if plan.deadline or any(s.deadline for s in plan.submissions) else []
    names += ["sha", "commit_time"] if any(s.sha for s in plan.submissions) else []
    return names + (["fetched_at"] if any(s.fetched_at for s in plan.submissions) else [])


def _pin_columns(plan: Plan, sub: Submission) -> dict[str, str]:
    return {name: getattr(sub, name) or "" for name in _pin_names(plan)}


def histogram(values: list[float], top: float, bins: int = 10, width: int = 30) -> list[str]:
    """Text bars: `[lo, hi)` ranges of points (the last closed) and a count each."""
    if top <= 0:
        top = max(values, default=0.0) or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int(v / top * bins)))] += 1
    most = max(counts) or 1
    lines = []
    for b, count in enumerate(counts):
        lo, hi = top * b / bins, top * (b + 1) / bins
        bracket = "]" if b == bins - 1 else ")"
        bar = "#" * round(count / most * width) if count else ""
        lines.append(f"[{lo:5.1f}, {hi:5.1f}{bracket} {count:4d} {bar}")
    return lines


def summary_markdown(plan: Plan, scores: dict[str, list[float]], maxima: dict[str, float],
                     failures: dict[str, list[str]], missing: list[str], not_graded: int,
                     seconds: float,
                     late: Sequence[tuple[str, str, float, float, float]] = ()) -> str:
    out = ["# Batch summary", "",
           f"{len(plan.submissions)} submission(s), labs {', '.join(plan.labs)}, seed "
           f"{plan.seed}; grading time {seconds:.0f} s in all (GPU waits excluded).", ""]
    if missing:
        out += [f"Not graded yet: {', '.join(missing)}.", ""]
    if not_graded:
        out += [f"{not_graded} lab result(s) have GPU parts that were **not graded** (no "
                "CUDA device): their points count in the maximum and earn nothing, so those "
                "grades are **provisional** (host parts only). Grade the batch again on a GPU "
                "for the final grades.", ""]
    out += ["## Scores per lab", "", "| Lab | Graded | Min | Median | Max | Out of |",
            "|---|---:|---:|---:|---:|---:|"]
    for lab in plan.labs:
        v = scores[lab]
        if v:
            out.append(f"| {lab} | {len(v)} | {fmt_points(min(v))} | "
                       f"{fmt_points(statistics.median(v))} | {fmt_points(max(v))} | "
                       f"{fmt_points(maxima.get(lab, 0))} |")
        else:
            out.append(f"| {lab} | 0 | | | | |")
    for lab in plan.labs:
        if scores[lab]:
            out += ["", f"### {lab}", "", "```",
                    *histogram(scores[lab], maxima.get(lab, 0.0)), "```"]
    out += ["", "## Failures by kind", "",
            "One kind per student and lab, the first that applies in this order.", "",
            "| Kind | Count | Students |", "|---|---:|---|"]
    for kind in FAILURE_KINDS:
        who = failures[kind]
        out.append(f"| {kind} | {len(who)} | {', '.join(who)} |")
    if late:
        out += ["", "## Late penalties", "",
                "The scores per lab above are before the penalty; the gradebook's are after.",
                "", "| Student | Late | Factor | Points | Before the penalty |",
                "|---|---|---:|---:|---:|"]
        out += [f"| {student} | {label} | ×{factor:g} | {fmt_points(after)} | "
                f"{fmt_points(before)} |" for student, label, factor, after, before in late]
    return "\n".join(out) + "\n"
