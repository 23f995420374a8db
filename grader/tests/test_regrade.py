"""Regrades: choosing students, rescoring stored results after a points-only rubric change,
overrides with a note, the append-only grade history."""

from __future__ import annotations

import json
import shutil
import tempfile
import unittest
from unittest import mock
from pathlib import Path

from grader.batch import regrade_rules
from grader.paths import ROOT, find_lab
from grader.result import (GRADED, NOT_GRADED, REVIEW, GradeResult, LabResult, PartResult,
                           TestResult)
from grader.rubric import load_rubric

LAB = "04_tiled_matmul"
GOLDEN = ROOT / "grader" / "tests" / "data" / "golden" / "reference.json"


def read_history(student_dir: Path) -> list[dict]:
    """The grade history regrade_rules.append_history wrote, one record a line."""
    path = Path(student_dir) / regrade_rules.HISTORY_FILE
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def _result(review: bool = False, no_gpu: bool = False) -> dict:
    parts = [PartResult("build", "Build", GRADED, 0, 0),
             PartResult("correctness", "Host", GRADED, 15.0, 20.0, "1 of 4 failed"),
             PartResult("correctness", "GPU", NOT_GRADED if no_gpu else GRADED,
                        0.0 if no_gpu else 30.0, 30.0),
             PartResult("performance", "Performance", REVIEW if review else GRADED,
                        0.0 if review else 25.0, 50.0)]
    tests = [TestResult(f"t{i}", "Host", "host", False, "passed" if i else "failed",
                        0.0 if i == 0 else 5.0, 5.0) for i in range(4)]
    lab = LabResult(LAB, "Tiled", sum(p.points for p in parts), 100.0, parts, tests)
    return GradeResult("sub", 1, "t", "v", None, {}, [lab], lab.points, 100.0).to_dict()


class SelectTest(unittest.TestCase):
    def test_statuses_come_from_the_stamp_and_the_parts(self):
        self.assertEqual(regrade_rules.student_statuses(_result(), "graded"),
                         {"graded", "complete"})
        self.assertEqual(regrade_rules.student_statuses(_result(review=True), "graded"),
                         {"graded", "review"})
        self.assertEqual(regrade_rules.student_statuses(_result(no_gpu=True), "timeout"),
                         {"timeout", "provisional"})
        self.assertEqual(regrade_rules.student_statuses(None, None), {"not graded yet"})

    def test_each_status_has_one_meaning(self):
        """An empty submission is "no submission", never "complete" with 0 points; full
        host marks without a GPU are "provisional", never "incomplete" (issue 36, item 5)."""
        empty = _result()
        empty["labs"][0]["failure"] = "no_submission"
        self.assertEqual(regrade_rules.student_statuses(empty, "graded"), {"no submission"})
        self.assertEqual(regrade_rules.student_status(empty, "graded"), "no submission")
        self.assertEqual(regrade_rules.student_status(_result(no_gpu=True), "graded"),
                         "graded")
        unmeasured = _result()
        unmeasured["labs"][0]["parts"][3].update(status="not_measured", max_points=0.0,
                                                 details={"points_if_measured": 50.0})
        self.assertIn("not measured", regrade_rules.student_statuses(unmeasured, "graded"))
        self.assertNotIn("incomplete", regrade_rules.STATUSES)
        self.assertEqual(len(set(regrade_rules.STATUSES)), len(regrade_rules.STATUSES))

    def test_only_names_and_only_statuses(self):
        students = ["ann", "ben", "cat", "dan"]
        statuses = {"ann": {"graded"}, "ben": {"error"}, "cat": {"graded", "review"},
                    "dan": {"timeout", "provisional"}}
        pick = regrade_rules.select_students
        self.assertEqual(pick(students, statuses), students)
        self.assertEqual(pick(students, statuses, only="dan,ann"), ["ann", "dan"])
        self.assertEqual(pick(students, statuses, only_status="error,review"), ["ben", "cat"])
        self.assertEqual(pick(students, statuses, only_status=["provisional"]), ["dan"])
        self.assertEqual(pick(students, statuses, only="ann,ben", only_status="error"),
                         ["ben"])
        with self.assertRaisesRegex(regrade_rules.RegradeError, "not in this batch: zed"):
            pick(students, statuses, only="zed")
        with self.assertRaisesRegex(regrade_rules.RegradeError, "unknown status bogus"):
            pick(students, statuses, only_status="bogus")


