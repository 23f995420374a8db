"""What a batch does besides grading (grader/README.md, docs/cluster.md): pinning git
submissions to the commit due at the student's deadline, merging a new roster into an earlier
plan, choosing whom to grade again, rescoring stored results, applying `overrides.csv` and
writing the integrity report. The decisions themselves live in grader/deadlines.py,
grader/regrade.py and grader/integrity.py; this module applies them to a batch's folder."""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
from pathlib import Path

from .. import deadlines, integrity, regrade, workspace
from ..atomic import write_atomic
from ..exports import write_exports
from ..result import GradeResult
from ..rubric import load_rubric
from .plan import BatchError, Plan, Submission, read_stamp

GRADED_COPY = "result.graded.json"  # the grader's own result, before overrides
OVERRIDES = "overrides.csv"


# --------------------------------------------------------------------------- the plan

def read_extensions(path: Path | None) -> dict[str, str]:
    """student -> deadline from a CSV with a `student` column and an `extension` or
    `deadline` column (the submissions roster or the LMS roster); {} without one."""
    if path is None or not Path(path).is_file():
        return {}
    with Path(path).open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        out = {}
        for row in reader:
            row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
            when = row.get("extension") or row.get("deadline")
            if row.get("student") and when:
                out[row["student"]] = when
    return out


