"""The command line: every subcommand parses, and the fast ones run."""

import contextlib
import io
import unittest

from grader.__main__ import build_parser, main
from grader.commands.check import feedback
from grader.result import GradeResult, LabResult, PartResult, TestResult


def run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(argv)
    return status, out.getvalue()


class CliTest(unittest.TestCase):
    def test_commands_have_their_exact_names(self):
        sub = next(a for a in build_parser()._actions if a.dest == "command")
        self.assertEqual(set(sub.choices),
                         {"doctor", "list", "check", "grade", "skeleton", "expect-fail"})

    def test_grade_arguments(self):
        args = build_parser().parse_args(["grade", "sub", "--labs", "04,05", "--out", "o",
                                          "--format", "junit", "--seed", "3"])
        self.assertEqual((args.labs, str(args.out), args.format, args.seed),
                         ("04,05", "o", "junit", 3))

    def test_list_shows_lab_04_and_its_file(self):
        _status, text = run(["list"])
        self.assertIn("labs/04_tiled_matmul/tiled_matmul.cu", text)

    def test_doctor_runs_anywhere(self):
        status, text = run(["doctor"])
        self.assertIn("Tools", text)
        self.assertIn("python3", text)
        self.assertIn(status, (0, 1))

    def test_unknown_lab_is_an_error_not_a_traceback(self):
        status, _ = run(["grade", ".", "--labs", "99", "--out", "/nonexistent/x"])
        self.assertEqual(status, 1)

    def test_feedback_shows_the_failure_message_and_hint(self):
        lab = LabResult("04_tiled_matmul", "Tiled", 0, 100, parts=[
            PartResult("build", "Build", "graded", 0, 0, "")],
            tests=[TestResult("The tiled kernel works", "Tiled kernel", "gpu", False, "failed",
                              0, 5, ["C[3][4] = 0, expected 12 (size 33, seed 7)",
                                     "hint: two barriers per phase"])])
        result = GradeResult("x", 7, "now", "0", None, {}, labs=[lab])
        text = feedback(result)
        self.assertIn("The tiled kernel works", text)
        self.assertIn("C[3][4] = 0, expected 12 (size 33, seed 7)", text)
        self.assertIn("hint: two barriers per phase", text)


if __name__ == "__main__":
    unittest.main()
