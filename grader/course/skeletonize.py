"""Makes each lab's student skeleton from its reference solution.

A solution file marks what the student writes:

    // >>> TODO(lab04): One sentence saying what to do here.
    ...reference code...
    // === stub
    // return 0;
    // <<<

The skeleton keeps everything outside the markers, replaces each region by its TODO line
(if the opening marker has one) followed by the stub lines uncommented (the "// === stub"
part is optional). Regions do not nest.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..paths import LabPaths

BEGIN = re.compile(r"^(?P<indent>\s*)// >>>(?: (?P<todo>TODO\(lab\w+\): .+))?\s*$")
STUB = re.compile(r"^\s*// === stub\s*$")
END = re.compile(r"^\s*// <<<\s*$")


class MarkerError(ValueError):
    """A solution file whose markers do not pair up."""


def make_skeleton(solution_text: str, source: str = "<solution>") -> str:
    """The skeleton text for one solution file."""
    out: list[str] = []
    state = "outside"
    indent = ""
    begin_line = 0
    for number, line in enumerate(solution_text.splitlines(), start=1):
        if state == "outside":
            m = BEGIN.match(line)
            if m:
                state, indent, begin_line = "solution", m.group("indent"), number
                if m.group("todo"):
                    out.append(f"{indent}// {m.group('todo')}")
            elif STUB.match(line) or END.match(line):
                raise MarkerError(f"{source}:{number}: marker outside a solution region")
            else:
                out.append(line)
        elif END.match(line):
            state = "outside"
        elif BEGIN.match(line):
            raise MarkerError(f"{source}:{number}: region opened at line {begin_line} not closed")
        elif state == "solution":
            if STUB.match(line):
                state = "stub"
        else:  # stub lines: "<indent>// code" -> "<indent>code"
            stripped = line.strip()
            if stripped == "//":
                out.append("")
            elif line.startswith(indent + "// "):
                out.append(indent + line[len(indent) + 3 :])
            else:
                raise MarkerError(
                    f"{source}:{number}: stub lines must be comments indented like the marker"
                )
    if state != "outside":
        raise MarkerError(f"{source}:{begin_line}: region not closed")
    return "\n".join(out) + "\n"


def expected_skeleton(lab: LabPaths) -> str | None:
    """The skeleton the lab's solution produces, or None when there is no solution."""
    if not lab.solution_file.is_file():
        return None
    return make_skeleton(lab.solution_file.read_text(), str(lab.solution_file))


def check(labs: list[LabPaths]) -> list[str]:
    """One message per lab whose committed skeleton differs from the generated one."""
    problems = []
    for lab in labs:
        want = expected_skeleton(lab)
        if want is None:
            continue
        have = lab.student_file.read_text() if lab.student_file.is_file() else None
        if have != want:
            problems.append(
                f"{lab.student_file.relative_to(lab.root)} differs from what "
                f"{lab.solution_file.relative_to(lab.root)} produces; "
                "run: python3 -m grader skeleton --write"
            )
    return problems


def write(labs: list[LabPaths]) -> list[Path]:
    """Writes every lab's skeleton; returns the files that changed."""
    changed = []
    for lab in labs:
        want = expected_skeleton(lab)
        if want is None:
            continue
        if not lab.student_file.is_file() or lab.student_file.read_text() != want:
            lab.student_file.write_text(want)
            changed.append(lab.student_file)
    return changed
