"""Gradebooks an LMS imports as they are: Canvas's gradebook CSV and Moodle's grade import
CSV, one column per lab with its points possible; and the batch's gradebook joined to the
LMS's roster (its id, SIS, e-mail and section columns). Rows in, text out; the only file
work is `write_files`, which `batch --roster/--export` calls.

Canvas ("Grades > Import"): the columns `Student, ID, SIS User ID, SIS Login ID, Section`,
then one column per assignment; the first data row is `Points Possible`. A column named
like an assignment of the course's export ("Lab 04 (12345)") updates that assignment;
any other name creates a new one. Canvas matches a student by ID, SIS User ID or SIS Login
ID.

Moodle ("Grades > Import > CSV file"): one row per student with an identifier column
(`Email address`, `ID number` or `Username`, mapped to "useremail", "useridnumber" or
"username" in the import form) and one column per grade item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from .. import csvsafe
from ..atomic import write_all
from ..submissions import slug

IDENTITY = ("name", "id", "sis_user_id", "sis_login_id", "email", "section")
# Roster headers, lower case, as Canvas, Moodle and hand-made rosters spell them.
ALIASES = {
    "name": ("student", "name", "full name", "student name", "display name"),
    "id": ("id", "user id", "canvas id", "canvas user id", "lms id"),
    "sis_user_id": ("sis user id", "id number", "idnumber", "sis id", "student id"),
    "sis_login_id": ("sis login id", "login id", "username", "login"),
    "email": ("email", "email address", "e-mail", "e-mail address"),
    "section": ("section", "sections", "group", "groups"),
}
FIRST, LAST = ("first name",), ("last name", "surname")
NO_SUBMISSION = "no submission"
SCORED = ("graded", "timeout")  # statuses whose points are a grade
# A lab's gradebook status ("<lab> status") when its GPU parts were not graded (no CUDA
# device): its points are the host parts' only, and change once a GPU grades the rest.
PROVISIONAL = "provisional"
_PROVISIONAL_BEFORE = "incomplete: GPU parts not graded"  # a gradebook of grader 0.x
PROVISIONAL_NOTE = "(provisional: host parts only)"


@dataclass
class LabColumn:
    folder: str  # 04_tiled_matmul
    title: str
    points: float  # points possible

    @property
    def label(self) -> str:
        return f"Lab {self.folder[:2]}: {self.title}"

    @property
    def provisional_label(self) -> str:
        """The column of the lab's provisional grades: never the lab's own, so an import
        cannot put a host-only score where the final grade goes."""
        return f"{self.label} {PROVISIONAL_NOTE}"


def read_csv(text: str) -> tuple[list[str], list[dict[str, str]]]:
    columns, rows = csvsafe.read_csv(text)
    rows = [{k.strip(): v.strip() for k, v in row.items()} for row in rows]
    return [h.strip() for h in columns], rows


def roster_identity(row: dict[str, str]) -> dict[str, str]:
    """A roster row's identity fields (IDENTITY), whatever its LMS called them."""
    lower = {k.lower(): v for k, v in row.items()}
    out = {}
    for field, names in ALIASES.items():
        out[field] = next((lower[n] for n in names if lower.get(n)), "")
    if not out["name"]:
        first = next((lower[n] for n in FIRST if lower.get(n)), "")
        last = next((lower[n] for n in LAST if lower.get(n)), "")
        out["name"] = f"{last}, {first}" if first and last else first or last
    return out


