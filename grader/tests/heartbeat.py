"""`python3 -m grader.tests.heartbeat MODULE... [-v]`: `python3 -m unittest`, plus a line on
stderr at least every 30 s while it runs, naming the test (or the class's setup) it is in and
for how long, so a long entry of the test suite (grader/CMakeLists.txt: its CTest entries run
through this) never looks hung: grader.slurm_real once printed nothing for 386 s while it
built and started Slurm (issue 36, item 6).
"""

from __future__ import annotations

import sys
import threading
import time
import unittest
from typing import TextIO

INTERVAL_S = 30.0


class Heartbeat:
    """A thread that writes a line to `stream` every `interval` seconds until stopped."""

    def __init__(self, stream: TextIO, interval: float = INTERVAL_S) -> None:
        self.stream = stream
        self.interval = interval
        self.start_time = time.monotonic()
        self.test: str | None = None  # the test running now; None between tests
        self.last: str | None = None  # the last test that ended
        self.test_start = self.start_time
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="cml-heartbeat", daemon=True)

    def started(self, test: unittest.TestCase) -> None:
        self.test, self.test_start = test.id(), time.monotonic()

    def stopped(self, test: unittest.TestCase) -> None:
        self.last, self.test, self.test_start = test.id(), None, time.monotonic()

    def line(self) -> str:
        now = time.monotonic()
        if self.test is not None:
            doing = f"in {self.test} for {now - self.test_start:.0f} s"
        elif self.last is None:
            doing = "setting up before the first test"
        else:
            doing = f"between tests for {now - self.test_start:.0f} s (after {self.last})"
        return f"[heartbeat {now - self.start_time:.0f} s] still running: {doing}"

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            print(self.line(), file=self.stream, flush=True)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def runner_for(beat: Heartbeat) -> type[unittest.TextTestRunner]:
    """unittest's text runner, its results telling `beat` which test runs."""

    class Result(unittest.TextTestResult):
        def startTest(self, test):
            beat.started(test)
            super().startTest(test)

        def stopTest(self, test):
            super().stopTest(test)
            beat.stopped(test)

    class Runner(unittest.TextTestRunner):
        resultclass = Result

    return Runner


def main(argv: list[str], stream: TextIO | None = None,
         interval: float = INTERVAL_S) -> bool:
    """Runs unittest's command line `argv` (module names, -v, ...) with a heartbeat on
    `stream` (stderr); True when every test passed (or was skipped)."""
    stream = stream or sys.stderr
    with Heartbeat(stream, interval) as beat:
        program = unittest.main(module=None, argv=["python3 -m grader.tests.heartbeat", *argv],
                                testRunner=runner_for(beat), exit=False)
    return program.result.wasSuccessful()


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1:]) else 1)
