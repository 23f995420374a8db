"""What the grading commands (check, grade, ci, batch) share: the grading flags, choosing
labs and export formats, progress, interrupts, running the pipeline, writing results."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from .. import pipeline, refcache
from ..atomic import write_atomic
from ..exports import FORMATS, terminal_table
from ..gpu import GpuSection, no_lock
from ..paths import LabPaths, discover_labs, find_lab
from ..pipeline import Interrupted, Progress
from ..result import GradeResult

DEFAULT_FORMATS = "gradescope,prairielearn,junit,markdown"

# What every command's add_parser takes: the subcommands of build_parser (grader/__main__.py).
# A string, as argparse's class of it cannot be subscripted when the grader runs.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def choose_labs(keys: list[str]) -> list[LabPaths]:
    """Labs by number or folder ("04", "4", "04_tiled_matmul"); every lab when empty.
    Raises KeyError naming the labs there are."""
    if not keys:
        return discover_labs()
    found: list[LabPaths] = []
    for key in keys:
        for part in key.split(","):
            if part.strip():
                lab = find_lab(part.strip())
                if lab not in found:
                    found.append(lab)
    return found


def labs_or_say(command: str, keys: list[str]) -> list[LabPaths] | None:
    """choose_labs, or None after saying on stderr which labs there are."""
    try:
        return choose_labs(keys)
    except KeyError as err:
        print(f"{command}: {err.args[0]}", file=sys.stderr)
        return None


# ------------------------------------------------------------------------ the grading flags

@dataclass
class GradingFlags:
    """The grading flags every grading command takes (add_grading_flags)."""

    seed: int | None = None  # None: a fresh one
    no_gpu: bool = False
    build_timeout: float | None = None  # None: the rubric's
    test_timeout: float | None = None
    cache: Path | None = None  # the reference cache; None: references built per grade

    @staticmethod
    def of(args: argparse.Namespace) -> "GradingFlags":
        """The flags as parsed by a parser that add_grading_flags declared them on."""
        cache = None if getattr(args, "no_cache", False) else getattr(args, "cache", None)
        return GradingFlags(args.seed, args.no_gpu, args.build_timeout, args.test_timeout,
                            Path(cache).resolve() if cache else None)


def add_grading_flags(p: argparse.ArgumentParser, seed_help: str, gpu_help: str,
                      show_timeouts: bool = True) -> None:
    """--seed, --no-gpu, --build-timeout, --test-timeout, --cache, --no-cache (read back by
    GradingFlags.of)."""
    p.add_argument("--seed", type=int, default=None, help=seed_help)
    p.add_argument("--no-gpu", action="store_true", help=gpu_help)
    p.add_argument("--build-timeout", type=float, default=None,
                   help="seconds per build (default: the rubric's build_timeout_s)"
                   if show_timeouts else argparse.SUPPRESS)
    p.add_argument("--test-timeout", type=float, default=None,
                   help="seconds per test process (default: the rubric's test_timeout_s)"
                   if show_timeouts else argparse.SUPPRESS)
    p.add_argument("--cache", metavar="DIR", default=str(refcache.default_dir()),
                   help="the reference cache: the grader's reference executables, built once "
                        "per content and reused (default: %(default)s)")
    p.add_argument("--no-cache", action="store_true",
                   help="build the references in the grade's own tree (no cache)")


def export_formats(text: str) -> list[str]:
    """A --format value: comma-separated export names, each one the exports know (an
    argparse type: an unknown name stops the command before anything is graded)."""
    formats = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown export format(s): {', '.join(unknown)} "
                                         f"(choose from {', '.join(FORMATS)})")
    return formats


def add_format_flag(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--format", type=export_formats, default=export_formats(DEFAULT_FORMATS),
                   help=f"{help_text} (default: {DEFAULT_FORMATS}; '' for none; any of "
                        f"{', '.join(FORMATS)})")


# ------------------------------------------------------------------------ running the pipeline

def grade_submission(submission: Path, labs: list[LabPaths], flags: GradingFlags,
                     work_dir: Path | None = None, quiet: bool = False,
                     gpu_section: GpuSection = no_lock) -> tuple[GradeResult, int]:
    """The command line's flags as pipeline.Options, graded by pipeline.grade_submission;
    (result, exit status: 0 graded, 1 the grader could not grade, 130 interrupted)."""
    opts = pipeline.Options(submission=submission.resolve(), labs=labs, work_dir=work_dir,
                            build_timeout=flags.build_timeout, test_timeout=flags.test_timeout,
                            gpu=False if flags.no_gpu else None, progress=Progress(quiet),
                            gpu_section=gpu_section, cache=flags.cache)
    if flags.seed is not None:
        opts.seed = flags.seed
    result, ended = pipeline.grade_submission(opts)
    return result, {pipeline.ENDED_GRADED: 0, pipeline.ENDED_INTERRUPTED: 130}.get(ended, 1)


def write_result(result: GradeResult, out_dir: Path) -> Path:
    return write_atomic(Path(out_dir) / "result.json", result.to_json() + "\n")


def table(result: GradeResult) -> str:
    """The terminal table (colour on a terminal without NO_COLOR: exports/table.py)."""
    return terminal_table(result)


__all__ = ["choose_labs", "labs_or_say", "GradingFlags", "add_grading_flags",
           "export_formats", "add_format_flag", "DEFAULT_FORMATS", "Progress",
           "Interrupted", "grade_submission", "write_result", "table"]
