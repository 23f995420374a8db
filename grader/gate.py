"""Start gates: a program of the grader's own (the reference's bench, a bench's checker) is
started while other GPU work may still be running, does everything that comes before its
first measurement (its process, its CUDA context, the activity clock, the harness's
buffers), says it is ready and waits (common/include/cml/bench.hpp, `wait_at_start_gate`).
The grader lets it go once the GPU is the bench's alone, so the exclusive section holds the
GPU for measurements rather than for start-ups. Only trusted programs wait at a gate: the
student's code (a bench's runner) is started once the gate has opened, so none of it runs
while another lab's bench or profiler has the GPU. While it waits, a program does no GPU
work: a context with nothing to run takes no time from anyone else's.

    waiting = Gated(lambda gate: sandbox.run([*cmd, *gate.args], extra_fds=gate.fds,
                                             starts=gate.opened, ...))
    if waiting.ready(seconds):      # in a shared section
        ...                         # enter the exclusive one
        outcome = waiting.go()
    else:
        waiting.cancel()            # the program ends at its gate, having measured nothing
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
from typing import Callable, Generic, TypeVar

from . import costs

T = TypeVar("T")

# Seconds a program may wait at its gate (sandbox.run's `starts`): the grader lets it go or
# closes the gate long before, unless the grader itself is stuck.
WAIT = 3600.0


class StartGate:
    """The socket pair of one gate: the program gets one end (`args`: --start-fd N, `fds`),
    writes b"r" to it once ready and waits for b"g"; the grader holds the other."""

    def __init__(self) -> None:
        self._mine, self._theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        os.set_inheritable(self._mine.fileno(), False)
        self.opened = threading.Event()  # the time limit of the program counts from here
        self.ended = threading.Event()  # the program ended (or never started)

    @property
    def args(self) -> list[str]:
        return ["--start-fd", str(self._theirs.fileno())]

    @property
    def fds(self) -> tuple[int, ...]:
        return (self._theirs.fileno(),)

    def ready(self, timeout: float) -> bool:
        """Whether the program said it is ready within `timeout` seconds (False as soon as
        it ended without saying so)."""
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            if select.select([self._mine], [], [], 0.05)[0]:
                try:
                    return self._mine.recv(1) == b"r"
                except OSError:
                    return False
            if self.ended.is_set():
                return False
        return False

    def open(self) -> None:
        """Lets the program go."""
        self.opened.set()
        try:
            self._mine.sendall(b"g")
        except OSError:
            pass  # it ended already: its outcome says how

    def close(self) -> None:
        """The grader's end: a program still at its gate then ends without measuring."""
        self._mine.close()

    def release(self) -> None:
        """The program's end, once the program has ended (it had its own copy)."""
        self.ended.set()
        self._theirs.close()


class Gated(Generic[T]):
    """A program waiting at its gate: `start(gate)` (sandbox.run or pairs.run_pair, given the
    gate's args, fds and `opened`) runs in a thread of its own, counted for the stage this
    thread is in (costs.carry); `go` lets it go and gives what `start` returned."""

    def __init__(self, start: Callable[[StartGate], T]) -> None:
        self.gate = StartGate()
        self._start = start
        self._result: list[T] = []
        self._error: list[BaseException] = []
        self._thread = threading.Thread(target=costs.carry(self._run), daemon=True,
                                        name="cml-gated")
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result.append(self._start(self.gate))
        except BaseException as err:  # raised again by go()
            self._error.append(err)
        finally:
            self.gate.release()

    def ready(self, timeout: float) -> bool:
        return self.gate.ready(timeout)

    def go(self) -> T:
        self.gate.open()
        self._thread.join()
        self.gate.close()
        if self._error:
            raise self._error[0]
        return self._result[0]

    def cancel(self) -> None:
        """Closes the gate and waits for the program to end (its outcome is dropped)."""
        self.gate.close()
        self._thread.join()
