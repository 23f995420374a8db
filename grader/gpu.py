"""GPU sections: the stages that run code on the GPU (GPU tests, compute-sanitizer, the
bench, the profiler) enter `with opts.gpu_section(stage):` (pipeline.Options.gpu_section).

On its own the grader needs no lock (`no_lock`). A batch gives the pipeline
`GpuLock(path).section`, an exclusive `flock` on a file every grader on the machine opens,
so that two submissions (or two batches) never run on the GPU at the same time and never
time each other; builds and host tests stay outside and run in parallel.

Today there is one lock per machine. For one lock per GPU, build the path with
`lock_path(base, device)` and give each task the lock of the device it runs on.
"""

from __future__ import annotations

import fcntl
import os
import signal
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, ContextManager, Iterator

GPU_STAGES = ("tests", "sanitizer", "bench", "profiler")  # what the pipeline names a section
DEFAULT_LOCK = "/tmp/cml-grader-gpu.lock"

# gpu_section("tests" | "sanitizer" | "bench" | "profiler") -> a context manager
GpuSection = Callable[[str], ContextManager[None]]


@contextmanager
def no_lock(stage: str) -> Iterator[None]:
    """The pipeline's default GPU section: nothing to wait for."""
    yield


def lock_path(base: str, device: int | None = None) -> str:
    """The lock file for `device` (a CUDA device index): `base` itself for the whole
    machine (None), else `base` with `.gpuN` before its suffix."""
    if device is None:
        return base
    path = Path(base)
    return str(path.with_name(f"{path.stem}.gpu{device}{path.suffix}"))


def timed(section: GpuSection, seconds: dict[str, float]) -> GpuSection:
    """`section`, adding the wall time spent inside it (after any wait for the lock) to
    seconds[stage]: the GPU-seconds a grade records per stage."""

    @contextmanager
    def inner(stage: str) -> Iterator[None]:
        with section(stage):
            start = time.monotonic()
            try:
                yield
            finally:
                seconds[stage] = seconds.get(stage, 0.0) + time.monotonic() - start
    return inner


class GpuLock:
    """An exclusive flock on the file `path`. `section(stage)` holds it for one GPU stage;
    waiting for it does not count against a task's wall-clock limit (a pending SIGALRM is
    put off by the time waited), and the time waited adds up in `waited` (seconds)."""

    def __init__(self, path: str, on_wait: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.on_wait = on_wait
        self.waited = 0.0
        self._fd: int | None = None
        self._depth = 0

    @property
    def held(self) -> bool:
        return self._fd is not None

    @contextmanager
    def section(self, stage: str) -> Iterator[None]:
        """Holds the lock while the block runs (a section inside another keeps it)."""
        if self._depth == 0:
            self._acquire(stage)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._release()

    def _acquire(self, stage: str) -> None:
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            os.fchmod(fd, 0o666)  # another user's batch uses the same lock
        except OSError:
            pass
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if self.on_wait:
                self.on_wait(f"waiting for the GPU ({stage}; {self.path})")
            left = signal.alarm(0)  # waiting is not the student's time
            start = time.monotonic()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            finally:
                self.waited += time.monotonic() - start
                if left:
                    signal.alarm(max(1, left))
        self._fd = fd

    def _release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


__all__ = ["GPU_STAGES", "DEFAULT_LOCK", "no_lock", "lock_path", "timed", "GpuLock"]
