"""The local batch: every submission that is not current, graded by task processes a few at a
time, each in its own session and build folder; interrupts passed on to the tasks."""

from __future__ import annotations

import concurrent.futures as cf
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Callable, NoReturn, TypeAlias

from .. import sandbox
from ..parallel import as_completed
from ..exports.common import pending_points
from .fingerprint import grader_fingerprint, submission_key
from .plan import GRADER_ERROR, INTERRUPTED, Plan, is_current, load_result, read_stamp


@dataclass
class Outcome:
    student: str
    status: str  # a Stamp status, or "kept" (unchanged, not regraded)
    points: float | None
    max_points: float | None
    seconds: float
    labs: dict[str, float] = field(default_factory=dict)
    # graded without a GPU: the points are the host parts' only, GPU parts pending
    host_only: bool = False


def task_command(out_dir: Path, index: int | str, work_dir: Path | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "grader", "batch", "--task", str(index), "--out",
           str(out_dir)]
    return cmd + (["--work-dir", str(work_dir)] if work_dir else [])


def work_root(out_dir: Path) -> Path:
    """Where the tasks' build folders go: in the output folder, unless student code would
    run as another user who cannot reach it (then a temporary folder)."""
    root = out_dir / ".work"
    if sandbox.unprivileged_identity() is not None and sandbox.reachable_by_others(out_dir):
        root = Path(tempfile.mkdtemp(prefix="cml-batch-work-"))
        root.chmod(0o711)  # mkdtemp makes 0700: 'nobody' must pass through to the builds
        return root
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    return root


# Submissions graded at the same time per GPU: one on the GPU while the next builds and
# runs its host tests.
JOBS_PER_GPU = 2


def default_jobs(gpus: int, cpus: int) -> int:
    """The batch's default --jobs: JOBS_PER_GPU per GPU, at most one per 4 CPUs (each
    grade runs several labs at once); one per 4 CPUs without a GPU. A grade holds its GPU
    while any of its labs is in a GPU section, so grades on one GPU take turns: more than
    two per GPU only share the CPUs more thinly."""
    most = max(1, cpus // 4)
    return max(1, min(most, JOBS_PER_GPU * gpus)) if gpus else most


def run_local(out_dir: Path, jobs: int, force: bool = False, keep_work: bool = False,
              report: Callable[[Outcome, int, int], None] | None = None,
              only: set[str] | None = None) -> list[Outcome]:
    """Grades every submission of the plan in `out_dir` that is not current, `jobs` at a
    time, each in its own process and build folder (a folder is reused by the next
    submission of the same worker, so the reference builds once per worker). With `only`,
    those students alone are looked at (the others are left as they are)."""
    out_dir = Path(out_dir).resolve()
    plan = Plan.load(out_dir)
    total = len(plan.submissions) if only is None else len(only)
    outcomes, todo = _kept(out_dir, plan, force, only, report, total)
    if not todo:
        return outcomes
    root = work_root(out_dir)
    tasks = _Tasks(plan, out_dir, force, [root / f"slot-{k}"
                                          for k in range(max(1, min(jobs, len(todo))))])
    main = threading.current_thread() is threading.main_thread()
    saved = listen() if main else None
    try:
        _run_tasks(tasks, todo, jobs, outcomes, report, total)
    finally:
        if saved is not None:
            restore(saved)
    if not keep_work:
        shutil.rmtree(root, ignore_errors=True)
    return outcomes


def _kept(out_dir: Path, plan: Plan, force: bool, only: set[str] | None,
          report: Callable[[Outcome, int, int], None] | None, total: int
          ) -> tuple[list[Outcome], list[int]]:
    """The current submissions' outcomes (kept, each reported) and the indices of the others."""
    fingerprint = grader_fingerprint(plan)
    todo: list[int] = []
    outcomes: list[Outcome] = []
    for i, sub in enumerate(plan.submissions):
        if only is not None and sub.student not in only:
            continue
        _, key = submission_key(plan, sub, fingerprint)
        if not force and is_current(out_dir, sub.student, key):
            stamp = read_stamp(out_dir, sub.student)
            assert stamp is not None  # is_current has just read it
            outcome = Outcome(sub.student, "kept", stamp.points, stamp.max_points, 0.0,
                              *_lab_points(out_dir, sub.student))
            outcomes.append(outcome)
            if report:
                report(outcome, len(outcomes), total)
        else:
            todo.append(i)
    return outcomes, todo


def _run_tasks(tasks: _Tasks, todo: list[int], jobs: int, outcomes: list[Outcome],
               report: Callable[[Outcome, int, int], None] | None, total: int) -> None:
    """Runs the tasks of `todo`, `jobs` at a time, each outcome kept and reported as it ends."""
    with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(tasks.one, i) for i in todo]
        try:
            for future in as_completed(futures):
                outcome = future.result()
                outcomes.append(outcome)
                if report:
                    report(outcome, len(outcomes), total)
        except KeyboardInterrupt:
            # the tasks run in their own sessions: pass the signal on, so each one stops
            # its children and writes what it knows (graded again on the next run)
            tasks.stop(futures)
            raise


