"""The two gates every lab passes before its code runs: Build (the student's file compiled
and linked with the grader's tests, grader/stages/build.py) and Static checks (the
allow-lists, grader/stages/static.py). Neither earns points: each stops the lab, and every
part after it scores zero with the gate's reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..result import GRADED, Kind, PartResult


@dataclass(frozen=True)
class Gate:
    """A gate's kind and its one part's name (also the kind's label in reports)."""

    kind: Kind
    label: str

    def part(self, reason: str = "", details: dict[str, Any] | None = None) -> PartResult:
        """The gate's part, no points of its own: `reason` says why the lab stopped here
        ("" when it passed)."""
        return PartResult(self.kind, self.label, GRADED, 0.0, 0.0, reason, dict(details or {}))


BUILD = Gate(Kind("build"), "Build")
STATIC = Gate(Kind("static"), "Static checks")
