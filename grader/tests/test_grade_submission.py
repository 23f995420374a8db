"""pipeline.grade_submission: the one way a submission is graded, shared by the commands
(`grade`, `check`, `ci`, through commands/_common.py) and a batch's task (batch/task.py)."""

from __future__ import annotations

import ast
import signal
import tempfile
import threading
import time
import unittest
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from grader import pipeline, sandbox
from grader.costs import Meter
from grader.batch import task
from grader.commands import _common
from grader.paths import ROOT, LabPaths
from grader.result import GRADER_ERROR, INTERRUPTED, GradeResult
from grader.rubric import load_rubric

GRADER = Path(pipeline.__file__).parent


def _empty() -> GradeResult:
    return GradeResult(submission="sub", seed=5, created="", grader_version="", device=None,
                       tools={})


def _calls(module_file: Path) -> set[str]:
    """The dotted names a module calls: `pipeline.grade_submission`, `grade`, ..."""
    out = set()
    for node in ast.walk(ast.parse(module_file.read_text())):
        if isinstance(node, ast.Call):
            f, parts = node.func, []
            while isinstance(f, ast.Attribute):
                parts.append(f.attr)
                f = f.value
            if isinstance(f, ast.Name):
                out.add(".".join([f.id, *reversed(parts)]))
    return out


class OneGradeSubmissionTest(unittest.TestCase):
    def test_the_commands_and_the_batch_call_the_pipelines_and_grade_no_other_way(self):
        for rel in ("commands/_common.py", "batch/task.py"):
            calls = _calls(GRADER / rel)
            self.assertIn("pipeline.grade_submission", calls, rel)
            self.assertNotIn("pipeline.grade", calls, rel)  # no copy of the guarded grade
            self.assertNotIn("signal.alarm", calls, rel)

    def test_the_commands_exit_status_follows_how_the_grade_ended(self):
        flags = _common.GradingFlags(seed=5, no_gpu=True, build_timeout=None,
                                     test_timeout=None, cache=None)
        for ended, status in ((pipeline.ENDED_GRADED, 0), (pipeline.ENDED_GRADER_ERROR, 1),
                              (pipeline.ENDED_INTERRUPTED, 130)):
            with mock.patch.object(pipeline, "grade_submission",
                                   return_value=(_empty(), ended)) as shared:
                _, got = _common.grade_submission(Path("sub"), [], flags, quiet=True)
            self.assertEqual(got, status, ended)
            opts = shared.call_args.args[0]
            self.assertEqual((opts.seed, opts.gpu), (5, False))

    def test_the_batch_task_module_keeps_no_alarm_of_its_own(self):
        self.assertFalse(hasattr(task, "TimeLimit"))
        self.assertFalse(hasattr(task, "_on_alarm"))