class _Tasks:
    """The task processes of a local batch: the build folders free for the next one
    (`slots`), and those running now, so that an interrupt reaches each."""

    def __init__(self, plan: Plan, out_dir: Path, force: bool, slots: list[Path]) -> None:
        self.plan, self.out_dir, self.force = plan, out_dir, force
        self.slots: queue.Queue[Path] = queue.Queue()
        for slot in slots:
            self.slots.put(slot)
        self.live: dict[int, subprocess.Popen[bytes]] = {}
        self.stopping = threading.Event()
        self.guard = threading.Lock()

    def one(self, i: int) -> Outcome:
        """Grades submission `i` in a task process and a free build folder; what it stamped."""
        plan, out_dir = self.plan, self.out_dir
        sub = plan.submissions[i]
        slot = self.slots.get()
        start = time.monotonic()
        started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        log = out_dir / sub.student / "grade.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self.guard:
                if self.stopping.is_set():
                    return Outcome(sub.student, INTERRUPTED, None, None, 0.0)
                f = log.open("w")
                cmd = task_command(out_dir, i, slot) + (["--force"] if self.force else [])
                proc = subprocess.Popen(cmd, cwd=plan.repo, stdout=f, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
                self.live[i] = proc
            with f:
                # the task stops itself at the limit; this is the backstop (GPU waits excluded
                # there, so allow for them here)
                try:
                    proc.wait(timeout=plan.timeout * 3 + 300)
                except subprocess.TimeoutExpired:
                    _stop(proc)
            with self.guard:
                self.live.pop(i, None)
        finally:
            self.slots.put(slot)
        stamp = read_stamp(out_dir, sub.student)
        seconds = time.monotonic() - start
        if stamp is None or stamp.finished < started:  # the task died before its stamp
            return Outcome(sub.student, GRADER_ERROR, None, None, seconds)
        return Outcome(sub.student, stamp.status, stamp.points, stamp.max_points, seconds,
                       *_lab_points(out_dir, sub.student))

    def stop(self, futures: list[cf.Future[Outcome]]) -> None:
        """An interrupt passed on: no task starts, and each running one gets SIGTERM."""
        with self.guard:
            self.stopping.set()
            for f in futures:
                f.cancel()
            for proc in self.live.values():
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# A signal's handler as signal.signal takes and returns it: a function, SIG_DFL or SIG_IGN,
# or None (one not set from Python).
Handler: TypeAlias = "Callable[[int, FrameType | None], object] | int | signal.Handlers | None"


def _on_stop(signum: int, _frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt


def listen() -> tuple[dict[signal.Signals, Handler], set[int]]:
    """Makes SIGINT and SIGTERM interrupt the batch (KeyboardInterrupt in the main thread),
    before any worker thread or task starts: whatever the batch inherited (SIGINT ignored,
    as a shell leaves a background job, or either signal blocked by the process that started
    it) a batch that was told to stop stops. Returns what restore() puts back."""
    handlers = {s: signal.signal(s, _on_stop) for s in STOP_SIGNALS}
    return handlers, signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def restore(saved: tuple[dict[signal.Signals, Handler], set[int]]) -> None:
    handlers, mask = saved
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    for s, handler in handlers.items():
        signal.signal(s, handler)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the task then kills its children and writes what it knows), then SIGKILL."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _lab_points(out_dir: Path, student: str) -> tuple[dict[str, float], bool]:
    """The student's points per lab, and whether they are the host parts' only (GPU parts
    not graded)."""
    result = load_result(out_dir, student)
    if result is None:
        return {}, False
    return ({lab.lab: lab.points for lab in result.labs},
            any(pending_points(lab) > 0 for lab in result.labs))
