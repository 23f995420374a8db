"""The command line: every subcommand parses, and the fast ones run."""

import contextlib
import io
import shutil
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import refcache
from grader.paths import ROOT
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
        self.assertLessEqual({"doctor", "list", "check", "grade", "skeleton", "expect-fail"},
                             set(sub.choices))

    def test_grade_arguments(self):
        args = build_parser().parse_args(["grade", "sub", "--labs", "04,05", "--out", "o",
                                          "--format", "junit", "--seed", "3"])
        self.assertEqual((args.labs, str(args.out), args.format, args.seed),
                         ("04,05", "o", ["junit"], 3))
        self.assertEqual(build_parser().parse_args(["grade", "sub", "--format", ""]).format, [])

    def test_unknown_export_format_is_refused_before_grading(self):
        for argv in (["grade", "sub", "--format", "junit,pdf"],
                     ["batch", "subs", "--out", "o", "--format", "csv"]):
            err = io.StringIO()
            with self.assertRaises(SystemExit) as stop, contextlib.redirect_stderr(err):
                build_parser().parse_args(argv)
            self.assertEqual(stop.exception.code, 1)  # grader/README.md: bad arguments
            self.assertIn("unknown export format", err.getvalue())

    def test_grading_commands_share_the_grading_flags(self):
        from grader.commands._common import GradingFlags
        for argv in (["grade", "sub"], ["check", "04"], ["ci"], ["batch", "subs"]):
            args = build_parser().parse_args(argv + ["--seed", "9", "--no-gpu",
                                                     "--build-timeout", "5",
                                                     "--test-timeout", "6"])
            self.assertEqual(GradingFlags.of(args), GradingFlags(
                9, True, 5.0, 6.0, refcache.default_dir().resolve()), argv)
            self.assertEqual(GradingFlags.of(build_parser().parse_args(
                argv + ["--cache", "/c"])).cache, Path("/c"), argv)
            self.assertIsNone(GradingFlags.of(build_parser().parse_args(
                argv + ["--no-cache"])).cache, argv)

    def test_argument_errors_exit_with_the_documented_status(self):
        # Issue 36, item 13: grader/README.md says 1 for bad arguments; argparse's is 2.
        readme = (ROOT / "grader" / "README.md").read_text(encoding="utf-8")
        said = " ".join(readme.split("Exit status of `check` and `grade`:", 1)[1]
                        .split("\n\n", 1)[0].split())
        self.assertIn("1 when the grader itself could not grade (bad arguments", said)
        for argv in (["grade"], ["check"], ["check", "04", "--seed", "x"], ["nonsense"],
                     ["batch", "subs", "--bogus"], []):
            with self.subTest(argv=argv), self.assertRaises(SystemExit) as stop, \
                    contextlib.redirect_stderr(io.StringIO()) as err:
                main(argv)
            self.assertEqual(stop.exception.code, 1)
            self.assertIn("error:", err.getvalue())

    def help_of(self, command: str) -> str:
        out = io.StringIO()
        with self.assertRaises(SystemExit) as stop, contextlib.redirect_stdout(out):
            main([command, "--help"])
        self.assertEqual(stop.exception.code, 0)
        return " ".join(out.getvalue().split())

    def test_check_help_is_checks_own(self):
        # Issue 36, item 13: check --help repeated batch's option texts.
        check, batch = self.help_of("check"), self.help_of("batch")
        for batch_only in ("per array task", "write the scripts", "default gpu:1",
                           "default python3"):
            self.assertNotIn(batch_only, check)
        self.assertIn("per array task", batch)
        self.assertIn("generic resources for the job (default: the course file's", check)
        self.assertIn("submit the job without checking its options against scontrol", check)

    def test_release_list_and_a_folder_agree_with_the_help(self):
        # Issue 36, item 13: the help says OUTDIR is "not with --list"; it was accepted.
        self.assertIn("not with --list", self.help_of("release"))
        err = io.StringIO()
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(err), \
                contextlib.redirect_stdout(io.StringIO()):
            status = main(["release", tmp, "--list"])
        self.assertEqual(status, 1)
        self.assertIn("--list writes nothing: give OUTDIR or --list, not both", err.getvalue())

    def test_list_shows_lab_04_and_its_file(self):
        _status, text = run(["list"])
        self.assertIn("labs/04_tiled_matmul/tiled_matmul.cu", text)

    def test_list_shows_the_bonus_apart_from_the_100_points(self):
        # Issue 36, item 9: the bonus is on top of the 100, and its speed part is listed.
        _status, text = run(["list"])
        lab04 = text.split("\n04  ", 1)[1].split("\n05  ", 1)[0]
        self.assertTrue(lab04.startswith("Tiled matrix multiplication  (100 points, "
                                         "+10 bonus)"), lab04)
        main, bonus = lab04.split("    bonus, on top of the 100 points:\n")
        self.assertNotIn("Bonus", main)
        self.assertIn("   +4  Bonus: register-tiled kernel\n", bonus)
        self.assertIn("   +6  Bonus speed", bonus)
        self.assertIn("700 points in all, +10 bonus", text)

    def test_list_notes_what_a_rubric_probably_did_not_mean(self):
        from grader.commands import list_labs
        from grader.paths import LabPaths
        from grader.rubric import parse_rubric
        lab = LabPaths("04_tiled_matmul", "04", "tiled_matmul", ROOT)
        text = ('student_files = ["labs/04_tiled_matmul/tiled_matmul.cu"]\n'
                '[lab]\ntitle = "Ninety"\n[[correctness]]\nname = "A"\ntests = "[a]"\n'
                'points = 90\n')
        with mock.patch.object(list_labs, "discover_labs", return_value=[lab]), \
                mock.patch.object(list_labs, "load_rubric",
                                  return_value=parse_rubric(lab, text)):
            status, said = run(["list"])
        self.assertEqual(status, 0)
        self.assertIn("    note: labs/04_tiled_matmul/grading.toml: the points total 90, not 100",
                      said)
        self.assertNotIn("note:", run(["list"])[1])  # the course's own rubrics mean theirs

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

    def test_feedback_wraps_to_the_terminal_never_cutting_a_word(self):
        # Issue 36, item 8: the student's feedback fits 80 columns, every word whole.
        hint = ("hint: " + "naive: each output reads a row of A and a column of B; tiled: "
                "the same divided by the tile width. " * 3).strip()
        reason = "Your code does not compile:\n" + "labs/04_tiled_matmul/tiled_matmul.cu:12: " \
            "error: expected ';' before '}' token " * 2
        lab = LabResult("04_tiled_matmul", "Tiled", 0, 100, parts=[
            PartResult("build", "Build", "graded", 0, 0, reason.strip())],
            tests=[TestResult("The tiled kernel works", "Tiled kernel", "gpu", False, "failed",
                              0, 5, ["C[3][4] = 0, expected 12 (size 33, seed 7)", hint])])
        result = GradeResult("x", 7, "now", "0", None, {}, labs=[lab])
        with mock.patch.dict("os.environ", {"COLUMNS": "80"}):
            text = feedback(result)
        for line in text.splitlines():
            self.assertLessEqual(len(line), 80, line)
        self.assertIn(hint, " ".join(text.split()))
        self.assertIn("labs/04_tiled_matmul/tiled_matmul.cu:12:", text.split())

    def test_a_long_part_name_wraps_with_its_reason(self):
        # A metric's whole name before its reason is 88 columns: the line ran to 105 at 80.
        name = ("Global load requests of your tiled kernels per naive-kernel request "
                "(1/TILE = 0.031)")
        reason = ("No submission for this lab: labs/04_tiled_matmul/tiled_matmul.cu is not "
                  "in the submission (put your file back there and check again).")
        lab = LabResult("04_tiled_matmul", "Tiled", 0, 100, parts=[
            PartResult("build", "Build", "graded", 0, 0, reason),
            PartResult("metric", name, "graded", 0, 15, reason)])
        result = GradeResult("x", 7, "now", "0", None, {}, labs=[lab])
        with mock.patch.dict("os.environ", {"COLUMNS": "80"}):
            text = feedback(result)
        for line in text.splitlines():
            self.assertLessEqual(len(line), 80, line)
        self.assertIn(f"{name}: {reason}", " ".join(text.split()))

    def test_feedback_shows_the_hint_after_many_messages(self):
        messages = [f"C[{i}][0] = 0, expected {i + 1}" for i in range(20)]
        lab = LabResult("04_tiled_matmul", "Tiled", 0, 100, tests=[TestResult(
            "The tiled kernel works", "Tiled kernel", "host", False, "failed", 0, 5,
            messages + ["hint: two barriers per phase"])])
        text = feedback(GradeResult("x", 7, "now", "0", None, {}, labs=[lab]))
        self.assertIn("C[5][0] = 0, expected 6", text)
        self.assertNotIn("C[6][0]", text)
        self.assertIn("… and 14 more message(s)", text)
        self.assertTrue(text.rstrip().endswith("hint: two barriers per phase"), text)


