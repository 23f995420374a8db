"""An interrupt at any moment of `grader batch` stops it with status 130, says "run the same
command again to go on", and loses nothing: the run after it grades what was left and keeps
what was done (issue 36, item 15). The batch, its task processes and their signal handling
are the real ones; the grade of a submission is a fake one of about a second
(grader/tests/fake_batch.py), so no compiler or GPU is needed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

from grader.paths import ROOT, discover_labs
from grader.tests import fake_batch

STUDENTS = {"ann": 11, "bob": 22, "cat": 33, "dan": 44}
STOPPED = "run the same command again to go on"
LAB = discover_labs()[0].number  # any lab: the grade is a fake one


class Run:
    """One `batch` run in a process group of its own, its output read as it comes."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None,
                 preexec=None) -> None:
        cmd = [sys.executable, "-m", "grader.tests.fake_batch", "batch", str(tmp / "subs"),
               "--out", str(tmp / "out"), "--labs", LAB, "--no-gpu", "-j", "2",
               "--no-cache", "--format", "", "--seed", "5"]
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True, preexec_fn=preexec)
        self.out: list[str] = []
        self.err: list[str] = []
        self.changed = threading.Condition()
        self.readers = [threading.Thread(target=self._read, args=(s, lines), daemon=True)
                        for s, lines in ((self.proc.stdout, self.out),
                                         (self.proc.stderr, self.err))]
        for reader in self.readers:
            reader.start()

    def _read(self, stream, lines: list[str]) -> None:
        for line in stream:
            with self.changed:
                lines.append(line)
                self.changed.notify_all()
        with self.changed:
            lines.append("")  # the end
            self.changed.notify_all()

    def wait_for(self, lines: list[str], count: int, timeout: float = 60) -> bool:
        """Until `lines` has `count` lines; False when the stream ended first."""
        with self.changed:
            self.changed.wait_for(lambda: len(lines) >= count or "" in lines, timeout)
            return len([x for x in lines if x]) >= count

    def interrupt(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except ProcessLookupError:  # it had ended already
            pass

    def end(self, timeout: float = 120) -> int:
        code = self.proc.wait(timeout=timeout)
        for reader in self.readers:
            reader.join(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code

    def text(self) -> str:
        return "".join(self.out) + "".join(self.err)


class BatchInterruptTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-batch-int-"))
        self.tmp.chmod(0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        for name, points in STUDENTS.items():
            (self.tmp / "subs" / name).mkdir(parents=True)
            (self.tmp / "subs" / name / "points.txt").write_text(str(points))

    def stamps(self) -> dict[str, str]:
        found = {}
        for name in STUDENTS:
            path = self.tmp / "out" / name / "stamp.json"
            if path.is_file():
                found[name] = json.loads(path.read_text())["status"]
        return found

    def finished_grades(self, name: str) -> int:
        log = self.tmp / "subs" / name / "grades.log"
        return log.read_text().count("done") if log.is_file() else 0

    def assert_stopped(self, run: Run, code: int, where: str) -> None:
        self.assertEqual(code, 130, f"{where}: {run.text()}")
        self.assertIn(STOPPED, run.text(), where)
        for name, status in self.stamps().items():  # what is written is true
            self.assertIn(status, ("graded", "interrupted"), f"{where}: {name}")

    def assert_resumed(self, where: str) -> None:
        """The run after the interrupt grades what was left and keeps what was done."""
        graded_before = {n for n, s in self.stamps().items() if s == "graded"}
        finished_before = {n: self.finished_grades(n) for n in STUDENTS}
        run = Run(self.tmp, {fake_batch.GRADE_S: "0.2"})
        code = run.end()
        self.assertEqual(code, 0, f"{where}, resumed: {run.text()}")
        self.assertEqual(self.stamps(), {n: "graded" for n in STUDENTS}, where)
        for name, points in STUDENTS.items():
            result = json.loads((self.tmp / "out" / name / "result.json").read_text())
            self.assertEqual(result["points"], points, f"{where}: {name}")
            kept = name in graded_before
            self.assertEqual(self.finished_grades(name), finished_before[name] + (not kept),
                             f"{where}: {name} {'kept' if kept else 'graded again'}")
        gradebook = (self.tmp / "out" / "gradebook.csv").read_text()
        for name in STUDENTS:
            self.assertIn(name, gradebook)

    def test_an_interrupt_at_any_moment_stops_the_batch_and_loses_nothing(self):
        # (stream, lines seen, then seconds): before the first task, while the first two
        # run, between tasks (right after a progress line), during the later ones, and
        # after the last (while the gradebook is written)
        points = [("err", 1, 0.0), ("err", 1, 0.4), ("out", 1, 0.0), ("out", 1, 0.3),
                  ("out", 2, 0.0), ("out", 3, 0.1), ("out", 4, 0.0)]
        for stream, count, then in points:
            where = f"after {count} {stream} line(s) and {then} s"
            with self.subTest(where):
                shutil.rmtree(self.tmp / "out", ignore_errors=True)
                for name in STUDENTS:
                    (self.tmp / "subs" / name / "grades.log").unlink(missing_ok=True)
                run = Run(self.tmp, {fake_batch.GRADE_S: "0.8"})
                seen = run.wait_for(run.out if stream == "out" else run.err, count)
                if not seen:  # it ended first: a batch that was not interrupted
                    self.assertEqual(run.end(), 0, run.text())
                    continue
                time.sleep(then)
                run.interrupt()
                code = run.end()
                if code == 0 and count == 4:  # the interrupt came after its last word
                    continue
                self.assert_stopped(run, code, where)
                self.assert_resumed(where)

    def test_an_interrupt_the_kernel_gives_a_task_thread_stops_the_batch_at_once(self):
        # A signal sent to a process goes to any of its threads; the batch's main thread
        # must act on it then, not when a grade (minutes, in real life) ends.
        run = Run(self.tmp, {fake_batch.GRADE_S: "30", fake_batch.POKE_WORKER_S: "0.5"})
        start = time.monotonic()
        code = run.end(timeout=60)
        self.assert_stopped(run, code, "SIGINT to a task thread")
        self.assertLess(time.monotonic() - start, 20, run.text())
        self.assertEqual([self.finished_grades(n) for n in STUDENTS], [0] * len(STUDENTS))
        self.assert_resumed("SIGINT to a task thread")

    def test_a_batch_started_deaf_to_sigint_still_stops(self):
        # Started with SIGINT ignored (a background job of a shell script) and blocked (by
        # the thread that started it), the batch still stops when told to.
        def deaf() -> None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

        run = Run(self.tmp, {fake_batch.GRADE_S: "0.8"}, preexec=deaf)
        self.assertTrue(run.wait_for(run.out, 1), run.text())
        run.interrupt()
        self.assert_stopped(run, run.end(), "a batch started deaf to SIGINT")
        self.assert_resumed("a batch started deaf to SIGINT")


if __name__ == "__main__":
    unittest.main()
