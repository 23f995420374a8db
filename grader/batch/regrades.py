"""What a batch does besides grading (grader/README.md, docs/cluster.md): pinning git
submissions to the commit due at the student's deadline, merging a new roster into an earlier
plan, choosing whom to grade again, rescoring stored results, applying `overrides.csv` and
writing the integrity report. The decisions themselves live in grader/batch/deadlines.py,
grader/batch/regrade_rules.py and grader/batch/integrity.py; this module applies them to a batch's
folder."""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from . import deadlines, integrity, regrade_rules
from .. import workspace
from ..atomic import write_all, write_atomic
from ..exports.registry import WRITERS
from ..result import GradeResult
from ..rubric import load_rubric
from .plan import BatchError, BatchProblems, Plan, Submission, read_stamp

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


def extension_problems(path: Path | None, students: list[str] | None = None) -> list[str]:
    """One line per extension or deadline of the CSV at `path` that cannot be read as a
    time, or that names a student not in `students` (when given)."""
    if path is None or not Path(path).is_file():
        return []
    problems = []
    with Path(path).open(newline="", encoding="utf-8-sig") as f:
        for number, row in enumerate(csv.DictReader(f), start=2):
            row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
            column = "extension" if row.get("extension") else "deadline"
            when, student = row.get(column), row.get("student")
            if not when:
                continue
            try:
                deadlines.parse_time(when)
            except deadlines.DeadlineError as err:
                problems.append(f"{path}:{number}: {column} of {student or 'nobody'}: {err}")
                continue
            if not student:
                problems.append(f"{path}:{number}: a {column} without a student")
            elif students is not None and student not in students:
                problems.append(f"{path}:{number}: {column} for {student!r}, who is not in "
                                "this batch")
    return problems