class RosterError(ValueError):
    """The gradebook cannot be joined to the roster for sure: one line per problem."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


ID_FIELDS = ("id", "sis_user_id", "sis_login_id", "email")
ID_LABELS = {"id": "ID", "sis_user_id": "SIS user id", "sis_login_id": "SIS login id",
             "email": "e-mail"}


def _id_value(field: str, value: str) -> str:
    """E-mail addresses compare without case (as the LMSs compare them); every other id
    exactly."""
    return value.strip().lower() if field == "email" else value.strip()


def _name_forms(name: str) -> set[str]:
    """The spellings a roster name is matched by, each compared exactly (case included):
    the name with its spaces collapsed, "First Last" for "Last, First", and the folder
    name the grader makes of it (submissions.slug)."""
    name = " ".join(name.split())
    if not name:
        return set()
    forms = {name, slug(name)}
    if "," in name:
        last, first = (x.strip() for x in name.split(",", 1))
        forms |= {f"{first} {last}", slug(f"{first} {last}")}
    return forms


LINE = "\0line"  # a roster row's line in its file, set by read_roster


def _roster_line(row: dict[str, str], index: int) -> str:
    return str(row.get(LINE, index + 2))


def join_roster(gradebook: list[dict[str, str]], roster: list[dict[str, str]],
                downloads: dict[str, dict[str, Any]] | None = None,
                roster_name: str = "roster", missing: list[str] | None = None
                ) -> list[dict[str, str]]:
    """The gradebook's rows with the roster's identity columns after `student` (the
    students no roster row matches are added to `missing`; their rows keep no ids); a
    roster student without a row gets one with status "no submission". `downloads` (a
    staged Canvas or Moodle download's lms.json) supplies each student's LMS id and name.

    Matching is exact and never guessed: first the LMS id of the download against the
    roster's ID, then the student's folder name (or Canvas login) against an id, login or
    e-mail, then names; the first of these that finds anyone decides. Raises RosterError
    listing every row that matches several roster rows, every roster row two students
    match, and ids the roster gives twice."""
    downloads = downloads or {}
    people = [roster_identity(r) for r in roster]
    where = [f"{roster_name}:{_roster_line(r, i)}" for i, r in enumerate(roster)]
    by_id, by_name = _roster_keys(people)
    problems = _shared_ids(by_id, where)
    matched, taken = _match_rows(gradebook, downloads, by_id, by_name, where,
                                 [] if missing is None else missing, problems)
    if problems:
        raise RosterError(problems)
    return _joined_rows(gradebook, matched, downloads, people, taken)


def _roster_keys(people: list[dict[str, str]]
                 ) -> tuple[dict[tuple[str, str], list[int]], dict[str, list[int]]]:
    """The roster's rows by their ids ((field, _id_value)) and by their names' _name_forms."""
    by_id: dict[tuple[str, str], list[int]] = {}
    by_name: dict[str, list[int]] = {}
    for i, person in enumerate(people):
        for field in ID_FIELDS:
            if person[field]:
                by_id.setdefault((field, _id_value(field, person[field])), []).append(i)
        for form in _name_forms(person["name"]):
            by_name.setdefault(form, []).append(i)
    return by_id, by_name


def _shared_ids(by_id: dict[tuple[str, str], list[int]], where: list[str]) -> list[str]:
    """A problem for each id the roster gives to more than one row."""
    return [f"{' and '.join(where[i] for i in rows)}: the same {ID_LABELS[field]} {value!r} "
            "(each student's must differ)" for (field, value), rows in by_id.items()
            if len(rows) > 1]


def _match_rows(gradebook: list[dict[str, str]], downloads: dict[str, dict[str, Any]],
                by_id: dict[tuple[str, str], list[int]], by_name: dict[str, list[int]],
                where: list[str], missing: list[str], problems: list[str]
                ) -> tuple[list[int | None], dict[int, str]]:
    """The roster row of each gradebook row (None: none, or several) and the student of each."""
    taken: dict[int, str] = {}
    matched: list[int | None] = []
    for row in gradebook:
        student = row.get("student", "")
        found, said = _candidates(student, downloads.get(student, {}), by_id, by_name)
        if len(found) > 1:
            problems.append(f"{student}: {said} matches {len(found)} roster rows "
                            f"({', '.join(where[i] for i in sorted(found))}); give the "
                            "roster's ids (or name the student by login or e-mail) to tell "
                            "them apart")
            matched.append(None)
            continue
        index = next(iter(found), None)
        if index is not None and index in taken:
            problems.append(f"{where[index]}: matches two students, {taken[index]} and "
                            f"{student} (one roster row is one student)")
        if index is None:
            missing.append(student)
        else:
            taken[index] = student
        matched.append(index)
    return matched, taken


def _candidates(student: str, info: dict[str, Any], by_id: dict[tuple[str, str], list[int]],
                by_name: dict[str, list[int]]) -> tuple[set[int], str]:
    """The roster rows a student matches, and by what: LMS id, then folder or login, then names."""
    tiers = [
        [("id", info.get("lms_id", ""))] if info.get("lms_id") else [],
        [(f, v) for v in (student, info.get("name", "")) if v for f in ID_FIELDS],
    ]
    found: set[int] = set()
    said = ""
    for tier in tiers:
        found = {i for f, v in tier for i in by_id.get((f, _id_value(f, v)), [])}
        said = "the id"
        if found:
            break
    if not found:
        names = [v for v in (info.get("name", ""), student) if v]
        found = {i for v in names for form in _name_forms(v) for i in by_name.get(form, [])}
        said = f"the name {names[0]!r}" if names else ""
    return found, said


def _joined_rows(gradebook: list[dict[str, str]], matched: list[int | None],
                 downloads: dict[str, dict[str, Any]], people: list[dict[str, str]],
                 taken: dict[int, str]) -> list[dict[str, str]]:
    """The gradebook's rows with their ids, then a "no submission" row per roster student left."""
    out = []
    for row, index in zip(gradebook, matched):
        info = downloads.get(row.get("student", ""), {})
        identity = dict.fromkeys(IDENTITY, "")
        if info:
            identity.update(name=info.get("name", ""), id=info.get("lms_id", ""))
        if index is not None:
            identity.update({k: v for k, v in people[index].items() if v})
        out.append(_with_identity(row, identity))
    columns = list(gradebook[0]) if gradebook else ["student", "total", "max_points", "status"]
    for i, person in enumerate(people):
        if i not in taken:
            row = dict.fromkeys(columns, "")
            row["student"] = person["sis_login_id"] or person["email"] or person["name"]
            row["status"] = NO_SUBMISSION
            out.append(_with_identity(row, person))
    return out


def _with_identity(row: dict[str, str], identity: dict[str, str]) -> dict[str, str]:
    out = {"student": row.get("student", "")}
    out.update({k: identity.get(k, "") for k in IDENTITY})
    out.update({k: v for k, v in row.items() if k != "student"})
    return out


def to_csv(rows: list[dict[str, str]], columns: list[str] | None = None) -> str:
    """CSV text whose cells are safe to open (grader/csvsafe.py)."""
    return csvsafe.to_csv(rows, columns or (list(rows[0]) if rows else []))


def is_provisional(row: dict[str, str], lab: LabColumn) -> bool:
    """The row's points for `lab` are the host parts' only (graded without a GPU)."""
    return row.get(f"{lab.folder} status", "") in (PROVISIONAL, _PROVISIONAL_BEFORE)


def _points(row: dict[str, str], lab: LabColumn, provisional: bool = False) -> str:
    """The row's points for the lab's own column (provisional=False) or for its provisional
    column; "" where they belong in the other one or are no grade."""
    if row.get("status") not in SCORED or is_provisional(row, lab) != provisional:
        return ""
    return row.get(lab.folder, "")


def _columns(rows: list[dict[str, str]], labs: list[LabColumn],
             header: Callable[[LabColumn], str],
             provisional_header: Callable[[LabColumn], str]
             ) -> list[tuple[str, LabColumn, bool]]:
    """(header, lab, provisional) per grade column: each lab's own, and after it a column of
    its provisional grades where a row has any."""
    out = []
    for lab in labs:
        out.append((header(lab), lab, False))
        if any(is_provisional(row, lab) and row.get("status") in SCORED for row in rows):
            out.append((provisional_header(lab), lab, True))
    return out


def provisional_count(rows: list[dict[str, str]], labs: list[LabColumn]) -> int:
    """How many grades of `rows` are provisional (host parts only)."""
    return sum(1 for row in rows for lab in labs
               if is_provisional(row, lab) and row.get("status") in SCORED)


def canvas_header(lab: LabColumn, course_columns: list[str]) -> str:
    """The course's own column for the lab when its export has one ("Lab 04 ... (123)"),
    else a new assignment's name."""
    number = lab.folder[:2]
    patterns = [re.escape(lab.folder), rf"\blab\s*0*{int(number)}\b", re.escape(lab.title)]
    for column in course_columns:
        if PROVISIONAL_NOTE in column:
            continue  # an assignment an earlier export made for provisional grades
        if re.search(r"\(\d+\)\s*$", column) and any(re.search(p, column, re.IGNORECASE)
                                                     for p in patterns):
            return column
    return lab.label


def canvas_provisional_header(lab: LabColumn, course_columns: list[str]) -> str:
    """The assignment an earlier export made for the lab's provisional grades, when the
    course's export has it ("... (provisional: host parts only) (123)"), else its name."""
    return next((c for c in course_columns if c.startswith(lab.provisional_label)
                 and re.search(r"\(\d+\)\s*$", c)), lab.provisional_label)


def to_canvas(rows: list[dict[str, str]], labs: list[LabColumn],
              course_columns: Sequence[str] = ()) -> str:
    """Canvas's gradebook import CSV (rows: a joined gradebook). A grade made without a GPU
    (host parts only) goes in a column of its own named "... (provisional: host parts
    only)", which Canvas imports as an assignment of that name, never in the lab's."""
    grades = _columns(rows, labs, lambda lab: canvas_header(lab, list(course_columns)),
                      lambda lab: canvas_provisional_header(lab, list(course_columns)))
    columns = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
               *[h for h, _, _ in grades]]
    out = [dict(zip(columns, ["Points Possible", "", "", "", "",
                              *[_fmt(lab.points) for _, lab, _ in grades]]))]
    for row in rows:
        line = {"Student": row.get("name") or row.get("student") or "", "ID": row.get("id", ""),
                "SIS User ID": row.get("sis_user_id", ""),
                "SIS Login ID": row.get("sis_login_id", ""), "Section": row.get("section", "")}
        line.update({h: _points(row, lab, provisional) for h, lab, provisional in grades})
        out.append(line)
    return to_csv(out, columns)


