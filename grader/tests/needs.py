"""What a test that builds or grades a lab needs on this machine, said once: the tools, Catch2
and (for grading the reference) the lab's solutions/ folder, which a student copy lacks."""

from __future__ import annotations

from grader.paths import ROOT
from grader.tools import find_catch2, find_tool

BUILD_TOOLS = ("cmake", "nvcc", "g++", "nm")


def missing(tools: tuple[str, ...] = BUILD_TOOLS, solutions_of: str | None = None) -> str:
    """The missing ones, comma-separated ("" when nothing is missing): a skip reason."""
    out = [t for t in tools if not find_tool(t)]
    if not find_catch2()[0]:
        out.append("Catch2")
    if solutions_of is not None and not (ROOT / "solutions" / solutions_of).is_dir():
        out.append("solutions/ (a student copy has none)")
    return ", ".join(out)