def is_git_submission(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


def read_fetched(text: str | None) -> dict[str, str] | str | None:
    """--fetched-at: one ISO 8601 time for every repository, or a CSV file with the columns
    student,fetched_at (student -> time). Raises BatchProblems (file, row, what is wrong)."""
    if not text:
        return None
    path = Path(text)
    if not path.is_file():
        try:
            deadlines.parse_time(text)
        except deadlines.DeadlineError as err:
            raise BatchProblems([f"--fetched-at: {err} (or give a CSV student,fetched_at)"]) \
                from None
        return text
    out, problems = {}, []
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        header = [h.strip().lower() for h in reader.fieldnames or []]
        if "student" not in header or "fetched_at" not in header:
            raise BatchProblems([f"{path}: needs the columns student,fetched_at (found: "
                                 f"{', '.join(header) or 'none'})"])
        for number, row in enumerate(reader, start=2):
            row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
            try:
                deadlines.parse_time(row.get("fetched_at", ""))
            except deadlines.DeadlineError as err:
                problems.append(f"{path}:{number}: {row.get('student') or 'nobody'}: {err}")
                continue
            out[row.get("student", "")] = row["fetched_at"]
    if problems:
        raise BatchProblems(problems)
    return out


def fetched_for(student: str, fetched: dict[str, str] | str | None) -> str | None:
    return fetched.get(student) if isinstance(fetched, dict) else fetched


def pin_git(subs: list[Submission], out_dir: Path, deadline: str | None,
            extensions: dict[str, str], policy: str,
            fetched: dict[str, str] | str | None = None) -> list[str]:
    """Each git submission replaced by its due commit's tree (`<out>/.pinned/<student>`),
    with the commit's SHA and time and the lateness recorded; the others keep their path.
    A repository with a fetch time (`fetched`, read_fetched) is graded at its HEAD, late by
    that time (deadlines.pin_fetched). Returns a warning per submission with no commit to
    grade."""
    late_policy = deadlines.LatePolicy.parse(policy)
    warnings = []
    for sub in subs:
        source = Path(sub.source or sub.path)
        due = deadlines.deadline_for(sub.student, deadline, extensions)
        sub.deadline = due.isoformat() if due else None
        if not is_git_submission(source):
            sub.late, sub.late_days = "", 0.0
            continue
        dest = out_dir / ".pinned" / sub.student
        shutil.rmtree(dest, ignore_errors=True)
        at = fetched_for(sub.student, fetched)
        try:
            pinned = (deadlines.pin_fetched(source, dest, deadlines.parse_time(at), due,
                                            late_policy) if at else
                      deadlines.pin_submission(source, dest, due, late_policy))
        except deadlines.DeadlineError as err:
            raise BatchError(f"{sub.student}: {err}") from None
        sub.fetched_at = deadlines.parse_time(at).isoformat() if at else None
        sub.source, sub.sha, sub.commit_time = str(source), pinned.sha, pinned.commit_time
        sub.late, sub.late_factor = pinned.late.label, pinned.late.factor
        sub.late_days = pinned.late.days
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
    """The students `--only` and `--only-status` pick (regrade_rules.select_students)."""
    statuses = {}
    for sub in plan.submissions:
        stamp = read_stamp(out_dir, sub.student)
        statuses[sub.student] = regrade_rules.student_statuses(
            _read_json(out_dir / sub.student / "result.json"), stamp.status if stamp else None)
    try:
        return set(regrade_rules.select_students([s.student for s in plan.submissions], statuses,
                                                 only, only_status))
    except regrade_rules.RegradeError as err:
        raise BatchError(str(err)) from None


# --------------------------------------------------------------------------- results

def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data


def rescore(out_dir: Path) -> list[str]:
    """Every stored result re-scaled to the labs' current rubrics (points-only changes),
    result.json and exports rewritten, a history line each. Returns the students
    rescored; raises BatchError when a rubric changed more than points."""
    plan = Plan.load(out_dir)
    rubrics = {lab.folder: load_rubric(lab) for lab in plan.lab_paths()}
    todo = []  # everything checked before anything is written
    problems = []
    for sub in plan.submissions:
        student_dir = out_dir / sub.student
        base = student_dir / GRADED_COPY
        base = base if base.is_file() else student_dir / "result.json"
        data = _read_json(base)
        if data is None:
            continue
        try:
            todo.append((student_dir, base, regrade_rules.rescore(data, rubrics)))
        except regrade_rules.RegradeError as err:
            problems.append(f"{base}: {err}")
    if problems:
        raise BatchProblems(problems + ["nothing was rescored"])
    files: dict[Path, str | None] = {}
    for student_dir, base, new in todo:
        files[base] = GradeResult.from_dict(new).to_json() + "\n"
        _result_files(plan, student_dir, new, files)  # collect applies the overrides again
        _history_file(student_dir, regrade_rules.history_entry(new, "rescored"), files)
    write_all(files)  # every student's files or none
    return [d.name for d, _, _ in todo]


def override_problems(out_dir: Path, plan: Plan) -> list[str]:
    """One line per row of `overrides.csv` that cannot be applied: unreadable, a student
    not in the batch, a lab or part the student's result does not have, points outside
    the part's range."""
    try:
        overrides = regrade_rules.read_overrides(out_dir / OVERRIDES)
    except regrade_rules.RegradeError as err:
        return [str(err)]
    problems = []
    students = {s.student for s in plan.submissions}
    for o in overrides:
        if o.student not in students:
            problems.append(f"{out_dir / OVERRIDES}:{o.line}: {o.student!r} is not in this "
                            "batch")
            continue
        student_dir = out_dir / o.student
        base = _read_json(student_dir / GRADED_COPY) or _read_json(student_dir / "result.json")
        if base is None:
            continue  # not graded yet: applied once it is
        try:
            regrade_rules.apply_overrides(base, o.student, [o])
        except regrade_rules.RegradeError as err:
            problems.append(str(err).replace(f"{OVERRIDES}:", f"{out_dir / OVERRIDES}:", 1))
    return problems


def apply_overrides(out_dir: Path, plan: Plan,
                    files: dict[Path, str | None] | None = None) -> dict[str, list[str]]:
    """`overrides.csv` applied to the grader's results (kept as result.graded.json): the
    student's result.json and exports show the staff's points and note; an override taken
    out gives the grader's result back. Every row is checked first (BatchProblems, nothing
    written); the files to write are added to `files` (path -> text, None: removed) and
    written all at once (atomic.write_all) when `files` is not given. Returns student ->
    notes."""
    problems = override_problems(out_dir, plan)
    if problems:
        raise BatchProblems(problems)
    overrides = regrade_rules.read_overrides(out_dir / OVERRIDES)
    mine_only = files is None
    files = {} if files is None else files
    notes: dict[str, list[str]] = {}
    for sub in plan.submissions:
        student_dir = out_dir / sub.student
        graded = student_dir / GRADED_COPY
        mine = [o for o in overrides if o.student == sub.student]
        if not mine:
            if graded.is_file():  # no override any more: the grader's result again
                _result_files(plan, student_dir, json.loads(graded.read_text()), files)
                files[graded] = None
            continue
        if graded.is_file():
            base = json.loads(graded.read_text())
        elif (student_dir / "result.json").is_file():
            text = (student_dir / "result.json").read_text()
            files[graded] = text
            base = json.loads(text)
        else:
            continue
        new, said = regrade_rules.apply_overrides(base, sub.student, mine)
        current = _read_json(student_dir / "result.json")
        if current != json.loads(GradeResult.from_dict(new).to_json()):
            _result_files(plan, student_dir, new, files)
            _history_file(student_dir, regrade_rules.history_entry(new, "override: " +
                                                                   "; ".join(said)), files)
        notes[sub.student] = said
    if mine_only:
        write_all(files)
    return notes


def _result_files(plan: Plan, student_dir: Path, data: dict[str, Any],
                  files: dict[Path, str | None]) -> None:
    """result.json and the plan's exports of `data`, as texts to write."""
    result = GradeResult.from_dict(data)
    result.refresh_late()  # the late factor kept, the scores beside it recomputed
    files[student_dir / "result.json"] = result.to_json() + "\n"
    for fmt in dict.fromkeys(plan.formats):
        path, make = WRITERS[fmt]
        files[student_dir / path] = make(result)


def _history_file(student_dir: Path, entry: dict[str, Any],
                  files: dict[Path, str | None]) -> None:
    """The history with one line more (written whole with the other files; the lines
    before are kept as they are)."""
    path = student_dir / regrade_rules.HISTORY_FILE
    before = files.get(path)
    if before is None:
        before = path.read_text(encoding="utf-8") if path.is_file() else ""
    files[path] = before + json.dumps(entry, sort_keys=True) + "\n"


# --------------------------------------------------------------------------- integrity

def write_integrity(out_dir: Path, plan: Plan) -> Path:
    """integrity.md: identical submissions, copies of the reference or the skeleton, and
    similarity-tester's ranking, per lab."""
    reports = []
    with tempfile.TemporaryDirectory(prefix="cml-integrity-") as tmp:
        trees: dict[str, Path | None] = {}
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
