"""The batch's adversarial suite: inputs an instructor's class can bring (rosters, Canvas and
Moodle downloads, git submissions, extensions, overrides) that must end in the grade of the
right student, a message, or a refusal that writes nothing — never a traceback, a formula in
a gradebook or a grade given to somebody else.

Every case runs `python3 -m grader batch` (the command's `run`) on lab 01 with `--no-gpu`.
Grading itself is replaced by a stored result per student (its points read from the
student's file, `// points N`) written by the task's own `_finish`, so the suite needs no
toolchain and takes seconds; what is under test is everything around the grade. CASES
lists each case with the outcome it must get; each test method is one case.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import re
import shutil
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import batch, csvsafe
from grader.batch import regrades, task
from grader.commands import grade_class as command
from grader.result import GRADED, GradeResult, LabResult, PartResult
from grader.tests.test_batch_regrades import _git

LAB = "01_warp_sizing"
FILE = "labs/01_warp_sizing/warp_sizing.cu"
BASE = "warp_sizing.cu"
FORMULA = '=HYPERLINK("http://evil.example","click")'
FOLDER_FORMULA = '=HYPERLINK("evil.example","click")'  # no "/": it names a folder

CASES = {
    "formula_in_lms_roster_name": "gradebook.csv and canvas-import.csv hold it as text ('=)",
    "formula_in_moodle_folder_name": "moodle-import.csv holds the full name as text ('=)",
    "plus_minus_at_tab_cells": "each of + - @ tab CR quoted; -2.5 and +3 stay numbers",
    "quoted_cells_read_back_exactly": "plain_cell(safe_cell(x)) == x, an existing ' kept",
    "case_differs_ann_and_ann": "Ann's points go to Ann's row, ann's to ann's (exact join)",
    "duplicate_display_names_with_ids": "two John Smiths told apart by their e-mails",
    "duplicate_display_names_without_ids": "refused (exit 2), both roster rows named",
    "roster_gives_an_id_twice": "refused (exit 2), both rows named",
    "student_in_no_roster_row": "graded; told that no roster row matches",
    "moodle_ann_5_ann_6_ann_space_5": "three distinct folders; nobody graded twice",
    "moodle_name_is_a_batch_file": "a folder named slurm gets its id, not the batch's folder",
    "student_folder_named_summary_md": "refused (exit 2) with a message; nothing written",
    "student_twice_in_a_csv": "refused (exit 2), both rows named",
    "symlinked_student_folder": "refused (exit 2), the link and its target named",
    "two_rows_one_folder": "refused (exit 2), both students named",
    "symlinked_folder_of_flat_uploads": "refused (exit 2), the link named",
    "extension_next_friday": "refused (exit 2): file, row, student; nothing written",
    "extension_for_unknown_student": "refused (exit 2): file, row, the name",
    "bad_deadline_and_bad_policy_together": "refused (exit 2) with one line for each",
    "override_unknown_student_and_too_many_points": "refused (exit 2), both rows; no file changed",
    "override_valid_after_refusal": "applied to result.json, exports and gradebook alike",
    "rescore_with_bad_override": "refused (exit 2) before any result is rewritten",
    "interrupted_collect_changes_nothing": "a failure mid-write leaves every file as it was",
    "late_penalty_in_result_and_exports": "result.json, Gradescope and summary.md show both scores",
    "canvas_ignored_files_listed": "files matching no lab file and not Canvas's listed in lms.json",
    "git_commit_date_backdated": "with --fetched-at the fetch time decides lateness, not the date",
    "git_fetched_after_deadline_under_cutoff": "refused (exit 2): the fetch proves nothing then",
    "fetched_at_recorded": "fetched_at in batch.json, manifest.json and gradebook.csv",
    "roster_join_checked_before_grading": "an ambiguous roster refuses the batch before grading",
    "regrade_of_unknown_student": "refused (exit 2), the plan left as it was",
}


def points_of(path: Path) -> float:
    """The points a fake grade gives: `// points N` in the student's file, else 0."""
    try:
        m = re.search(r"// points (\d+(\.\d+)?)", (path / FILE).read_text())
    except OSError:
        return 0.0
    return float(m.group(1)) if m else 0.0


