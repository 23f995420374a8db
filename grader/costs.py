"""Where a lab's grading time goes: each stage's wall time and the processes it started, the
tools' start-ups among them (grader/README.md, "Where the time goes"). The GPU sections'
own seconds and waits are counted by gpu.timed; this adds what happens around them.

A lab's stages run in its worker thread and in the threads it starts for processes that
run side by side (grader/parallel.py, a checker's runner): `carry` hands the stage a thread
is in to the threads it starts, so a process is counted for the stage that started it."""

from __future__ import annotations

import contextvars
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import PurePath
from typing import Any, Callable, Iterator, TypeVar

T = TypeVar("T")

# The programs whose start-up is a tool's: each loads an agent into the program it watches
# and starts a session of its own, the largest fixed cost of a process the grader starts.
TOOLS = ("compute-sanitizer", "ncu")


class Meter:
    """One lab's stages: `with meter.stage("tests"): ...` counts the wall time inside and
    every process started there (sandbox.run calls `started`), in this thread or one it
    carried the stage to. A stage entered again adds up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stages: dict[str, dict[str, Any]] = {}

    def _entry(self, stage: str) -> dict[str, Any]:
        return self._stages.setdefault(
            stage, {"wall_seconds": 0.0, "processes": 0, "tool_starts": {}})

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        token = _CURRENT.set((self, name))
        start = time.monotonic()
        try:
            yield
        finally:
            _CURRENT.reset(token)
            with self._lock:
                self._entry(name)["wall_seconds"] += time.monotonic() - start

    def _started(self, stage: str, cmd: list[str]) -> None:
        tool = tool_of(cmd)
        with self._lock:
            entry = self._entry(stage)
            entry["processes"] += 1
            if tool:
                entry["tool_starts"][tool] = entry["tool_starts"].get(tool, 0) + 1

    def record(self) -> dict[str, dict[str, Any]]:
        """Per stage, in the order first entered: wall_seconds (rounded), processes,
        tool_starts (tool -> count; empty when none)."""
        with self._lock:
            return {stage: {"wall_seconds": round(e["wall_seconds"], 2),
                            "processes": e["processes"],
                            "tool_starts": dict(sorted(e["tool_starts"].items()))}
                    for stage, e in self._stages.items()}


_CURRENT: contextvars.ContextVar[tuple[Meter, str] | None] = contextvars.ContextVar(
    "cml_stage", default=None)


def tool_of(cmd: list[str]) -> str | None:
    """The tool `cmd` starts ("ncu", "compute-sanitizer"), None for another program."""
    name = PurePath(cmd[0]).name if cmd else ""
    return name if name in TOOLS else None


def started(cmd: list[str]) -> None:
    """Counts a process the grader starts for the stage this thread is in (none: not
    counted; a grade's shared build, say)."""
    current = _CURRENT.get()
    if current is not None:
        current[0]._started(current[1], cmd)


def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """subprocess.run(cmd, **kwargs), counted as `started`: for the grader's own short
    programs that need no sandbox (the static checks' nvcc, readelf, c++filt), their output
    read as text (each caller passes text=True)."""
    started(cmd)
    return subprocess.run(cmd, **kwargs)


def carry(task: Callable[[], T]) -> Callable[[], T]:
    """`task`, to run in another thread as if in this one's stage."""
    context = contextvars.copy_context()
    return lambda: context.run(task)


def timed_device_seconds(timing: Any) -> float:
    """The device time of the calls a lab's bench runs timed (a result.Timing): the scored
    comparison's two sides and the cases timed alone, in the student's run and the
    reference's, from their kept samples (the activity records' spans). The GPU work that
    timing cannot do without: the bench stage's floor."""
    total_ms = 0.0
    for run in (timing.student, timing.reference):
        if run is None:
            continue
        stats = [run.candidate_ms, run.baseline_ms] + [case.ms for case in run.cases]
        total_ms += sum(sum(s.samples) for s in stats if s is not None and s.samples)
    return round(total_ms / 1000.0, 4)
