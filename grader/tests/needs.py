"""What a test that builds or grades a lab needs on this machine, said once: the tools, Catch2,
nlohmann-json and (for grading the reference) the lab's solutions/ folder, which a student
copy lacks; and the reference cache a test run shares."""

from __future__ import annotations

import os
from pathlib import Path

from grader.paths import ROOT
from grader.tools import find_catch2, find_nlohmann_json, find_tool

BUILD_TOOLS = ("cmake", "nvcc", "g++", "nm")


def missing(tools: tuple[str, ...] = BUILD_TOOLS, solutions_of: str | None = None) -> str:
    """The missing ones, comma-separated ("" when nothing is missing): a skip reason."""
    out = [t for t in tools if not find_tool(t)]
    if not find_catch2()[0]:
        out.append("Catch2")
    if not find_nlohmann_json()[0]:
        out.append("nlohmann-json")
    if solutions_of is not None and not (ROOT / "solutions" / solutions_of).is_dir():
        out.append("solutions/ (a student copy has none)")
    return ", ".join(out)


def shared_cache() -> Path | None:
    """The reference cache the tests of one run share (CML_TEST_REFCACHE: CTest's grader.unit
    entries set it, grader/CMakeLists.txt), so each lab's reference is built once per run;
    None outside such a run: a grade then builds its references as the test always did."""
    folder = os.environ.get("CML_TEST_REFCACHE")
    return Path(folder) if folder else None


def cache_args() -> list[str]:
    """The grader command's `--cache DIR` for the shared cache; nothing without one (the
    command then uses its default, the user's cache folder)."""
    cache = shared_cache()
    return ["--cache", str(cache)] if cache else []