def moodle_header(lab: LabColumn) -> str:
    return f"{lab.label} (out of {_fmt(lab.points)})"


def to_moodle(rows: list[dict[str, str]], labs: list[LabColumn]) -> str:
    """Moodle's grade import CSV: identifiers, then one column per lab, and beside a lab
    with grades made without a GPU a column of those, "... (provisional: host parts only)
    (out of N)", which the import form shows by that name."""
    grades = _columns(rows, labs, moodle_header,
                      lambda lab: f"{lab.provisional_label} (out of {_fmt(lab.points)})")
    columns = ["Email address", "ID number", "Username", "Full name", *[h for h, _, _ in grades]]
    out = []
    for row in rows:
        line = {"Email address": row.get("email", ""), "ID number": row.get("sis_user_id", ""),
                "Username": row.get("sis_login_id", ""),
                "Full name": row.get("name") or row.get("student") or ""}
        line.update({h: _points(row, lab, provisional) for h, lab, provisional in grades})
        out.append(line)
    return to_csv(out, columns)


def unidentified(rows: list[dict[str, str]], export: str) -> list[str]:
    """Students the LMS could not match on import (no identifier it reads)."""
    fields = ("id", "sis_user_id", "sis_login_id") if export == "canvas" else (
        "email", "sis_user_id", "sis_login_id")
    return [r.get("student", "") for r in rows if not any(r.get(f) for f in fields)]