class GradeSubmissionTest(unittest.TestCase):
    def setUp(self):
        self.opts = pipeline.Options(submission=Path(tempfile.gettempdir()), labs=[])
        self.before = {s: signal.getsignal(s) for s in
                       (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}

    def ended(self, grade, time_limit=None) -> tuple[GradeResult, str]:
        with mock.patch.object(pipeline, "new_result", return_value=_empty()), \
                mock.patch.object(pipeline, "grade", grade):
            out = pipeline.grade_submission(self.opts, time_limit)
        self.assertEqual({s: signal.getsignal(s) for s in self.before}, self.before)
        return out

    def test_a_clean_grade_is_graded(self):
        result, ended = self.ended(lambda opts, result: None)
        self.assertEqual((ended, result.errors), (pipeline.ENDED_GRADED, []))

    def test_an_error_of_the_graders_own_is_a_grader_error(self):
        def noted(opts, result):
            result.errors.append("cmake failed")
        self.assertEqual(self.ended(noted)[1], pipeline.ENDED_GRADER_ERROR)

        def raises(opts, result):
            raise RuntimeError("boom")
        result, ended = self.ended(raises)
        self.assertEqual(ended, pipeline.ENDED_GRADER_ERROR)
        self.assertIn("the grader failed: RuntimeError: boom", result.errors[0])

    def test_sigint_interrupts_and_keeps_what_is_known(self):
        def interrupted(opts, result):
            result.labs.append("kept")
            signal.raise_signal(signal.SIGINT)
        with mock.patch.object(pipeline.sandbox, "kill_all") as killed:
            result, ended = self.ended(interrupted)
        self.assertEqual(ended, pipeline.ENDED_INTERRUPTED)
        self.assertEqual(result.labs, ["kept"])
        self.assertIn("interrupted (signal", result.errors[0])
        killed.assert_called()

    def test_the_time_limit_stops_the_grade(self):
        def slow(opts, result):
            signal.raise_signal(signal.SIGALRM)  # as the alarm would, after the limit
        with mock.patch.object(pipeline.sandbox, "kill_all"):
            result, ended = self.ended(slow, time_limit=30)
        self.assertEqual(ended, pipeline.ENDED_TIMED_OUT)
        self.assertIn("longer than the limit of 30 s", result.errors[0])
        self.assertEqual(signal.alarm(0), 0)  # the alarm was cancelled


class LabsTogetherTest(unittest.TestCase):
    """The labs of one grade are graded at the same time, each result in its lab's place; an
    interrupt stops them all and every lab not finished says it was interrupted."""

    def setUp(self):
        lab = LabPaths("01_warp_sizing", "01", "warp_sizing", ROOT)
        self.rubric = load_rubric(lab)
        self.labs = [pipeline._LabRun(LabPaths(f"0{n}_lab", f"0{n}", "lab", ROOT),
                                      SimpleNamespace(rubric=self.rubric, costs=Meter()), {})
                     for n in range(1, 6)]
        self.result = _empty()
        self.result.labs += [run.result for run in self.labs]
        scrub = mock.patch.object(pipeline.leaks.Secrets, "of_lab")
        scrub.start()
        self.addCleanup(scrub.stop)

    def grade(self, grade_lab, workers: int = 4) -> None:
        with mock.patch.object(pipeline, "grade_lab", grade_lab), \
                mock.patch.object(pipeline, "lab_workers", return_value=workers):
            pipeline._grade_labs(self.labs, self.result, ROOT, [])

    def test_labs_run_at_the_same_time_and_keep_their_order(self):
        at_once, peak, lock = [0], [0], threading.Lock()

        def grade_lab(job, lab_result):
            with lock:
                at_once[0] += 1
                peak[0] = max(peak[0], at_once[0])
            time.sleep(0.3 if lab_result.lab == "01_lab" else 0.1)
            lab_result.points = float(lab_result.lab[1])
            with lock:
                at_once[0] -= 1

        self.grade(grade_lab, workers=4)
        self.assertEqual(peak[0], 4)  # four at once
        self.assertEqual([lab.lab for lab in self.result.labs],
                         ["01_lab", "02_lab", "03_lab", "04_lab", "05_lab"])
        self.assertTrue(all(run.done for run in self.labs))

    def test_a_lab_the_grader_fails_on_leaves_the_others_graded(self):
        def grade_lab(job, lab_result):
            if lab_result.lab == "02_lab":
                raise RuntimeError("boom")

        self.grade(grade_lab)
        self.assertEqual([lab.failure for lab in self.result.labs],
                         [None, GRADER_ERROR, None, None, None])
        self.assertEqual(self.result.errors, ["02_lab: the grader failed: RuntimeError: boom"])

    def test_an_interrupt_stops_every_lab_and_each_says_so(self):
        main = threading.get_ident()
        started = threading.Event()

        def stopping_in_force() -> None:
            """Until the main thread has handled the signal (at most 10 s: then the labs go
            on, and the test fails)."""
            deadline = time.monotonic() + 10
            while not sandbox.stopping() and time.monotonic() < deadline:
                time.sleep(0.01)

        def grade_lab(job, lab_result):
            if lab_result.lab == "01_lab":
                started.wait(5)
                signal.pthread_kill(main, signal.SIGINT)
                stopping_in_force()
                raise RuntimeError("its process was killed")  # by the handler's kill_all
            started.set()
            stopping_in_force()
            sandbox.run(["true"], cwd=Path("/"), timeout=5, env={})  # refused: stopping
            lab_result.points = 1.0

        saved = signal.signal(signal.SIGINT, pipeline.interrupt_handler)
        try:
            with mock.patch.object(pipeline.sandbox, "kill_all"), \
                    self.assertRaises(pipeline.Interrupted):
                self.grade(grade_lab, workers=2)
        finally:
            signal.signal(signal.SIGINT, saved)
        self.assertEqual([lab.failure for lab in self.result.labs], [INTERRUPTED] * 5)
        self.assertEqual(sorted(self.result.errors),
                         [f"0{n}_lab: grading was interrupted" for n in range(1, 6)])
        self.assertTrue(all(run.done for run in self.labs))
        self.assertFalse(sandbox.stopping())  # the next grade starts its processes


if __name__ == "__main__":
    unittest.main()
