"""Regrades after a batch (grader/README.md, "Grading a class"): which students to grade
again (`--only`, `--only-status`), merging their rows into the existing gradebook,
recomputing points from stored results after a rubric change that touches only points
(`--rescore`), the staff's overrides (`overrides.csv`) and an append-only grade history.

Pure functions on result dictionaries (the `cml-result/1` JSON) and gradebook rows, except
the few that read or append a file, which say so.
"""

from __future__ import annotations

import csv
import copy
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..exports import lms
from ..parts import correctness
from ..parts.kinds import GATE_KINDS, bonus_offers, maxima
from ..result import NO_SUBMISSION

# The gradebook's statuses, one meaning each (grader/README.md, "Statuses in the gradebook"):
# a student's `status` (how their grading ended) and a lab's `<lab> status` (what its points
# are). `--only-status` picks students by either.
STUDENT_STATUSES = ("graded", "timeout", "error", "interrupted", "not graded yet",
                    "no submission")
LAB_STATUSES = ("complete", "provisional", "not measured", "review", "no submission")
STATUSES = tuple(dict.fromkeys(STUDENT_STATUSES + LAB_STATUSES))
HISTORY_FILE = "history.jsonl"
ROUND = 4


class RegradeError(ValueError):
    """Said to the user as is."""


def _round(x: float) -> float:
    return round(x + 0.0, ROUND) + 0.0


# --------------------------------------------------------------------------- selecting

def split_list(text: str | Iterable[str] | None) -> list[str]:
    """"a,b , c" (or repeated options) -> ["a", "b", "c"]."""
    if text is None:
        return []
    items = [text] if isinstance(text, str) else list(text)
    return [x.strip() for item in items for x in item.split(",") if x.strip()]


def student_status(result: dict[str, Any] | None, stamp_status: str | None) -> str:
    """The gradebook's `status` of a student, one of STUDENT_STATUSES: "not graded yet"
    without a result, "no submission" when none of the graded labs had its file, else the
    stamp's (graded, timeout, error, interrupted)."""
    if result is None:
        return "not graded yet"
    labs = result.get("labs", [])
    if (stamp_status or "graded") == "graded" and labs and all(
            lab.get("failure") == "no_submission" for lab in labs):
        return "no submission"
    return stamp_status or "graded"


def lab_status(lab: dict[str, Any]) -> str:
    """The gradebook's per-lab status, one of LAB_STATUSES (grader/README.md,
    "Statuses in the gradebook"): no submission, review, provisional, not measured or
    complete, the first that applies."""
    parts = lab.get("parts", [])
    if lab.get("failure") == NO_SUBMISSION:
        return lms.NO_SUBMISSION
    if any(p.get("status") == "review" for p in parts):
        return "review"
    if any(p.get("status") == "not_graded" and p.get("max_points", 0) > 0 for p in parts):
        return lms.PROVISIONAL
    if any(p.get("status") == "not_measured" and p.get("details", {}).get("points_if_measured")
           for p in parts):
        return "not measured"
    return "complete"


def student_statuses(result: dict[str, Any] | None, stamp_status: str | None) -> set[str]:
    """The statuses `--only-status` can pick a student by: their student_status (and, with
    no result, the stamp's: error, interrupted) and the status of each of their labs
    (LAB_STATUSES, lab_status)."""
    if result is None:
        return {"not graded yet"} | ({stamp_status} if stamp_status else set())
    return ({student_status(result, stamp_status)}
            | {lab_status(lab) for lab in result.get("labs", [])})