class FitsTheTerminalTest(unittest.TestCase):
    """A person's commands fit an 80-column terminal (issue 36, item 8): doctor's findings,
    list's metric names and an argument error ran to 117–188 columns; every word stays."""

    def said(self, argv: list[str], columns: int) -> tuple[str, str]:
        out, err = io.StringIO(), io.StringIO()
        with mock.patch.dict("os.environ", {"COLUMNS": str(columns)}), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit:
                pass
        return out.getvalue(), err.getvalue()

    def test_every_line_fits_and_keeps_its_words(self):
        far = "/nonexistent/submissions-of-the-autumn-class/section-b/late-ones"  # a word
        for argv in (["list"], ["doctor"], ["cache", "lists"], ["batch", far, "--out", far],
                     ["grade", far, "--labs", "01", "--out", far]):
            wide = self.said(argv, 1000)
            narrow = self.said(argv, 80)
            for text, long_text in zip(narrow, wide):
                for line in text.splitlines():
                    self.assertLessEqual(len(line), 80, f"{argv}: {line}")
                self.assertEqual(text.split(), long_text.split(), argv)
            self.assertTrue(any(len(line) > 80 for text in wide for line in text.splitlines()),
                            f"{argv} said nothing wider than 80 columns: the test tests nothing")

    def test_a_command_to_copy_is_never_broken(self):
        # `batch --slurm`'s "submit with:" line was wrapped at 120 columns when the output is
        # no terminal, and its first line, run as the shell line, submitted an empty script.
        from grader.exports.common import fitted_output, print_verbatim
        command = ("submit with:      prep=$(sbatch --parsable /course/out/slurm/prep.sbatch) "
                   "&& sbatch --dependency=afterok:${prep%%;*} /course/out/slurm/grade.sbatch")
        out = io.StringIO()
        with mock.patch.dict("os.environ", {"COLUMNS": "80"}), contextlib.redirect_stdout(out):
            with fitted_output():
                print("wrote /course/out/slurm/grade.sbatch (120 array tasks) and "
                      "/course/out/slurm/prep.sbatch, the prep job first")
                print_verbatim(command)
                print("done")
        lines = out.getvalue().splitlines()
        self.assertIn(command, lines)
        self.assertEqual(lines[-1], "done")
        self.assertLess(lines.index(command), lines.index("done"))
        self.assertTrue(all(len(line) <= 80 for line in lines if line != command), lines)

    def test_the_coloured_table_goes_through_as_it_is(self):
        # On a terminal the table's lines carry colour codes, which take no columns: a line
        # that fits is not wrapped again for the length of its codes.
        from grader.exports.common import fit, fitted_output
        from grader.exports.table import terminal_table
        lab = LabResult("04_tiled_matmul", "Tiled matrix multiplication", 35, 100, parts=[
            PartResult("correctness", "Tiled kernel, compile-time tile", "graded", 10, 20,
                       "1 of 2 test cases pass; failing: the tiled kernel works for n = 33")])
        result = GradeResult("x", 7, "now", "0", None, {}, labs=[lab])
        out = io.StringIO()
        with mock.patch.dict("os.environ", {"COLUMNS": "80"}):
            table = terminal_table(result, color=True)
            with contextlib.redirect_stdout(out), fitted_output():
                print(table)
        self.assertIn("\033[", table)
        self.assertTrue(any(len(line) > 80 for line in table.splitlines()),
                        "no line is longer than 80 with its codes: the test tests nothing")
        self.assertEqual(out.getvalue(), table + "\n")
        self.assertEqual(fit("\033[32m" + "word " * 15 + "\033[0m", 80),
                         ["\033[32m" + "word " * 15 + "\033[0m"])

    def test_a_continued_line_goes_on_under_its_text(self):
        from grader.exports.common import fit
        line = ("  ok    tools' logs: the log's descriptors closed, the tool out of reach and "
                "of signals (Landlock ABI 7)")
        self.assertEqual(fit(line, 60), [
            "  ok    tools' logs: the log's descriptors closed, the tool",
            "        out of reach and of signals (Landlock ABI 7)"])
        self.assertEqual(fit("       10  Sectors per load request, your coalesced kernel (4)",
                             40), ["       10  Sectors per load request,",
                                   "           your coalesced kernel (4)"])
        self.assertEqual(fit("json stays: {\"a\": 1}", 80), ["json stays: {\"a\": 1}"])
        out = io.StringIO()
        with mock.patch.dict("os.environ", {"COLUMNS": "80"}), contextlib.redirect_stdout(out):
            main(["doctor", "--json"])
        self.assertIsInstance(__import__("json").loads(out.getvalue()), dict)


