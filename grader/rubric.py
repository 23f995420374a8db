"""A lab's rubric: labs/NN_topic/grading.toml read into records and checked.

The rubric's own tables ([lab], [static], [release]) are declared here, below their
records; every graded part's table is declared by its part (grader/parts/, `schema`, with
what one key alone cannot say in its `read`), and `parse_rubric` reads them in the order of
grader/parts/kinds.py's registry into `Rubric.tables`. Each table lists its keys with their
types, whether they are required and their checks, read by grader/rubric_schema.py's one
loader; the defaults are the records'. grader/README.md documents the same keys, with lab
04's rubric as the example. `load_rubric` rejects what it does not know — a misspelt key
would otherwise silently change a grade — with a message that names the file, the table
and the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .parts import correctness, kinds, performance
from .paths import LabPaths
from .rubric_schema import (DERIVED, NUMBER, STRING, STRINGS, TOP, Above, Distinct, Filled,
                            Optional, Read, Required, SubTable, SubTables, Table, read_table)
from .rubric_schema import RubricError as RubricError  # `as`: the grader imports it from here
from .tomlreader import tomllib

RUBRIC_FILE = "grading.toml"


@dataclass
class StaticRules:
    """The lab's additions to the static checks' shared allow-lists (grader/allowlist.toml):
    symbols its object may also reference and define (globs on demangled names, `{ns}` for
    the lab's namespace) and files it may also include (path globs from the repository
    root). Everything else not in the shared lists is refused (grader/static_checks/)."""

    allow_reference: list[str] = field(default_factory=list)
    allow_define: list[str] = field(default_factory=list)
    allow_include: list[str] = field(default_factory=list)
    # What the shared list allows but this lab's lesson forbids (e.g. the runtime's
    # occupancy queries in the lab that computes occupancy), and why, for the message.
    refuse_reference: list[str] = field(default_factory=list)
    refuse_why: str = ""


@dataclass
class Rubric:
    """A lab's rubric: its [lab] table, its student files, its [static] additions and every
    graded part's table by its key in grading.toml (`tables`: a part's record, a list of
    them for an array of tables, None or [] where the rubric has none), which its part
    reads (grader/parts/)."""

    lab: LabPaths
    title: str
    student_files: list[str]  # relative to the repository root
    test_timeout_s: float = 300.0
    build_timeout_s: float = 600.0
    static: StaticRules = field(default_factory=StaticRules)
    tables: dict[str, Any] = field(default_factory=dict)

    @property
    def max_points(self) -> float:
        """The lab's maximum; bonus parts are not in it."""
        return kinds.max_points(self)

    @property
    def path(self) -> Path:
        return self.lab.lab_dir / RUBRIC_FILE


# --- the schema -----------------------------------------------------------------------------
# The rubric's own tables, declared once: their keys with their types, whether each is
# required, and their checks; the parts' tables come from their parts, in report order. A
# key declared without a default takes its record's (above); grader/README.md documents
# the same keys (grader/tests/test_rubric.py compares them).

def _inside_repository(patterns: list[str]) -> str | None:
    """[static].allow_include: each a path from the repository root, never out of it."""
    for pattern in patterns:
        if pattern.startswith("/") or ".." in Path(pattern).parts:
            return (f"names '{pattern}', which must be a path inside the repository, "
                    "relative to its root")
    return None


LAB_TABLE = Table("[lab]", Rubric, (
    Required("title", STRING, Filled()),
    Optional("test_timeout_s", NUMBER, Above(0)),
    Optional("build_timeout_s", NUMBER, Above(0)),
))

STATIC_TABLE = Table("[static]", StaticRules, (
    Optional("allow_reference", STRINGS),
    Optional("allow_define", STRINGS),
    Optional("allow_include", STRINGS, _inside_repository),
    Optional("refuse_reference", STRINGS),
    Optional("refuse_why", STRING),
))

# Read by grader/course/releases.py (the labs whose answers this lab's given code holds);
# the rubric only checks it.
RELEASE_TABLE = Table("[release]", None, (
    Optional("contains_answers_of", STRINGS, default=[]),
))


