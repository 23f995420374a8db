"""pipeline.grade_submission: the one way a submission is graded, shared by the commands
(`grade`, `check`, `ci`, through commands/_common.py) and a batch's task (batch/task.py)."""

from __future__ import annotations

import ast
import signal
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import pipeline
from grader.batch import task
from grader.commands import _common
from grader.result import GradeResult

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


if __name__ == "__main__":
    unittest.main()
