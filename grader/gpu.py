"""GPU sections: the stages that run code on the GPU (GPU tests, compute-sanitizer, the
bench, the profiler) enter `with opts.gpu_section(stage):` (pipeline.Options.gpu_section).

On its own the grader needs no lock (`no_lock`). A batch gives the pipeline
`GpuLock(path).section`, an exclusive `flock` on a file every grader on the machine opens,
so that two submissions (or two batches) never run on the GPU at the same time and never
time each other; builds and host tests stay outside and run in parallel.

One lock per GPU: a batch task grades with a `GpuPool` (pool_for), one GpuLock per device
it may use (`lock_path(base, device)`; the device's UUID names the file where nvidia-smi
gives one, so two Slurm jobs that each see their GPU as "0" never share a lock). Entering a
section takes the first free device, trying the task's own first (task index modulo the
number of devices, so the tasks spread over the GPUs), waiting for that one when all are
busy; the section yields the device, and the pipeline runs the stage with
CUDA_VISIBLE_DEVICES set to it. A section yields None where there is no device to choose.
Since only the GPU sections hold a lock, one submission's builds and host tests run while
another's GPU stages do.
(docs/architecture.md, "GPU sections")
"""

from __future__ import annotations

import fcntl
import os
import signal
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

from .tools import _output, find_tool

# What the pipeline names a section; bench_start: the bench's own programs start and wait at
# their gates (grader/gate.py) before the bench's exclusive section.
GPU_STAGES = ("tests", "sanitizer", "bench_start", "bench", "profiler")
DEFAULT_LOCK = "/tmp/cml-grader-gpu.lock"

# gpu_section("tests" | "sanitizer" | "bench" | "profiler") -> a context manager that
# yields the device to run on (a CUDA_VISIBLE_DEVICES value), or None: leave it as it is
GpuSection = Callable[[str], ContextManager[Any]]


@contextmanager
def no_lock(stage: str) -> Iterator[None]:
    """The pipeline's default GPU section: nothing to wait for."""
    yield


# The stages that time or count on the GPU: while one runs, no other GPU work of the grade
# does. Tests and sanitizer runs only need the GPU to work, and share it.
EXCLUSIVE_STAGES = ("bench", "profiler")


class LabSections:
    """The GPU sections of the labs of one grade, graded at the same time (pipeline.py).
    Sections of the shared stages (tests, sanitizer) run side by side; a section of an
    exclusive stage (EXCLUSIVE_STAGES) waits until none is running and runs alone, and
    while one waits no new section starts, so a bench is never starved. `outer` (a batch's
    lock, `GpuPool.section`) is entered when the first section starts and left when the
    last one ends: the grade holds the machine's GPU while any lab of it is on the GPU,
    never in between. The device it yields becomes env's CUDA_VISIBLE_DEVICES for as long."""

    def __init__(self, outer: GpuSection = no_lock, env: dict[str, str] | None = None) -> None:
        self.outer = outer
        self.env = env
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0  # exclusive sections waiting
        self._held: ExitStack | None = None
        self._device: Any = None
        self._before: str | None = None
        self._since = 0.0
        self.busy_seconds = 0.0  # how long any section was open: the grade's GPU time

    @contextmanager
    def section(self, stage: str) -> Iterator[Any]:
        alone = stage in EXCLUSIVE_STAGES
        with self._cond:
            if alone:
                self._waiting += 1
                try:
                    self._cond.wait_for(lambda: not self._exclusive and not self._shared)
                finally:
                    self._waiting -= 1
                self._exclusive = True
            else:
                self._cond.wait_for(lambda: not self._exclusive and not self._waiting)
                self._shared += 1
            try:
                if self._held is None:
                    self._take(stage)
            except BaseException:
                self._leave(alone)
                raise
        try:
            yield self._device
        finally:
            with self._cond:
                self._leave(alone)

    def _take(self, stage: str) -> None:
        held = ExitStack()
        self._device = held.enter_context(self.outer(stage))
        self._held = held
        self._since = time.monotonic()
        if self._device is not None and self.env is not None:
            self._before = self.env.get("CUDA_VISIBLE_DEVICES")
            self.env["CUDA_VISIBLE_DEVICES"] = str(self._device)

    def _leave(self, alone: bool) -> None:
        if alone:
            self._exclusive = False
        else:
            self._shared -= 1
        if not self._exclusive and not self._shared and self._held is not None:
            if self._device is not None and self.env is not None:
                if self._before is None:
                    self.env.pop("CUDA_VISIBLE_DEVICES", None)
                else:
                    self.env["CUDA_VISIBLE_DEVICES"] = self._before
            held, self._held, self._device = self._held, None, None
            self.busy_seconds += time.monotonic() - self._since
            held.close()
        self._cond.notify_all()