def rubric_schema() -> Table:
    """The whole of grading.toml: the rubric's own tables and, in report order, each part's
    (kinds.PARTS, read when a rubric is)."""
    return Table(TOP, Rubric, (
        # Default: the one file the folder names, labs/NN_topic/topic.cu.
        Optional("student_files", STRINGS, Filled("must name at least one file"), Distinct(),
                 default=DERIVED),
        Required("lab", SubTable(LAB_TABLE)),
        *(Optional(part.table, SubTables(part.schema) if part.many else SubTable(part.schema),
                   default=[] if part.many else None) for part in kinds.PARTS),
        Optional("static", SubTable(STATIC_TABLE), default=None),
        Optional("release", SubTable(RELEASE_TABLE), default=None),
    ))


# --- what one key alone cannot say ----------------------------------------------------------

def _student_files(lab: LabPaths, top: Read) -> list[str]:
    if "student_files" not in top.given:
        return [f"labs/{lab.folder}/{lab.topic}.cu"]
    lab_dir = lab.lab_dir.resolve()
    for name in top["student_files"]:
        path = Path(name)
        if path.is_absolute() or ".." in path.parts:
            raise top.fail(f"student file '{name}' must be a path relative to the repository "
                           f"root inside labs/{lab.folder}/")
        resolved = (lab.root / path).resolve()
        if resolved == lab_dir or lab_dir not in resolved.parents:
            raise top.fail(f"student file '{name}' is outside the lab folder labs/{lab.folder}/")
        if resolved.name == RUBRIC_FILE or "tests" in resolved.relative_to(lab_dir).parts[:-1]:
            raise top.fail(f"student file '{name}' may not be the rubric or a test file")
    return list(top["student_files"])


def parse_rubric(lab: LabPaths, text: str, file: str | None = None) -> Rubric:
    """A rubric from grading.toml text; `file` names it in error messages. The parts' tables
    are read in report order, so a part's `read` sees the tables before it (the groups a
    `requires` names)."""
    file = file or f"labs/{lab.folder}/{RUBRIC_FILE}"
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise RubricError(f"{file}: not valid TOML: {err}") from err

    top = read_table(rubric_schema(), doc, file)
    student_files = _student_files(lab, top)

    tables: dict[str, Any] = {}
    for part in kinds.PARTS:
        found: Read | list[Read] | None = top[part.table]
        if isinstance(found, list):
            tables[part.table] = [part.read(f, lab, tables) for f in found]
        else:
            tables[part.table] = part.read(found, lab, tables) if found else None

    static = StaticRules()
    if top["static"]:
        static = top["static"].build(StaticRules)
        if static.refuse_reference and not static.refuse_why:
            raise top.fail("[static].refuse_reference needs refuse_why: the reason a student "
                           "reads when the call is refused")

    return Rubric(lab, student_files=student_files, static=static, tables=tables,
                  **top["lab"].values)


def load_rubric(lab: LabPaths) -> Rubric:
    """The rubric of `lab` (labs/NN_topic/grading.toml); raises RubricError."""
    path = lab.lab_dir / RUBRIC_FILE
    file = f"labs/{lab.folder}/{RUBRIC_FILE}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise RubricError(f"{file}: no rubric (the file does not exist)") from err
    except (OSError, UnicodeDecodeError) as err:
        raise RubricError(f"{file}: cannot be read: {err}") from err
    return parse_rubric(lab, text, file)


def rubric_warnings(rubric: Rubric) -> list[str]:
    """Things that are allowed but probably unintended (e.g. points not totalling 100)."""
    warnings = []
    file = f"labs/{rubric.lab.folder}/{RUBRIC_FILE}"
    if abs(rubric.max_points - 100.0) > 1e-9:
        warnings.append(f"{file}: the points total {rubric.max_points:g}, not 100")
    if not correctness.groups(rubric):
        warnings.append(f"{file}: no [[correctness]] groups")
    for f in rubric.student_files:
        if not (rubric.lab.root / f).is_file():
            warnings.append(f"{file}: student file '{f}' does not exist")
    speed = performance.rules(rubric)
    if speed and not speed.requires:
        warnings.append(f"{file}: [performance] requires no correctness group, so a wrong "
                        "kernel could earn speed points")
    return warnings
