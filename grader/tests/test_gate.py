"""Start gates (grader/gate.py): a program waits at its gate until let go, its time limit
counting from then; a closed gate ends it having done nothing; the student's runner of a
gated checker starts only once the gate has opened; the bench's programs wait at their
gates in the shared section and are let go inside the exclusive one (measure/bench.py,
timed_runs). Fake programs speak the gate's protocol (common/src/bench.cpp,
wait_at_start_gate): one byte b"r", then one byte back."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
import unittest
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator
from unittest import mock

from grader import pairs, sandbox
from grader.gate import Gated, StartGate
from grader.measure import Context, bench

# A program at its gate: --start-fd N, b"r", then b"g" lets it go (it sleeps AFTER seconds,
# prints "went", exits 0); the gate closed instead: it prints "closed" and exits 3.
GATED = """
import os, socket, sys, time
fd = int(sys.argv[sys.argv.index("--start-fd") + 1])
after = float(os.environ.get("AFTER", "0"))
if os.environ.get("DIE_FIRST"):
    sys.exit(1)
s = socket.socket(fileno=fd)
s.send(b"r")
if s.recv(1) != b"g":
    print("closed", flush=True)
    sys.exit(3)
time.sleep(after)
runner = os.environ.get("CML_RUNNER_FD")
if runner:
    r = socket.socket(fileno=int(runner))
    r.sendall(b"call")
    print("runner said", r.recv(16).decode(), flush=True)
print("went", flush=True)
"""

# A runner: marks that it started, answers one call.
RUNNER = """
import socket, sys, pathlib
pathlib.Path(sys.argv[1]).write_text("started")
s = socket.socket(fileno=int(sys.argv[sys.argv.index("--fd") + 1]))
s.recv(16)
s.sendall(b"done")
"""


def wait_at(gate: StartGate) -> str:
    """A program's side of `gate`, spoken through the gate's own descriptor: ready, then
    the answer ("went" or "closed")."""
    end = socket.socket(fileno=os.dup(gate.fds[0]))
    try:
        end.send(b"r")
        return "went" if end.recv(1) == b"g" else "closed"
    finally:
        end.close()


class GateTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-gate-"))
        self.prog = self.tmp / "gated.py"
        self.prog.write_text(GATED)
        self.runner = self.tmp / "runner.py"
        self.runner.write_text(RUNNER)

    def gated(self, timeout: float = 5.0, **env: str) -> Gated[sandbox.Outcome]:
        full = {**os.environ, **env}
        return Gated(lambda gate: sandbox.run(
            [sys.executable, str(self.prog), *gate.args], cwd=self.tmp, timeout=timeout,
            env=full, extra_fds=gate.fds, starts=gate.opened))

    def test_a_program_waits_until_let_go(self) -> None:
        waiting = self.gated()
        self.assertTrue(waiting.ready(10))
        out = waiting.go()
        self.assertEqual(out.returncode, 0, out.output_tail)
        self.assertIn("went", out.output_tail)

    def test_a_closed_gate_ends_the_program(self) -> None:
        waiting = self.gated()
        self.assertTrue(waiting.ready(10))
        start = time.monotonic()
        waiting.cancel()
        self.assertLess(time.monotonic() - start, 5)
        self.assertTrue(waiting.gate.ended.is_set())

    def test_a_program_that_dies_first_is_not_ready(self) -> None:
        waiting = self.gated(DIE_FIRST="1")
        start = time.monotonic()
        self.assertFalse(waiting.ready(10))
        self.assertLess(time.monotonic() - start, 5)
        self.assertEqual(waiting.go().returncode, 1)

    def test_the_time_limit_counts_from_the_go(self) -> None:
        waiting = self.gated(timeout=1.0)
        self.assertTrue(waiting.ready(10))
        time.sleep(1.6)  # longer than the limit, at the gate: not timed
        out = waiting.go()
        self.assertFalse(out.timed_out, out.output_tail)
        self.assertEqual(out.returncode, 0)
        slow = self.gated(timeout=1.0, AFTER="4")  # after the go: timed
        self.assertTrue(slow.ready(10))
        self.assertTrue(slow.go().timed_out)

    def pair(self, gate: StartGate, mark: Path) -> pairs.PairOutcome:
        return pairs.run_pair([sys.executable, str(self.prog), *gate.args],
                              [sys.executable, str(self.runner), str(mark)], cwd=self.tmp,
                              timeout=10, env=dict(os.environ), gate=gate)

    def test_a_gated_checker_starts_its_runner_only_once_let_go(self) -> None:
        mark = self.tmp / "runner-started"
        waiting = Gated(lambda gate: self.pair(gate, mark))
        self.assertTrue(waiting.ready(10))
        time.sleep(0.5)
        self.assertFalse(mark.exists(), "the runner started before the gate opened")
        out = waiting.go()
        self.assertEqual(out.checker.returncode, 0, out.checker.output_tail)
        self.assertIn("runner said done", out.checker.output_tail)
        self.assertTrue(mark.exists())

    def test_a_closed_gate_never_starts_the_runner(self) -> None:
        mark = self.tmp / "runner-started"
        waiting = Gated(lambda gate: self.pair(gate, mark))
        self.assertTrue(waiting.ready(10))
        waiting.cancel()
        self.assertFalse(mark.exists())


class TimedRunsTest(unittest.TestCase):
    """bench.timed_runs: which program starts where, with a fake run_bench that speaks the
    gate's protocol through the gate's own descriptor."""

    def setUp(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.where = ["outside"]
        self.devices: list[Any] = []
        self.ctx = Context(Path(tempfile.mkdtemp(prefix="cml-gate-")), {}, None, 1, 30.0,
                           lambda kind: None)
        self.args = ["--n", "8"]

    @contextmanager
    def section(self, stage: str) -> Iterator[Any]:
        before, self.where[0] = self.where[0], stage
        try:
            yield self.devices.pop(0) if self.devices else None
        finally:
            self.where[0] = before

    def fake_run(self, binary: Path, args: list[str], ctx: Context, trusted: bool,
                 runner: Path | None = None, gate: StartGate | None = None) -> bench.BenchRun:
        started_in = self.where[0]
        how = "fresh" if gate is None else wait_at(gate)
        self.events.append((binary.name, how, started_in))
        return None, None, sandbox.Outcome([str(binary)], 0, False, 0.0, "")

    def runs(self, runner: Path | None) -> list[tuple[str, str, str]]:
        with mock.patch.object(bench, "run_bench", self.fake_run):
            bench.timed_runs(self.args, self.ctx, self.section, Path("reference"),
                             Path("checker"), runner)
        return self.events

    def test_the_grader_programs_start_before_and_go_inside_the_section(self) -> None:
        # Each gated program is started in bench_start (its events say where it began) and
        # let go; nothing runs fresh.
        got = self.runs(Path("runner"))
        self.assertEqual(sorted(got), [("checker", "went", "bench_start"),
                                       ("reference", "went", "bench_start")])

    def test_the_students_own_bench_is_never_gated(self) -> None:
        got = self.runs(None)
        self.assertEqual(got, [("reference", "went", "bench_start"),
                               ("checker", "fresh", "bench")])

    def test_another_device_drops_the_waiting_programs(self) -> None:
        self.devices = ["0", "1"]  # bench_start yields 0, the bench section 1
        got = self.runs(Path("runner"))
        self.assertEqual(sorted(got), [("checker", "closed", "bench_start"),
                                       ("checker", "fresh", "bench"),
                                       ("reference", "closed", "bench_start"),
                                       ("reference", "fresh", "bench")])


if __name__ == "__main__":
    unittest.main()