def lock_path(base: str, device: int | str | None = None) -> str:
    """The lock file for `device` (a CUDA device index): `base` itself for the whole
    machine (None), else `base` with `.gpuN` before its suffix."""
    if device is None:
        return base
    path = Path(base)
    return str(path.with_name(f"{path.stem}.gpu{device}{path.suffix}"))


def timed(section: GpuSection, seconds: dict[str, float],
          waited: dict[str, float] | None = None) -> GpuSection:
    """`section`, adding the wall time spent inside it (after any wait for the lock) to
    seconds[stage]: the GPU-seconds a grade records per stage; and the time spent waiting
    to enter it (another lab's bench, another grade's lock) to waited[stage]. (The device a
    batch's lock yields is set by LabSections, once for every lab inside.)"""

    @contextmanager
    def inner(stage: str) -> Iterator[Any]:
        asked = time.monotonic()
        with section(stage) as device:
            start = time.monotonic()
            if waited is not None:
                waited[stage] = waited.get(stage, 0.0) + start - asked
            try:
                yield device
            finally:
                seconds[stage] = seconds.get(stage, 0.0) + time.monotonic() - start
    return inner


def visible_devices() -> list[tuple[str, str]]:
    """(CUDA_VISIBLE_DEVICES value, lock name) of each GPU this process may use: the entries
    of CUDA_VISIBLE_DEVICES when it is set (a Slurm allocation), else every GPU nvidia-smi
    lists; the lock name is the GPU's UUID where nvidia-smi gives one."""
    smi = find_tool("nvidia-smi")
    text = _output([smi, "--query-gpu=index,uuid", "--format=csv,noheader"]) if smi else None
    uuids = {}
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 2 and cells[0].isdigit():
            uuids[cells[0]] = cells[1]
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        entries = [e.strip() for e in given.split(",") if e.strip()]
        if entries and len(entries) == len(uuids) and set(entries) != set(uuids):
            # a renumbered allocation (cgroup): nvidia-smi lists exactly these GPUs
            return [(e, u) for e, u in zip(entries, uuids.values())]
        return [(e, uuids.get(e, e)) for e in entries]
    return [(index, uuid) for index, uuid in uuids.items()]


class GpuPool:
    """One GpuLock per device (see the module's text); the same interface as a GpuLock:
    `section(stage)` (yields the device) and `waited`."""

    def __init__(self, base: str, devices: list[tuple[str, str]], prefer: int = 0,
                 on_wait: Callable[[str], None] | None = None) -> None:
        self.devices = devices
        self.locks = [GpuLock(lock_path(base, name), on_wait) for _, name in devices]
        self.prefer = prefer % len(devices) if devices else 0
        self._whole = GpuLock(base, on_wait) if not devices else None
        self._held: int | None = None
        self._depth = 0

    @property
    def waited(self) -> float:
        locks = self.locks + ([self._whole] if self._whole else [])
        return sum(lock.waited for lock in locks)

    @contextmanager
    def section(self, stage: str) -> Iterator[str | None]:
        if self._whole is not None:  # no GPU listed: the machine's one lock
            with self._whole.section(stage):
                yield None
            return
        if self._depth == 0:
            n = len(self.locks)
            order = [(self.prefer + k) % n for k in range(n)]
            self._held = next((i for i in order if self.locks[i].try_acquire()), None)
            if self._held is None:
                self.locks[self.prefer]._acquire(stage)
                self._held = self.prefer
        held = self._held
        assert held is not None  # set by the outermost section
        self._depth += 1
        try:
            yield self.devices[held][0]
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.locks[held]._release()
                self._held = None


def pool_for(base: str, task_index: int = 0,
             on_wait: Callable[[str], None] | None = None) -> GpuPool:
    """The GPU locks of a batch task: one per GPU it may use, its own first."""
    return GpuPool(base, visible_devices(), task_index, on_wait)


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

    def _open(self) -> int:
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            os.fchmod(fd, 0o666)  # another user's batch uses the same lock
        except OSError:
            pass
        return fd

    def try_acquire(self) -> bool:
        """Takes the lock if it is free at once; False (nothing held) if not."""
        if self._fd is not None:
            return False
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def _acquire(self, stage: str) -> None:
        fd = self._open()
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


__all__ = ["GPU_STAGES", "EXCLUSIVE_STAGES", "DEFAULT_LOCK", "no_lock", "LabSections",
           "lock_path", "timed", "GpuLock",
           "GpuPool", "visible_devices", "pool_for"]