class CheckMissingFileTest(unittest.TestCase):
    """`check` of a lab whose file the working copy lacks says so as `grade` does, and
    grades the other labs (issue 36, item 2)."""

    def test_a_missing_file_is_named_plainly(self):
        from grader.commands import check
        from grader.paths import find_lab
        from grader.rubric import load_rubric
        tmp = Path(tempfile.mkdtemp(prefix="cml-check-missing-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        for rel in load_rubric(find_lab("02")).student_files:  # lab 04's file is missing
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text("// mine\n")
        graded = []

        def grade_submission(submission, labs, flags, work, quiet):
            graded.append([lab.folder for lab in labs])
            result = GradeResult(str(submission), 1, "t", "v", None, {})
            if any(lab.number == "04" for lab in labs):  # what configuring it says
                result.errors.append("CMake could not configure the pristine tree: CMake "
                                     "Error at cmake/CmlLab.cmake:54 (message):")
                return result, 1
            result.labs = [LabResult(lab.folder, "t", 10.0, 10.0) for lab in labs]
            return result, 0

        err, stdout = io.StringIO(), io.StringIO()
        with mock.patch.object(check, "ROOT", tmp), mock.patch.object(check, "LAST", tmp / "l"), \
                mock.patch.object(check, "WORK", tmp / "w"), \
                mock.patch.object(check, "grade_submission", grade_submission), \
                contextlib.redirect_stderr(err), contextlib.redirect_stdout(stdout):
            status = main(["check", "04", "02", "--no-gpu", "--seed", "5"])
        out = stdout.getvalue()
        rel = "labs/04_tiled_matmul/tiled_matmul.cu"
        self.assertIn(f"check: {rel} is not in the submission", err.getvalue())
        self.assertNotIn("CMake", err.getvalue() + out)
        self.assertIn(f"04_tiled_matmul:\n  Build: No submission for this lab: {rel} is not in "
                      "the submission", out)
        # said once, by Build; every other part points to it (it was said under each part)
        self.assertEqual(" ".join(out.split()).count(f"{rel} is not in the submission"), 2)
        self.assertIn("No points: there is no submission for this lab (see Build).", out)
        self.assertEqual(graded, [["02_coalescing"]])
        self.assertEqual(status, 0)
        result = GradeResult.from_json((tmp / "l" / "result.json").read_text())
        self.assertEqual([(lab.lab, lab.failure) for lab in result.labs],
                         [("04_tiled_matmul", "no_submission"), ("02_coalescing", None)])
        self.assertEqual((result.labs[0].points, result.labs[0].max_points), (0.0, 100.0))


class TomlMissingTest(unittest.TestCase):
    """Without tomli (Python 3.10) the message names the interpreter that ran the grader and
    where it looked (issue 36, item 11)."""

    def test_the_message_names_the_interpreter_and_the_path(self):
        from grader import tomlreader
        text = tomlreader.toml_missing("/opt/py/bin/python3.10", (3, 10, 4),
                                       ["/home/ta/course", "/opt/py/lib/python3.10", ""])
        self.assertIn("Python 3.10 (/opt/py/bin/python3.10) has no TOML reader", text)
        self.assertIn("looked for the module tomli in /home/ta/course, /opt/py/lib/python3.10 and "
                      "found none", text)
        self.assertIn("`/opt/py/bin/python3.10 -m pip install tomli`", text)

    def test_the_command_is_named_as_it_was_run(self):
        import grader.__main__ as entry
        with mock.patch.object(entry.sys, "executable", "/opt/py/bin/python3.10"):
            self.assertEqual(entry.program(), "python3.10 -m grader")


class MemorySafetyGateTest(unittest.TestCase):
    def test_sanitizer_points_need_the_checked_cases_to_pass(self):
        from grader.parts.memory_safety import memory_safety_gate
        from grader.catch2.testrun import Case, CaseRun
        cases = [Case("small", ("lab04", "gpu", "sanitizer")), Case("big", ("lab04", "gpu"))]
        runs = {"small": CaseRun("small", cases[0].tags, "failed")}
        self.assertIn("must pass first", memory_safety_gate(cases, runs, "[lab04][sanitizer]"))
        runs["small"].status = "passed"
        self.assertEqual(memory_safety_gate(cases, runs, "[lab04][sanitizer]"), "")
        self.assertIn("rubric problem", memory_safety_gate(cases, runs, "[nothing]"))


if __name__ == "__main__":
    unittest.main()
