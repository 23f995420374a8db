"""What the static checks hand back: a refusal (Violation), the error raised when a check
cannot be made at all (CheckError), and the facts the source check gathers about the
student's own lines for the object check (SourceFacts, inside a SourceReport)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Violation:
    """One refusal. kind: "reference" (an undefined symbol not allowed), "define" (a
    definition not allowed), "include" (a file the student's file may not include), "source"
    (something on the student's own lines), "object" (something else in the object)."""

    kind: str
    name: str  # the symbol, the file, or the token/pragma/directive
    where: str  # "labs/04_tiled_matmul/tiled_matmul.cu:12", or "" for object findings
    why: str  # what is wrong and what the lab allows instead

    def describe(self) -> str:
        place = f"{self.where}: " if self.where else ""
        if self.kind == "reference":
            return f"{place}the compiled file uses `{self.name}`, which this lab does not allow ({self.why})"
        if self.kind == "define":
            return f"{place}the compiled file defines `{self.name}`: {self.why}"
        if self.kind == "include":
            return f"{place}includes `{self.name}`, which a student file may not include ({self.why})"
        return f"{place}`{self.name}`: {self.why}"


class CheckError(RuntimeError):
    """The check itself could not be done (a tool is missing, preprocessing failed, ...):
    a problem to report, not a verdict on the student's code."""


@dataclass
class SourceFacts:
    """What the student's own preprocessed lines do, for the object check."""

    identifiers: set[str] = field(default_factory=set)  # every identifier (__builtin_x -> x too)
    # Where each identifier first appears on the student's own lines ("labs/.../x.cu:12"),
    # so that a refused symbol of the object is shown at the line that asked for it.
    first_seen: dict[str, str] = field(default_factory=dict)
    touched_namespaces: set[str] = field(default_factory=set)  # protected ones opened/defined in
    declared_globals: set[str] = field(default_factory=set)  # names declared at global scope


@dataclass
class SourceReport:
    """The result of check_preprocessed: violations and the facts check_object needs."""

    violations: list[Violation] = field(default_factory=list)
    facts: SourceFacts = field(default_factory=SourceFacts)
    files: list[str] = field(default_factory=list)  # every file in the line markers
    own_lines: int = 0
