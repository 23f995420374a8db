"""The test suite's heartbeat (grader/tests/heartbeat.py): a long CTest entry prints a line at
least every 30 s (issue 36, item 6), shown here with a fake slow test and a short interval;
and every CTest entry that runs unit tests runs them through it."""

from __future__ import annotations

import contextlib
import io
import re
import threading
import time
import unittest

from grader.paths import ROOT
from grader.tests import heartbeat

FAKE = f"{__name__}.SlowFake"


class SlowFake(unittest.TestCase):
    """Run by name only (no method starts with "test"): a slow setup and a slow test."""

    @classmethod
    def setUpClass(cls):
        time.sleep(0.4)

    def slow(self):
        time.sleep(0.6)

    def failing(self):
        self.fail("as it should")


class HeartbeatTest(unittest.TestCase):
    def run_fake(self, name: str, interval: float = 0.1) -> tuple[bool, str, str]:
        beats, output = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(output):
            ok = heartbeat.main([f"{FAKE}.{name}", "-v"], stream=beats, interval=interval)
        return ok, beats.getvalue(), output.getvalue()

    def test_a_slow_test_gets_a_line_every_interval(self):
        ok, beats, output = self.run_fake("slow")
        self.assertTrue(ok, output)
        lines = beats.splitlines()
        self.assertTrue(all(re.match(r"\[heartbeat \d+ s\] still running: ", x) for x in lines),
                        beats)
        setup = [x for x in lines if "setting up before the first test" in x]
        running = [x for x in lines if f"in {FAKE}.slow for " in x]
        self.assertGreaterEqual(len(setup), 2, beats)  # 0.4 s of setup at 0.1 s
        self.assertGreaterEqual(len(running), 3, beats)  # 0.6 s of test
        self.assertGreaterEqual(len(lines), 8, beats)
        self.assertIn("slow", output)  # unittest's own -v line is still written
        self.assertIn("OK", output)

    def test_a_failure_is_still_a_failure_and_the_beat_stops(self):
        # This suite may itself run under a heartbeat: only the run's own thread must end.
        before = set(threading.enumerate())
        ok, _beats, output = self.run_fake("failing", interval=0.05)
        self.assertFalse(ok)
        self.assertIn("as it should", output)
        self.assertEqual([t.name for t in set(threading.enumerate()) - before], [])

    def test_the_default_interval_is_at_most_30_s(self):
        self.assertLessEqual(heartbeat.INTERVAL_S, 30)

    def test_every_ctest_entry_of_unit_tests_runs_through_the_heartbeat(self):
        text = (ROOT / "grader" / "CMakeLists.txt").read_text()
        commands = re.findall(r"COMMAND \$\{Python3_EXECUTABLE\} -m (\S+)([^\n]*)", text)
        units = [(runner, rest) for runner, rest in commands if "grader.tests" in rest
                 or runner == "unittest" or runner.startswith("grader.tests")]
        self.assertGreaterEqual(len(units), 3, commands)  # unit entries, slurm_real, py310
        for runner, rest in units:
            self.assertEqual(runner, "grader.tests.heartbeat", rest)


if __name__ == "__main__":
    unittest.main()