def is_git_submission(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


def pin_git(subs: list[Submission], out_dir: Path, deadline: str | None,
            extensions: dict[str, str], policy: str) -> list[str]:
    """Each git submission replaced by its due commit's tree (`<out>/.pinned/<student>`),
    with the commit's SHA and time and the lateness recorded; the others keep their path.
    Returns a warning per submission with no commit to grade."""
    late_policy = deadlines.LatePolicy.parse(policy)
    warnings = []
    for sub in subs:
        source = Path(sub.source or sub.path)
        due = deadlines.deadline_for(sub.student, deadline, extensions)
        sub.deadline = due.isoformat() if due else None
        if not is_git_submission(source):
            sub.late = ""
            continue
        dest = out_dir / ".pinned" / sub.student
        shutil.rmtree(dest, ignore_errors=True)
        try:
            pinned = deadlines.pin_submission(source, dest, due, late_policy)
        except deadlines.DeadlineError as err:
            raise BatchError(f"{sub.student}: {err}") from None
        sub.source, sub.sha, sub.commit_time = str(source), pinned.sha, pinned.commit_time
        sub.late, sub.late_factor = pinned.late.label, pinned.late.factor
        if pinned.error:
            dest.mkdir(parents=True, exist_ok=True)  # an empty submission: "no submission"
            warnings.append(f"{sub.student}: {pinned.error}")
        sub.path = str(dest.resolve())
    return warnings


def merge_plans(old: Plan | None, new: list[Submission]) -> list[Submission]:
    """The earlier plan's submissions with the new ones in place of the same students' (a
    run for one student keeps everybody else), new students after."""
    if old is None:
        return new
    by_name = {s.student: s for s in new}
    merged = [by_name.pop(s.student, s) for s in old.submissions]
    return merged + [s for s in new if s.student in by_name]


def chosen(out_dir: Path, plan: Plan, only: str | None, only_status: str | None) -> set[str]:
    """The students `--only` and `--only-status` pick (regrade.select_students)."""
    statuses = {}
    for sub in plan.submissions:
        stamp = read_stamp(out_dir, sub.student)
        statuses[sub.student] = regrade.student_statuses(
            _read_json(out_dir / sub.student / "result.json"), stamp.status if stamp else None)
    try:
        return set(regrade.select_students([s.student for s in plan.submissions], statuses,
                                           only, only_status))
    except regrade.RegradeError as err:
        raise BatchError(str(err)) from None


# --------------------------------------------------------------------------- results

def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write_result(plan: Plan, student_dir: Path, data: dict) -> None:
    result = GradeResult.from_dict(data)
    write_atomic(student_dir / "result.json", result.to_json() + "\n")
    write_exports(result, student_dir, plan.formats)


def rescore(out_dir: Path) -> list[str]:
    """Every stored result re-scaled to the labs' current rubrics (points-only changes),
    result.json and exports rewritten, a history line each. Returns the students
    rescored; raises BatchError when a rubric changed more than points."""
    plan = Plan.load(out_dir)
    rubrics = {lab.folder: load_rubric(lab) for lab in plan.lab_paths()}
    todo = []  # everything checked before anything is written
    for sub in plan.submissions:
        student_dir = out_dir / sub.student
        base = student_dir / GRADED_COPY
        base = base if base.is_file() else student_dir / "result.json"
        data = _read_json(base)
        if data is None:
            continue
        try:
            todo.append((student_dir, base, regrade.rescore(data, rubrics)))
        except regrade.RegradeError as err:
            raise BatchError(f"{sub.student}: {err}; nothing was rescored") from None
    for student_dir, base, new in todo:
        write_atomic(base, GradeResult.from_dict(new).to_json() + "\n")
        _write_result(plan, student_dir, new)  # collect applies the overrides again
        regrade.append_history(student_dir, regrade.history_entry(new, "rescored"))
    return [d.name for d, _, _ in todo]


def apply_overrides(out_dir: Path, plan: Plan) -> dict[str, list[str]]:
    """`overrides.csv` applied to the grader's results (kept as result.graded.json): the
    student's result.json and exports show the staff's points and note; an override taken
    out gives the grader's result back. Returns student -> notes."""
    try:
        overrides = regrade.read_overrides(out_dir / OVERRIDES)
    except regrade.RegradeError as err:
        raise BatchError(str(err)) from None
    notes: dict[str, list[str]] = {}
    for sub in plan.submissions:
        student_dir = out_dir / sub.student
        graded = student_dir / GRADED_COPY
        mine = [o for o in overrides if o.student == sub.student]
        if not mine:
            if graded.is_file():  # no override any more: the grader's result again
                _write_result(plan, student_dir, json.loads(graded.read_text()))
                graded.unlink()
            continue
        if not graded.is_file():
            if not (student_dir / "result.json").is_file():
                continue
            shutil.copyfile(student_dir / "result.json", graded)
        base = json.loads(graded.read_text())
        try:
            new, said = regrade.apply_overrides(base, sub.student, mine)
        except regrade.RegradeError as err:
            raise BatchError(str(err)) from None
        current = _read_json(student_dir / "result.json")
        if current != json.loads(GradeResult.from_dict(new).to_json()):
            _write_result(plan, student_dir, new)
            regrade.append_history(student_dir, regrade.history_entry(new, "override: " +
                                                                      "; ".join(said)))
        notes[sub.student] = said
    unknown = sorted({o.student for o in overrides} - {s.student for s in plan.submissions})
    if unknown:
        raise BatchError(f"{OVERRIDES}: not in this batch: {', '.join(unknown)}")
    return notes


def lab_status(lab: dict) -> str:
    """The gradebook's per-lab status: complete, incomplete (GPU parts or tools missing)
    or review (a part waits for a person)."""
    parts = lab.get("parts", [])
    if any(p.get("status") == "review" for p in parts):
        return "review"
    if any(p.get("status") == "not_graded" and p.get("max_points", 0) > 0 for p in parts):
        return "incomplete: GPU parts not graded"
    if any(p.get("status") == "not_measured" and p.get("max_points", 0) > 0 for p in parts):
        return "incomplete: parts not measured"
    return "complete"


# --------------------------------------------------------------------------- integrity

def write_integrity(out_dir: Path, plan: Plan) -> Path:
    """integrity.md: identical submissions, copies of the reference or the skeleton, and
    similarity-tester's ranking, per lab."""
    reports = []
    with tempfile.TemporaryDirectory(prefix="cml-integrity-") as tmp:
        trees = {}
        for i, sub in enumerate(plan.submissions):
            try:
                trees[sub.student] = workspace.submission_tree(Path(sub.path), Path(tmp) / str(i))
            except (OSError, RuntimeError):
                trees[sub.student] = None  # reported as "no student file"
        for lab in plan.lab_paths():
            rels = load_rubric(lab).student_files
            subs = {s: integrity.read_files(t, rels) if t else {r: None for r in rels}
                    for s, t in trees.items()}
            reference, skeleton = integrity.lab_sources(Path(plan.repo), lab.folder, rels)
            reports.append(integrity.lab_report(lab.folder, subs, reference, skeleton))
    return write_atomic(out_dir / "integrity.md", integrity.markdown(reports))
