"""Where a lab's time goes (grader/costs.py): each stage's wall time, the processes it
started (counted where sandbox.run starts them, in the threads a stage hands work to) and
the tools among them, and the bench's floor from its samples."""

from __future__ import annotations

import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from types import SimpleNamespace

from grader import costs, pairs, parallel, sandbox


def _true(cwd: Path) -> sandbox.Outcome:
    return sandbox.run([sys.executable, "-c", "pass"], cwd=cwd, timeout=30, env={})


class MeterTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-costs-"))

    def test_processes_are_counted_for_the_stage_that_started_them(self):
        meter = costs.Meter()
        with meter.stage("tests"):
            _true(self.tmp)
            parallel.run_all([lambda: _true(self.tmp)] * 3, limit=3)  # worker threads
        with meter.stage("static"):
            pass
        _true(self.tmp)  # outside every stage: not counted
        record = meter.record()
        self.assertEqual(list(record), ["tests", "static"])
        self.assertEqual(record["tests"]["processes"], 4)
        self.assertEqual(record["static"]["processes"], 0)
        self.assertEqual(record["tests"]["tool_starts"], {})

    def test_a_checker_and_its_runner_are_two_processes(self):
        meter = costs.Meter()
        with meter.stage("bench"):
            pairs.run_pair([sys.executable, "-c", "pass"],
                           [sys.executable, "-c", "import sys; sys.exit(0)"],
                           cwd=self.tmp, timeout=30, env={})
        self.assertEqual(meter.record()["bench"]["processes"], 2)

    def test_wall_time_adds_up_over_entries(self):
        meter = costs.Meter()
        for _ in range(2):
            with meter.stage("profiler"):
                time.sleep(0.05)
        self.assertGreaterEqual(meter.record()["profiler"]["wall_seconds"], 0.1)

    def test_tools_are_told_apart(self):
        meter = costs.Meter()
        with meter.stage("sanitizer"):
            costs.started(["/usr/local/cuda/bin/compute-sanitizer", "--tool", "memcheck"])
            costs.started(["/opt/nsight/ncu", "--metrics", "x"])
            costs.started(["/usr/local/cuda/bin/compute-sanitizer"])
            costs.started(["lab04_runner"])
        entry = meter.record()["sanitizer"]
        self.assertEqual(entry["processes"], 4)
        self.assertEqual(entry["tool_starts"], {"compute-sanitizer": 2, "ncu": 1})

    def test_the_graders_own_short_programs_count_too(self):
        meter = costs.Meter()
        with meter.stage("static"):
            proc = costs.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True,
                             text=True, timeout=30)
        self.assertEqual(proc.stdout.strip(), "42")
        self.assertEqual(meter.record()["static"]["processes"], 1)

    def test_two_labs_in_their_own_threads_keep_their_own_counts(self):
        meters = [costs.Meter(), costs.Meter()]

        def lab(meter: costs.Meter, n: int) -> None:
            with meter.stage("tests"):
                for _ in range(n):
                    costs.started(["checker"])

        threads = [threading.Thread(target=lab, args=(m, n)) for m, n in zip(meters, (2, 5))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([m.record()["tests"]["processes"] for m in meters], [2, 5])


class FloorTest(unittest.TestCase):
    def test_the_timed_calls_of_both_runs_add_up(self):
        def stats(*ms):
            return SimpleNamespace(samples=ms)

        student = SimpleNamespace(candidate_ms=stats(1.0, 2.0), baseline_ms=stats(3.0),
                                  cases=[SimpleNamespace(ms=stats(4.0)),
                                         SimpleNamespace(ms=None)])
        reference = SimpleNamespace(candidate_ms=stats(0.5), baseline_ms=None, cases=[])
        timing = SimpleNamespace(student=student, reference=reference)
        self.assertAlmostEqual(costs.timed_device_seconds(timing), 0.0105)
        self.assertEqual(costs.timed_device_seconds(SimpleNamespace(student=None,
                                                                    reference=None)), 0.0)


if __name__ == "__main__":
    unittest.main()