def _fmt(x: float) -> str:
    return f"{x:g}"


EXPORTS = {"canvas": "canvas-import.csv", "moodle": "moodle-import.csv"}


def write_files(out_dir: Path, labs: list[LabColumn], roster: Path | None,
                exports: list[str], downloads: dict[str, dict[str, Any]] | None = None
                ) -> list[str]:
    """Joins DIR/gradebook.csv to the roster (rewriting it) and writes each export, all of
    them or none (atomic.write_all); returns warnings (students no roster row or export can
    identify). Raises RosterError before writing when the join is not sure."""
    out_dir = Path(out_dir)
    _cols, gradebook = read_csv((out_dir / "gradebook.csv").read_text(encoding="utf-8"))
    course_columns, roster_rows = read_roster(roster) if roster is not None else ([], [])
    missing: list[str] = []
    rows = join_roster(gradebook, roster_rows, downloads,
                       Path(roster).name if roster is not None else "roster", missing)
    warnings = [f"{student}: in no row of {Path(roster).name} (their grade has no LMS "
                "student to go to)" for student in missing] if roster is not None else []
    files: dict[Path, str | None] = {}
    if roster is not None:
        files[out_dir / "gradebook.csv"] = to_csv(rows)
        summary = out_dir / "summary.md"
        if summary.is_file():  # the roster's students without a submission, by that name
            files[summary] = summary_roster_only(
                summary.read_text(encoding="utf-8"),
                [r.get("name") or r["student"] for r in rows[len(gradebook):]])
    for export in exports:
        text = (to_canvas(rows, labs, course_columns) if export == "canvas"
                else to_moodle(rows, labs))
        files[out_dir / EXPORTS[export]] = text
        provisional = provisional_count(rows, labs)
        if provisional:
            warnings.append(f"{EXPORTS[export]}: {provisional} grade(s) are PROVISIONAL, host "
                            "parts only (graded without a GPU): they are in the columns named "
                            f"'{PROVISIONAL_NOTE}', not in the labs' own; grade the batch again "
                            "on a GPU for the final grades")
        missing = unidentified(rows, export)
        if missing:
            warnings.append(f"{EXPORTS[export]}: no identifier {export.capitalize()} can match "
                            f"for {', '.join(missing)} (give --roster with their ids)")
    write_all(files)
    return warnings