def select_students(students: list[str], statuses: dict[str, set[str]],
                    only: Iterable[str] | str | None = None,
                    only_status: Iterable[str] | str | None = None) -> list[str]:
    """The students to grade again, in the plan's order: those named in `only` and/or those
    with one of the statuses in `only_status` (both given: a student must be in both).
    Neither given: everyone. Unknown names or statuses are refused."""
    names, wanted = split_list(only), split_list(only_status)
    unknown = [n for n in names if n not in students]
    if unknown:
        raise RegradeError(f"--only: not in this batch: {', '.join(unknown)}")
    bad = [s for s in wanted if s not in STATUSES]
    if bad:
        raise RegradeError(f"--only-status: unknown status {', '.join(bad)} (one of "
                           f"{', '.join(STATUSES)})")
    chosen = []
    for student in students:
        if names and student not in names:
            continue
        if wanted and not statuses.get(student, set()) & set(wanted):
            continue
        chosen.append(student)
    return chosen


# --------------------------------------------------------------------------- the gradebook

# --------------------------------------------------------------------------- rescoring

def rubric_maxima(rubric: Any) -> dict[tuple[str, str], float]:
    """(part kind, part name) -> points of a rubric.Rubric, named as the pipeline names its
    parts; a plain {(kind, name): points} dict is returned as is."""
    if isinstance(rubric, dict):
        return dict(rubric)
    return {key: float(points) for key, points in maxima(rubric).items()}


def _totals(result: dict[str, Any]) -> None:
    for lab in result.get("labs", []):
        lab["points"] = _round(sum(p["points"] for p in lab["parts"]))
        lab["max_points"] = _round(sum(p["max_points"] for p in lab["parts"]))
    result["points"] = _round(sum(lab["points"] for lab in result.get("labs", [])))
    result["max_points"] = _round(sum(lab["max_points"] for lab in result.get("labs", [])))


def rescore(result: dict[str, Any], rubrics: dict[str, Any]) -> dict[str, Any]:
    """A copy of `result` with each lab's parts re-scaled to the new rubric's points
    (earned * new max / old max; every score the grader gives is proportional to the
    part's points, so this is what grading again would give). `rubrics` maps a lab folder
    to its rubric.Rubric (or to a {(kind, name): points} dict). Refused with a RegradeError
    when a rubric changed more than points: a part added, removed or renamed, or a part
    that had no points now has some (grade again then)."""
    out = copy.deepcopy(result)
    problems = []
    for lab in out.get("labs", []):
        if lab["lab"] not in rubrics:
            problems.append(f"{lab['lab']}: no rubric given")
            continue
        rubric = rubrics[lab["lab"]]
        new = rubric_maxima(rubric)
        offers = {} if isinstance(rubric, dict) else bonus_offers(rubric)
        scored = {(p["kind"], p["name"]): p for p in lab["parts"]
                  if p["kind"] not in GATE_KINDS}
        added = sorted(set(new) - set(scored))
        gone = sorted(set(scored) - set(new))
        if added or gone:
            what = [f"new part(s) {', '.join(n for _, n in added)}" if added else "",
                    f"part(s) no longer in the rubric {', '.join(n for _, n in gone)}"
                    if gone else ""]
            problems.append(f"{lab['lab']}: the rubric changed more than points ("
                            f"{'; '.join(w for w in what if w)}): grade again instead")
            continue
        for key, part in scored.items():
            old_max, new_max = float(part["max_points"]), new[key]
            scale = _bonus_scale(part, offers.get(key))
            if old_max != new_max:
                if old_max <= 0:
                    problems.append(f"{lab['lab']}: part {key[1]} had no points and now has "
                                    f"{new_max:g}: grade again instead")
                    continue
                scale = new_max / old_max
                part["max_points"] = _round(new_max)
            if scale == 1.0:
                continue
            part["points"] = _round(part["points"] * scale)
            if part["kind"] == correctness.KIND:
                for test in lab.get("tests", []):
                    if test.get("group") == key[1]:
                        test["points"] = _round(test["points"] * scale)
                        test["max_points"] = _round(test["max_points"] * scale)
    if problems:
        raise RegradeError("cannot rescore: " + "; ".join(problems))
    _totals(out)
    return out