def fake_run_local(out: Path, jobs: int, force: bool = False, keep_work: bool = False,
                   report=None, only=None) -> list[batch.Outcome]:
    """The batch's tasks, each result made from the student's file and written by the
    task's own _finish (result.json, exports, stamp, history)."""
    plan = batch.Plan.load(out)
    outcomes = []
    for sub in plan.submissions:
        if only is not None and sub.student not in only:
            continue
        points = points_of(Path(sub.path))
        parts = [PartResult("correctness", "Warps per block and idle lanes", GRADED, points,
                            60.0),
                 PartResult("correctness", "Divergence model", GRADED, 0.0, 40.0)]
        lab = LabResult(LAB, "Warp sizing", points, 100.0, parts, [], build={"ok": True})
        result = GradeResult(sub.path, plan.seed, "2026-01-01T00:00:00+00:00", "0", None, {},
                             [lab], points, 100.0)
        stamp = task._finish(out, plan, sub, result, batch.GRADED, {}, "k", 1.0, 0.0,
                             lambda text: None)
        outcomes.append(batch.Outcome(sub.student, stamp.status, points, 100.0, 1.0))
    return outcomes


class BatchAdversarialTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-batch-adv-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.out = self.tmp / "out"
        self.stderr = ""

    # ----------------------------------------------------------------- helpers

    def student(self, folder: Path, points: float | None = None) -> Path:
        (folder / "labs" / LAB).mkdir(parents=True, exist_ok=True)
        (folder / FILE).write_text(f"// points {points:g}\n" if points is not None else "//\n")
        return folder

    def batch(self, *argv: str, grade: bool = True) -> int:
        parser = argparse.ArgumentParser()
        command.add_parser(parser.add_subparsers())
        args = parser.parse_args(["batch", *argv])
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), \
                mock.patch("grader.batch.run_local",
                           fake_run_local if grade else self.no_grading):
            code = command.run(args)
        self.stderr = err.getvalue()
        return code

    @staticmethod
    def no_grading(*_args, **_kwargs):
        raise AssertionError("graded although the inputs were refused")

    def run_batch(self, source: Path, *extra: str, grade: bool = True) -> int:
        return self.batch(str(source), "--out", str(self.out), "--labs", "01", "--no-gpu",
                          "--no-cache", "--seed", "1", "--format", "gradescope,markdown",
                          *extra, grade=grade)

    def rows(self, name: str = "gradebook.csv") -> list[dict[str, str]]:
        return csvsafe.read_csv((self.out / name).read_text())[1]

    def raw_rows(self, name: str) -> list[list[str]]:
        return list(csv.reader(io.StringIO((self.out / name).read_text())))

    def refused(self, code: int, *needles: str) -> None:
        self.assertEqual(code, 2, self.stderr)
        self.assertIn("nothing written", self.stderr)
        self.assertNotIn("Traceback", self.stderr)
        for needle in needles:
            self.assertIn(needle, self.stderr)

    def snapshot(self) -> dict[str, bytes]:
        return {str(p.relative_to(self.out)): p.read_bytes()
                for p in sorted(self.out.rglob("*")) if p.is_file()} if self.out.exists() else {}

    def roster(self, rows: list[dict[str, str]], name: str = "roster.csv") -> Path:
        path = self.tmp / name
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return path

    def moodle(self, *folders: tuple[str, float]) -> Path:
        dl = self.tmp / "moodle"
        for name, points in folders:
            (dl / name).mkdir(parents=True)
            (dl / name / BASE).write_text(f"// points {points:g}\n")
        return dl

    # ----------------------------------------------------------------- CSV cells

    def test_formula_in_lms_roster_name(self):
        subs = self.tmp / "subs"
        self.student(subs / "jsmith", 40)
        roster = self.roster([{"Student": FORMULA, "ID": "11", "SIS User ID": "s1",
                               "SIS Login ID": "jsmith", "Section": "@A"}])
        self.assertEqual(self.run_batch(subs, "--roster", str(roster), "--export", "canvas"),
                         0, self.stderr)
        self.assertEqual(self.raw_rows("gradebook.csv")[1][1], "'" + FORMULA)
        canvas = self.raw_rows("canvas-import.csv")
        self.assertEqual(canvas[2][:5], ["'" + FORMULA, "11", "s1", "jsmith", "'@A"])
        self.assertEqual(canvas[2][5], "40")
        self.assertEqual(self.rows("gradebook.csv")[0]["name"], FORMULA)  # read back exactly

    def test_formula_in_moodle_folder_name(self):
        dl = self.moodle((f"{FOLDER_FORMULA}_5_assignsubmission_file_", 30))
        code = self.run_batch(dl, "--export", "moodle")
        self.assertEqual(code, 0, self.stderr)
        moodle = self.raw_rows("moodle-import.csv")
        self.assertEqual(moodle[1][3], "'" + FOLDER_FORMULA)
        self.assertEqual(moodle[1][4], "30")
        self.assertEqual(self.rows()[0]["student"], "HYPERLINK_evil_example_click")

    def test_plus_minus_at_tab_cells(self):
        for text in ("+1+2", "-1-2", "@SUM(A1)", "\tx", "\rx", "=1"):
            self.assertEqual(csvsafe.safe_cell(text), "'" + text)
        for number in ("-2.5", "+3", "45", "1e3", ""):
            self.assertEqual(csvsafe.safe_cell(number), number)
        self.assertEqual(csvsafe.safe_cell(-2.5), "-2.5")
        text = csvsafe.to_csv([{"a": "-x", "b": "-1"}], ["a", "b"])
        self.assertEqual(text, "a,b\n'-x,-1\n")

    def test_quoted_cells_read_back_exactly(self):
        for value in ("=x", "'=x", "''=x", "'", "'-3", "-3", "'abc", "plain", "@", ""):
            self.assertEqual(csvsafe.plain_cell(csvsafe.safe_cell(value)), value, value)
        self.assertEqual(csvsafe.safe_cell("'=x"), "''=x")  # the ' a student typed is kept

    # ----------------------------------------------------------------- exact joins

    def test_case_differs_ann_and_ann(self):
        subs = self.tmp / "subs"
        self.student(subs / "Ann", 45)
        self.student(subs / "ann", 12)
        roster = self.roster([{"Student": "ann", "ID": "2", "SIS Login ID": "ann"},
                              {"Student": "Ann", "ID": "1", "SIS Login ID": "Ann"}])
        self.assertEqual(self.run_batch(subs, "--roster", str(roster), "--export", "canvas"),
                         0, self.stderr)
        by_id = {r["ID"]: r for r in self.rows("canvas-import.csv")[1:]}
        self.assertEqual((by_id["1"]["Lab 01: Warp sizing"], by_id["2"]["Lab 01: Warp sizing"]),
                         ("45", "12"))

    def test_duplicate_display_names_with_ids(self):
        subs = self.tmp / "subs"
        self.student(subs / "john.smith@a.example", 10)
        self.student(subs / "john.smith@b.example", 90)
        roster = self.roster([
            {"Full name": "John Smith", "Email address": "John.Smith@B.example", "ID number": "b"},
            {"Full name": "John Smith", "Email address": "john.smith@a.example", "ID number": "a"}])
        self.assertEqual(self.run_batch(subs, "--roster", str(roster), "--export", "moodle"),
                         0, self.stderr)
        by_id = {r["ID number"]: r for r in self.rows("moodle-import.csv")}
        column = next(c for c in by_id["a"] if c.startswith("Lab 01"))
        self.assertEqual((by_id["a"][column], by_id["b"][column]), ("10", "90"))

    def test_duplicate_display_names_without_ids(self):
        dl = self.moodle(("John Smith_5_assignsubmission_file_", 10),
                         ("John Smith_6_assignsubmission_file_", 90))
        roster = self.roster([{"Full name": "John Smith", "Email address": "a@x.example"},
                              {"Full name": "John Smith", "Email address": "b@x.example"}])
        code = self.run_batch(dl, "--roster", str(roster), "--export", "moodle", grade=False)
        self.refused(code, "roster.csv:2", "roster.csv:3", "John_Smith_5", "John_Smith_6")
        self.assertFalse(self.out.exists())

    def test_roster_gives_an_id_twice(self):
        subs = self.tmp / "subs"
        self.student(subs / "ann", 1)
        roster = self.roster([{"Student": "Ann", "ID": "7"}, {"Student": "Ben", "ID": "7"}])
        code = self.run_batch(subs, "--roster", str(roster), grade=False)
        self.refused(code, "roster.csv:2 and roster.csv:3", "'7'")

    def test_student_in_no_roster_row(self):
        subs = self.tmp / "subs"
        self.student(subs / "zed", 5)
        roster = self.roster([{"Student": "Ann", "ID": "1", "SIS Login ID": "ann"}])
        self.assertEqual(self.run_batch(subs, "--roster", str(roster)), 0, self.stderr)
        self.assertIn("zed: in no row of roster.csv", self.stderr)
        rows = {r["student"]: r for r in self.rows()}
        self.assertEqual((rows["zed"]["id"], rows["ann"]["status"]), ("", "no submission"))

    def test_roster_join_checked_before_grading(self):
        subs = self.tmp / "subs"
        self.student(subs / "Ann_Lee", 5)
        roster = self.roster([{"Student": "Lee, Ann", "ID": "1"},
                              {"Student": "Ann Lee", "ID": "2"}])
        code = self.run_batch(subs, "--roster", str(roster), grade=False)
        self.refused(code, "Ann_Lee", "matches 2 roster rows")

    # ----------------------------------------------------------------- folder names

    def test_moodle_ann_5_ann_6_ann_space_5(self):
        dl = self.moodle(("Ann_5_assignsubmission_file_", 5),
                         ("Ann_6_assignsubmission_file_", 6),
                         ("Ann 5_77_assignsubmission_file_", 77))
        self.assertEqual(self.run_batch(dl), 0, self.stderr)
        rows = {r["student"]: r["total"] for r in self.rows()}
        self.assertEqual(rows, {"Ann_5": "5", "Ann_6": "6", "Ann_5_77": "77"})

    def test_moodle_name_is_a_batch_file(self):
        dl = self.moodle(("slurm_5_assignsubmission_file_", 5))
        self.assertEqual(self.run_batch(dl), 0, self.stderr)
        self.assertEqual([r["student"] for r in self.rows()], ["slurm_5"])

    def test_student_folder_named_summary_md(self):
        subs = self.tmp / "subs"
        self.student(subs / "summary.md", 5)
        self.student(subs / "ann", 5)
        self.refused(self.run_batch(subs, grade=False), "'summary.md'", "batch's own files")
        self.assertFalse(self.out.exists())

    def test_student_twice_in_a_csv(self):
        self.student(self.tmp / "a", 1)
        self.student(self.tmp / "b", 2)
        roster = self.tmp / "subs.csv"
        roster.write_text("student,path\nann,a\nann,b\n")
        self.refused(self.run_batch(roster, grade=False),
                     f"{roster}:3: student 'ann' appears twice (also at {roster}:2)")

    # ----------------------------------------------------------------- one submission, one student

    def test_symlinked_student_folder(self):
        subs = self.tmp / "subs"
        self.student(subs / "ben", 50)
        (subs / "ann").symlink_to(subs / "ben")
        code = self.run_batch(subs, grade=False)
        self.refused(code, "ann's submission is a symbolic link", str((subs / "ben").resolve()))

    def test_two_rows_one_folder(self):
        self.student(self.tmp / "shared", 50)
        roster = self.tmp / "subs.csv"
        roster.write_text("student,path\nann,shared\nben,./shared/\n")
        self.refused(self.run_batch(roster, grade=False), "ann and ben are the same folder")

    def test_symlinked_folder_of_flat_uploads(self):
        src = self.tmp / "uploads"
        (src / "s1").mkdir(parents=True)
        (src / "s1" / BASE).write_text("// points 3\n")
        (src / "s2").symlink_to(src / "s1")
        self.refused(self.run_batch(src, grade=False), str(src / "s2"), "symbolic link")

    # ----------------------------------------------------------------- check first

    def test_extension_next_friday(self):
        self.student(self.tmp / "a", 1)
        roster = self.tmp / "subs.csv"
        roster.write_text("student,path,extension\nann,a,next friday\n")
        code = self.run_batch(roster, "--deadline", "2026-03-01T23:59+00:00", grade=False)
        self.refused(code, f"{roster}:2", "extension of ann", "'next friday'")
        self.assertFalse(self.out.exists())

    def test_extension_for_unknown_student(self):
        self.student(self.tmp / "a", 1)
        roster = self.tmp / "subs.csv"
        roster.write_text("student,path,extension\nann,a,\n")
        lms = self.tmp / "lms.csv"
        lms.write_text("student,extension\nanne,2026-03-05\n")
        code = self.run_batch(roster, "--deadline", "2026-03-01", "--roster", str(lms),
                              grade=False)
        self.refused(code, f"{lms}:2", "'anne', who is not in this batch")

    def test_bad_deadline_and_bad_policy_together(self):
        self.student(self.tmp / "subs" / "ann", 1)
        code = self.run_batch(self.tmp / "subs", "--deadline", "soon", "--late-policy",
                              "per-day:lots", grade=False)
        self.refused(code, "--deadline:", "--late-policy:")
        self.assertEqual(len([l for l in self.stderr.splitlines() if "batch: --" in l]), 2)

    def graded_three(self) -> Path:
        subs = self.tmp / "subs"
        for name, points in (("ann", 45), ("ben", 30), ("cat", 20)):
            self.student(subs / name, points)
        self.assertEqual(self.run_batch(subs), 0, self.stderr)
        return subs

    def test_override_unknown_student_and_too_many_points(self):
        self.graded_three()
        (self.out / "overrides.csv").write_text(
            "student,lab,part,points,note\n"
            "ann,01,Warps per block and idle lanes,43,regraded\n"
            "zoe,01,Divergence model,5,typo\n"
            "ben,01,Divergence model,99,too many\n")
        before = self.snapshot()
        code = self.batch("--collect", str(self.out), grade=False)
        self.refused(code, "overrides.csv:3: 'zoe' is not in this batch",
                     "overrides.csv:4: 99 points is outside 0 to 40")
        self.assertEqual(self.snapshot(), before)

    def test_override_valid_after_refusal(self):
        self.graded_three()
        (self.out / "overrides.csv").write_text(
            "student,lab,part,points,note\nann,01,Warps per block and idle lanes,43,regraded\n")
        self.assertEqual(self.batch("--collect", str(self.out), grade=False), 0, self.stderr)
        result = json.loads((self.out / "ann" / "result.json").read_text())
        gradescope = json.loads((self.out / "ann" / "gradescope" / "results.json").read_text())
        row = {r["student"]: r for r in self.rows()}["ann"]
        self.assertEqual((result["points"], gradescope["score"], row["total"]), (43, 43, "43"))
        self.assertTrue((self.out / "ann" / regrades.GRADED_COPY).is_file())

    def test_rescore_with_bad_override(self):
        self.graded_three()
        (self.out / "overrides.csv").write_text(
            "student,lab,part,points,note\nann,01,No such part,1,x\n")
        before = self.snapshot()
        code = self.batch("--rescore", "--out", str(self.out), grade=False)
        self.refused(code, "no lab 01 part 'No such part'")
        self.assertEqual(self.snapshot(), before)

    def test_interrupted_collect_changes_nothing(self):
        self.graded_three()
        (self.out / "overrides.csv").write_text(
            "student,lab,part,points,note\nann,01,Warps per block and idle lanes,43,x\n"
            "cat,01,Divergence model,40,y\n")
        before = self.snapshot()
        real = os.replace
        calls = []

        def failing(src, dst):
            calls.append(dst)
            if len(calls) == 1:  # the swap has not begun: every file still as it was
                raise KeyboardInterrupt
            return real(src, dst)

        with mock.patch("grader.atomic.os.replace", failing):
            with self.assertRaises(KeyboardInterrupt):
                batch.collect(self.out)
        self.assertEqual(self.snapshot(), before)  # no temporary file left either

    def test_regrade_of_unknown_student(self):
        self.graded_three()
        before = self.snapshot()
        code = self.batch("--out", str(self.out), "--only", "ann,zoe", "--only-status",
                          "lost", grade=False)
        self.refused(code, "--only: not in this batch: zoe", "--only-status: unknown status lost")
        self.assertEqual(self.snapshot(), before)

    # ----------------------------------------------------------------- late penalties

    def git_student(self, name: str, when: str, points: float) -> Path:
        repo = self.tmp / "git" / name
        self.student(repo, points)
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "work", when=when)
        return repo

    def test_late_penalty_in_result_and_exports(self):
        self.git_student("ann", "2026-03-02T12:00:00+00:00", 50)
        code = self.run_batch(self.tmp / "git", "--deadline", "2026-03-01T23:59:00+00:00",
                              "--late-policy", "per-day:20")
        self.assertEqual(code, 0, self.stderr)
        result = json.loads((self.out / "ann" / "result.json").read_text())
        self.assertEqual((result["late"]["factor"], result["late"]["points"],
                          result["late"]["unpenalised_points"]), (0.8, 40.0, 50.0))
        gradescope = json.loads((self.out / "ann" / "gradescope" / "results.json").read_text())
        self.assertEqual((gradescope["score"], gradescope["extra_data"]["unpenalised_score"]),
                         (40.0, 50.0))
        self.assertIn("40 points, 50 before the penalty", gradescope["output"])
        self.assertIn("40 points, 50 before the penalty",
                      (self.out / "ann" / "summary.md").read_text())
        summary = (self.out / "summary.md").read_text()
        self.assertIn("| ann | late 0.50 days (-20%) | ×0.8 | 40 | 50 |", summary)
        self.assertEqual(self.rows()[0]["total"], "40")

    # ----------------------------------------------------------------- Canvas files

    def test_canvas_ignored_files_listed(self):
        dl = self.tmp / "canvas"
        dl.mkdir()
        (dl / f"ann_11_101_{BASE}").write_text("// points 4\n")
        (dl / "ann_11_102_notes.txt").write_text("hi")
        (dl / "README.txt").write_text("not a submission")
        self.assertEqual(self.run_batch(dl), 0, self.stderr)
        info = json.loads((self.out / "lms-submissions" / "lms.json").read_text())
        self.assertEqual(info["ignored"], ["README.txt"])
        self.assertEqual(info["students"]["ann"]["ignored"], ["ann_11_102_notes.txt"])

    # ----------------------------------------------------------------- deadlines

    def test_git_commit_date_backdated(self):
        self.git_student("ann", "2026-02-01T00:00:00+00:00", 50)  # a date the student chose
        code = self.run_batch(self.tmp / "git", "--deadline", "2026-03-01T00:00:00+00:00",
                              "--late-policy", "per-day:50",
                              "--fetched-at", "2026-03-01T12:00:00+00:00")
        self.assertEqual(code, 0, self.stderr)
        row = self.rows()[0]
        self.assertEqual((row["total"], row["late"]), ("25", "late 0.50 days (-50%)"))

    def test_git_fetched_after_deadline_under_cutoff(self):
        self.git_student("ann", "2026-02-01T00:00:00+00:00", 50)
        code = self.run_batch(self.tmp / "git", "--deadline", "2026-03-01T00:00:00+00:00",
                              "--fetched-at", "2026-03-03T00:00:00+00:00", grade=False)
        self.refused(code, "ann was fetched at 2026-03-03", "cutoff")
        self.assertFalse(self.out.exists())

    def test_fetched_at_recorded(self):
        self.git_student("ann", "2026-02-01T00:00:00+00:00", 50)
        fetched = self.tmp / "fetched.csv"
        fetched.write_text("student,fetched_at\nann,2026-02-28T23:00:00+00:00\n")
        code = self.run_batch(self.tmp / "git", "--deadline", "2026-03-01T00:00:00+00:00",
                              "--fetched-at", str(fetched))
        self.assertEqual(code, 0, self.stderr)
        when = "2026-02-28T23:00:00+00:00"
        plan = json.loads((self.out / batch.PLAN_FILE).read_text())
        manifest = json.loads((self.out / "manifest.json").read_text())
        self.assertEqual(plan["submissions"][0]["fetched_at"], when)
        self.assertEqual(manifest["students"]["ann"]["fetched_at"], when)
        self.assertEqual((self.rows()[0]["fetched_at"], self.rows()[0]["total"]), (when, "50"))

    # ----------------------------------------------------------------- the suite itself

    def test_every_case_has_a_test_and_an_outcome(self):
        names = {n[5:] for n in dir(self) if n.startswith("test_")} - {
            "every_case_has_a_test_and_an_outcome"}
        self.assertEqual(names, set(CASES))
        self.assertGreaterEqual(len(CASES), 25)


if __name__ == "__main__":
    unittest.main()