ROSTER_ONLY = "## No submission (on the roster only)"


def summary_roster_only(summary: str, names: list[str]) -> str:
    """summary.md with its section of the roster's students who have no submission in the
    batch (their gradebook status: no submission) replaced by one naming `names`."""
    text = summary.split("\n" + ROSTER_ONLY + "\n", 1)[0].rstrip("\n") + "\n"
    if names:
        text += (f"\n{ROSTER_ONLY}\n\n{len(names)} student(s) of the roster have no submission "
                 f"in the batch (status `{NO_SUBMISSION}`, left blank in the LMS files): "
                 f"{', '.join(names)}.\n")
    return text


def read_roster(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The roster's columns and its students' rows (Canvas's "Points Possible" row left
    out), each row with its line in the file (LINE)."""
    columns, rows = read_csv(Path(path).read_text(encoding="utf-8-sig"))
    out = []
    for number, row in enumerate(rows, start=2):
        if "points possible" not in " ".join(row.values()).lower():
            out.append({**row, LINE: str(number)})
    return columns, out


__all__ = ["LabColumn", "join_roster", "RosterError", "read_roster", "to_canvas", "to_moodle",
           "roster_identity", "write_files", "EXPORTS", "read_csv", "PROVISIONAL",
           "is_provisional", "provisional_count"]