class RescoreTest(unittest.TestCase):
    def test_points_only_change_rescales_parts_tests_and_totals(self):
        new = {("correctness", "Host"): 40.0, ("correctness", "GPU"): 30.0,
               ("performance", "Performance"): 30.0}
        out = regrade_rules.rescore(_result(), {LAB: new})
        parts = {p["name"]: p for p in out["labs"][0]["parts"]}
        self.assertEqual((parts["Host"]["points"], parts["Host"]["max_points"]), (30.0, 40.0))
        self.assertEqual(parts["Performance"]["points"], 15.0)
        self.assertEqual([t["points"] for t in out["labs"][0]["tests"]], [0, 10, 10, 10])
        self.assertEqual((out["points"], out["max_points"]), (75.0, 100.0))
        self.assertEqual(_result()["points"], 70.0)  # the input is not changed

    def test_a_rubric_that_changed_more_than_points_is_refused(self):
        renamed = {("correctness", "Host cases"): 20.0, ("correctness", "GPU"): 30.0,
                   ("performance", "Performance"): 50.0}
        with self.assertRaisesRegex(regrade_rules.RegradeError, "changed more than points"):
            regrade_rules.rescore(_result(), {LAB: renamed})
        with self.assertRaisesRegex(regrade_rules.RegradeError, "no rubric"):
            regrade_rules.rescore(_result(), {})

    @unittest.skipUnless(GOLDEN.is_file(), "the golden results are not in a student copy")
    def test_lab04_with_its_bonus_parts_rescores_under_its_own_rubric(self):
        # Before the parts' registry, the maxima left out the [stretch] part and gave a bonus
        # group its offer as a maximum, so every lab 04 result was refused here.
        golden = json.loads(GOLDEN.read_text())
        lab04 = next(lab for lab in golden["labs"] if lab["lab"] == LAB)
        result = {**golden, "labs": [lab04]}
        rubric = load_rubric(find_lab(LAB, ROOT))
        out = regrade_rules.rescore(result, {LAB: rubric})
        self.assertEqual(out["labs"][0]["parts"], lab04["parts"])
        self.assertEqual(out["points"], lab04["points"])

    def test_a_bonus_offer_that_changed_rescales_what_it_earned(self):
        lab = {"lab": LAB, "parts": [
            {"kind": "correctness", "name": "Core", "points": 50.0, "max_points": 100.0,
             "details": {}},
            {"kind": "correctness", "name": "Extra", "points": 5.0, "max_points": 0.0,
             "details": {"bonus": 10.0}}],
            "tests": [{"group": "Extra", "points": 5.0, "max_points": 10.0}]}
        rubric = load_rubric(find_lab(LAB, ROOT))
        with mock.patch.object(regrade_rules, "rubric_maxima", return_value={
                ("correctness", "Core"): 100.0, ("correctness", "Extra"): 0.0}), \
                mock.patch.object(regrade_rules, "bonus_offers",
                                  return_value={("correctness", "Extra"): 20.0}):
            out = regrade_rules.rescore({"labs": [lab]}, {LAB: rubric})
        extra = out["labs"][0]["parts"][1]
        self.assertEqual((extra["points"], extra["max_points"], extra["details"]["bonus"]),
                         (10.0, 0.0, 20.0))
        self.assertEqual(out["labs"][0]["tests"][0]["points"], 10.0)
        self.assertEqual((out["points"], out["max_points"]), (60.0, 100.0))

    def test_maxima_from_a_real_rubric(self):
        maxima = regrade_rules.rubric_maxima(load_rubric(find_lab(LAB, ROOT)))
        self.assertIn(("performance", "Performance"), maxima)
        self.assertTrue(any(kind == "correctness" for kind, _ in maxima))


class OverrideTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-regrade-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_overrides_set_a_part_and_tell_the_student(self):
        (self.tmp / "o.csv").write_text(
            "student,lab,part,points,note\nann,04,performance,40,reviewed: honest kernel\n"
            "ben,04,GPU,1,x\n")
        overrides = regrade_rules.read_overrides(self.tmp / "o.csv")
        out, notes = regrade_rules.apply_overrides(_result(review=True), "ann", overrides)
        part = next(p for p in out["labs"][0]["parts"] if p["name"] == "Performance")
        self.assertEqual((part["points"], part["status"]), (40.0, "graded"))
        self.assertEqual(part["details"]["override"], {"from": 0.0, "note":
                                                       "reviewed: honest kernel"})
        self.assertEqual(out["points"], 85.0)
        self.assertEqual(len(notes), 1)
        self.assertIn("by the course staff (was 0): reviewed: honest kernel", notes[0])
        self.assertEqual(part["reason"], notes[0])
        same, none = regrade_rules.apply_overrides(_result(), "cat", overrides)
        self.assertEqual((same, none), (_result(), []))

    def test_bad_overrides_are_refused(self):
        cases = {"student,lab,part\n": "needs the columns",
                 "student,lab,part,points,note\nann,04,GPU,lots,x\n": "not a number",
                 "student,lab,part,points,note\nann,04,GPU,3,\n": "needs a note"}
        for text, why in cases.items():
            (self.tmp / "o.csv").write_text(text)
            with self.assertRaisesRegex(regrade_rules.RegradeError, why):
                regrade_rules.read_overrides(self.tmp / "o.csv")
        for row, why in (("ann,04,Nope,1,x", "no lab 04 part"),
                         ("ann,04,GPU,31,x", "outside 0 to 30")):
            (self.tmp / "o.csv").write_text("student,lab,part,points,note\n" + row + "\n")
            with self.assertRaisesRegex(regrade_rules.RegradeError, why):
                regrade_rules.apply_overrides(_result(), "ann",
                                              regrade_rules.read_overrides(self.tmp / "o.csv"))
        self.assertEqual(regrade_rules.read_overrides(self.tmp / "none.csv"), [])


class HistoryTest(unittest.TestCase):
    def test_the_history_only_grows(self):
        tmp = Path(tempfile.mkdtemp(prefix="cml-history-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        regrade_rules.append_history(tmp / "ann",
                                     regrade_rules.history_entry(_result(), "batch", "t1"))
        regrade_rules.append_history(tmp / "ann", regrade_rules.history_entry(
            regrade_rules.rescore(_result(), {LAB: {("correctness", "Host"): 40.0,
                                                    ("correctness", "GPU"): 30.0,
                                                    ("performance", "Performance"): 30.0}}),
            "rescore", "t2"))
        history = read_history(tmp / "ann")
        self.assertEqual([(h["time"], h["points"], h["reason"]) for h in history],
                         [("t1", 70.0, "batch"), ("t2", 75.0, "rescore")])
        self.assertEqual(history[0]["labs"], {LAB: 70.0})
        self.assertEqual(read_history(tmp / "nobody"), [])


if __name__ == "__main__":
    unittest.main()