def _bonus_scale(part: dict[str, Any], offer: float | None) -> float:
    """How much a bonus part's earnings scale by: its new offer over the one it was graded
    on (its maximum stays 0: a bonus is on top of the lab's); 1 for any other part. The
    part's details take the new offer."""
    old = (part.get("details") or {}).get("bonus")
    if offer is None or not old or float(old) == offer:
        return 1.0
    part["details"] = {**part["details"], "bonus": offer}
    return offer / float(old)


# --------------------------------------------------------------------------- overrides

@dataclass
class Override:
    student: str
    lab: str  # a lab folder or its number ("04")
    part: str  # a part's name as in the result ("Memory safety", a correctness group)
    points: float
    note: str
    line: int = 0


def read_overrides(path: Path) -> list[Override]:
    """overrides.csv: columns student,lab,part,points,note (reads a file; none: [])."""
    path = Path(path)
    if not path.is_file():
        return []
    out = []
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        header = [h.strip().lower() for h in reader.fieldnames or []]
        need = ["student", "lab", "part", "points", "note"]
        if any(h not in header for h in need):
            raise RegradeError(f"{path}: needs the columns {','.join(need)} (found: "
                               f"{', '.join(header) or 'none'})")
        for number, row in enumerate(reader, start=2):
            row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
            if not any(row.values()):
                continue
            try:
                points = float(row["points"])
            except ValueError:
                raise RegradeError(f"{path}:{number}: points {row['points']!r} is not a "
                                   "number") from None
            if not row["note"]:
                raise RegradeError(f"{path}:{number}: an override needs a note for the "
                                   "student")
            out.append(Override(row["student"], row["lab"], row["part"], points, row["note"],
                                number))
    return out


def _lab_matches(folder: str, lab: str) -> bool:
    return folder == lab or folder.split("_")[0] == lab.zfill(2)


def apply_overrides(result: dict[str, Any], student: str, overrides: list[Override]
                    ) -> tuple[dict[str, Any], list[str]]:
    """A copy of `result` with the student's overrides applied (the part's points set, its
    reason saying who changed it and why, `details.override` the points it had), and the
    notes to show the student. An override naming no lab or part of the result, or points
    outside 0..max, is refused."""
    out = copy.deepcopy(result)
    notes = []
    for o in (o for o in overrides if o.student == student):
        lab = next((x for x in out.get("labs", []) if _lab_matches(x["lab"], o.lab)), None)
        part = None if lab is None else next(
            (p for p in lab["parts"] if p["name"].lower() == o.part.lower()), None)
        if lab is None or part is None:
            raise RegradeError(f"overrides.csv:{o.line}: {student} has no lab {o.lab} part "
                               f"{o.part!r}")
        if not 0 <= o.points <= part["max_points"]:
            raise RegradeError(f"overrides.csv:{o.line}: {o.points:g} points is outside 0 to "
                               f"{part['max_points']:g} for {o.part}")
        was = part["points"]
        part["details"] = dict(part.get("details") or {}, override={"from": was,
                                                                     "note": o.note})
        part["points"] = _round(o.points)
        part["status"] = "graded"
        note = (f"{lab['lab']} {part['name']}: set to {o.points:g} of "
                f"{part['max_points']:g} by the course staff (was {was:g}): {o.note}")
        part["reason"] = note
        notes.append(note)
    if notes:
        _totals(out)
    return out, notes


# --------------------------------------------------------------------------- history

def history_entry(result: dict[str, Any], reason: str, when: str | None = None) -> dict[str, Any]:
    return {"time": when or time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "labs": {lab["lab"]: lab["points"] for lab in result.get("labs", [])},
            "points": result.get("points"), "max_points": result.get("max_points"),
            "reason": reason}


def append_history(student_dir: Path, entry: dict[str, Any]) -> Path:
    """Appends one line to `<student_dir>/history.jsonl` (never rewrites it)."""
    path = Path(student_dir) / HISTORY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, sort_keys=True) + "\n")
    return path


