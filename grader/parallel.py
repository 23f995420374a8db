"""Independent runs of one lab at the same time: the processes of a GPU section that time
nothing (the test binaries of a layer, each compute-sanitizer tool on each binary) share the
GPU instead of waiting for each other. Each task is a thread that waits on its sandboxed
process; the results come back in the order the tasks were given, whatever order they end
in, so what a grade records does not depend on which finished first.

Never for what is timed (the bench, the profiler): those keep the GPU to themselves.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
from typing import Callable, Iterator, Sequence, TypeVar

from . import costs, sandbox
from .workspace import usable_cpus

T = TypeVar("T")


class Stopped(Exception):
    """A task was asked to stop before starting another process (the caller was
    interrupted); never seen by the caller, who re-raises its own interrupt."""


def check(stop: threading.Event | None) -> None:
    """Raises Stopped when `stop` is set: called by a task before each process it starts."""
    if stop is not None and stop.is_set():
        raise Stopped("stopped: the grade was interrupted")


def run_all(tasks: Sequence[Callable[[], T]], limit: int | None = None,
            stop: threading.Event | None = None) -> list[T]:
    """Runs `tasks`, at most `limit` at once (default: the CPUs this process may use), and
    returns their results in the order of `tasks`. Every thread has ended when this
    returns or raises. A task's exception is re-raised here (the first in the order of
    `tasks`) once all have ended. When the caller is interrupted while waiting (SIGINT or
    SIGTERM: the pipeline's handler raises in the main thread), `stop` is set, so no task
    starts another process, the processes still running are killed, every thread is
    joined, and the interrupt goes on up."""
    limit = max(1, min(limit or usable_cpus(), len(tasks)))
    tasks = [costs.carry(task) for task in tasks]  # each counted for the caller's stage
    if limit == 1:
        return [task() for task in tasks]  # in the caller's thread, as serial code does
    stop = stop if stop is not None else threading.Event()
    results: dict[int, T] = {}  # by the task's index
    errors: list[BaseException | None] = [None] * len(tasks)
    todo = iter(range(len(tasks)))
    guard = threading.Lock()

    def worker() -> None:
        while True:
            with guard:
                i = next(todo, None)
            if i is None:
                return
            try:
                check(stop)
                results[i] = tasks[i]()
            except BaseException as err:  # handed to the caller
                errors[i] = err

    threads = [threading.Thread(target=worker, name=f"cml-run-{k}", daemon=True)
               for k in range(limit)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except BaseException:
        _stop(threads, stop)
        raise
    for err in errors:
        if err is not None and not isinstance(err, Stopped):
            raise err
    for err in errors:
        if err is not None:
            raise err  # only a Stopped: someone else set `stop`
    return [results[i] for i in range(len(tasks))]


# How long the main thread waits for other threads at a time. Python runs a signal's handler
# in the main thread, which notices only when it wakes: a signal that comes just before it
# starts to wait (or that the kernel hands to another thread) would otherwise wait for the
# next task to end. Waiting in slices keeps an interrupt from waiting for a whole grade.
WAIT_SLICE_S = 0.2


def as_completed(futures: list[cf.Future[T]]) -> Iterator[cf.Future[T]]:
    """cf.as_completed (each future once it is done, in the order given among those done
    together), waking every WAIT_SLICE_S so that a pending interrupt is raised."""
    pending = set(futures)
    while pending:
        done, pending = cf.wait(pending, timeout=WAIT_SLICE_S,
                                return_when=cf.FIRST_COMPLETED)
        yield from (f for f in futures if f in done)


def _stop(threads: list[threading.Thread], stop: threading.Event) -> None:
    """Stops the tasks: none starts another process, the running ones are killed (again,
    until each thread has ended: one may have started a process just before `stop` was
    set)."""
    stop.set()
    while True:
        try:
            sandbox.kill_all()
            alive = [t for t in threads if t.is_alive()]
            if not alive:
                return
            alive[0].join(timeout=0.1)
        except BaseException:  # a second interrupt: the first goes on up
            continue
