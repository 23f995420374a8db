"""What `check` and `grade` share: choosing labs, progress, interrupts, writing results."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from ..atomic import write_atomic
from ..paths import LabPaths, discover_labs, find_lab
from ..exports import terminal_table
from ..pipeline import Interrupted, interrupt_handler
from ..result import GradeResult


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


class Progress:
    """One line per step on stderr, with the time since the start."""

    def __init__(self, quiet: bool = False) -> None:
        self.start = time.monotonic()
        self.quiet = quiet

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(f"[{time.monotonic() - self.start:6.1f} s] {text}", file=sys.stderr,
                  flush=True)


class Interrupts:
    """SIGINT/SIGTERM raise Interrupted (children killed first) while grading."""

    def __enter__(self):
        self.saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        for s in self.saved:
            signal.signal(s, interrupt_handler)
        return self

    def __exit__(self, *exc):
        for s, handler in self.saved.items():
            signal.signal(s, handler)
        return False


def write_result(result: GradeResult, out_dir: Path) -> Path:
    return write_atomic(Path(out_dir) / "result.json", result.to_json() + "\n")


def table(result: GradeResult) -> str:
    """The exports' terminal table, coloured on a terminal unless NO_COLOR is set."""
    color = None if sys.stdout.isatty() and "NO_COLOR" not in os.environ else False
    return terminal_table(result, color=color)


__all__ = ["choose_labs", "Progress", "Interrupts", "Interrupted", "write_result", "table"]
