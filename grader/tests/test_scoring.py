"""Scoring rules (grader/README.md, "Scoring"): group split, speed credit, sanitizer shares, totals."""

import math
import unittest
from types import SimpleNamespace

from grader.measure.sanitizer import SanitizerSummary
from grader.result import (GRADED, NOT_GRADED, NOT_MEASURED, REVIEW, GradeResult, LabResult,
                           PartResult)
from grader.scoring import (grade_totals, group_points, lab_totals, leave_out_unmeasured,
                            sanitizer_points, speed_points)


class GroupPointsTest(unittest.TestCase):
    def test_split_evenly(self):
        self.assertEqual(group_points(3, 3, 25), 25.0)
        self.assertEqual(group_points(0, 3, 25), 0.0)
        self.assertAlmostEqual(group_points(1, 3, 25), 8.3333, places=4)
        self.assertAlmostEqual(group_points(2, 3, 25), 16.6667, places=4)
        self.assertEqual(group_points(1, 4, 10), 2.5)

    def test_no_cases_or_too_many_passed(self):
        self.assertEqual(group_points(0, 0, 10), 0.0)
        self.assertEqual(group_points(5, 4, 10), 10.0)

    def test_sum_over_cases_is_the_group(self):
        total = sum(group_points(1, 7, 20) for _ in range(7))
        self.assertAlmostEqual(total, 20.0, places=3)


class SpeedPointsTest(unittest.TestCase):
    def test_full_credit_within_ratio(self):
        s = speed_points(10.0, 10.0, 20)
        self.assertEqual((s.points, s.status), (20.0, GRADED))
        self.assertAlmostEqual(s.time_ratio, 1.0)
        s = speed_points(10.0 / 1.2, 10.0, 20)  # exactly at the 1.2x limit
        self.assertEqual(s.points, 20.0)
        self.assertEqual(speed_points(15.0, 10.0, 20).points, 20.0)  # faster than reference

    def test_time_ratio_is_student_time_over_reference_time(self):
        s = speed_points(4.0, 8.0, 20)
        self.assertAlmostEqual(s.time_ratio, 2.0)

    def test_nothing_at_or_below_the_baseline(self):
        for speedup in (1.0, 0.8, 0.01):
            s = speed_points(speedup, 8.0, 20)
            self.assertEqual((s.points, s.status), (0.0, GRADED))
            self.assertIn("no faster than the baseline", s.reason)

    def test_linear_in_speedup_between(self):
        # reference 12x, full credit from 10x; 1x -> 0, 5.5x -> half
        self.assertAlmostEqual(speed_points(5.5, 12.0, 20).points, 10.0, places=3)
        self.assertAlmostEqual(speed_points(3.25, 12.0, 20).points, 5.0, places=3)
        previous = -1.0
        for speedup in (1.01, 2, 4, 6, 8, 9.99):
            p = speed_points(speedup, 12.0, 20).points
            self.assertGreater(p, previous)
            self.assertLess(p, 20.0)
            previous = p
        s = speed_points(5.5, 12.0, 20)
        self.assertIn("Partial", s.reason)
        self.assertIn("10.00x", s.reason)

    def test_configurable_full_credit_ratio(self):
        self.assertEqual(speed_points(5.0, 10.0, 20, full_credit_ratio=2.0).points, 20.0)
        self.assertLess(speed_points(5.0, 10.0, 20, full_credit_ratio=1.0).points, 20.0)

    def test_implausible_speedup_is_flagged_not_awarded(self):
        s = speed_points(101.0, 10.0, 20)
        self.assertEqual((s.points, s.status), (0.0, REVIEW))
        self.assertIn("flagged for review", s.reason)
        self.assertEqual(speed_points(99.0, 10.0, 20).status, GRADED)
        self.assertEqual(speed_points(31.0, 10.0, 20, review_ratio=3.0).status, REVIEW)

    def test_reference_barely_faster_than_baseline(self):
        # reference / 1.2 <= 1: no proportional band, no division by zero
        self.assertEqual(speed_points(1.05, 1.1, 20).points, 20.0)
        self.assertEqual(speed_points(1.0, 1.1, 20).points, 0.0)
        self.assertEqual(speed_points(1.01, 1.2, 20).points, 20.0)
        s = speed_points(1.1, 0.9, 20)  # reference slower than the baseline
        self.assertEqual(s.points, 20.0)

    def test_unmeasurable_inputs(self):
        for student, reference in ((math.nan, 5.0), (5.0, math.nan), (5.0, 0.0), (0.0, 5.0),
                                   (math.inf, 5.0)):
            s = speed_points(student, reference, 20)
            self.assertEqual((s.points, s.status), (0.0, NOT_MEASURED))
            self.assertTrue(s.reason)

    def test_every_score_below_full_has_a_reason(self):
        for student in (0.5, 1.0, 2.0, 5.0, 9.0, 200.0):
            s = speed_points(student, 10.0, 20)
            self.assertGreaterEqual(s.points, 0.0)
            self.assertLessEqual(s.points, 20.0)
            if s.points < 20.0:
                self.assertTrue(s.reason.endswith("."), s.reason)


class SanitizerPointsTest(unittest.TestCase):
    def test_each_clean_tool_earns_its_share(self):
        clean = SanitizerSummary("memcheck", 0, True, [], "")
        dirty = SanitizerSummary("racecheck", 3, False, ["Error: Race reported between ..."], "")
        s = sanitizer_points([clean, dirty], 10)
        self.assertEqual(float(s), 5.0)
        self.assertEqual(s.points, 5.0)
        self.assertEqual(s.status, GRADED)
        self.assertIn("racecheck reported 3 errors", s.reason)
        self.assertEqual(s.details, {"memcheck": 0, "racecheck": 3})
        self.assertEqual(float(sanitizer_points([clean], 10)), 10.0)

    def test_unfinished_run_earns_nothing(self):
        killed = SanitizerSummary("memcheck", 1, False, [], "", complete=False)
        s = sanitizer_points([killed], 10)
        self.assertEqual(float(s), 0.0)
        self.assertIn("did not finish", s.reason)

    def test_not_run_is_not_measured(self):
        s = sanitizer_points([], 10)
        self.assertEqual((float(s), s.status), (0.0, NOT_MEASURED))


class TotalsTest(unittest.TestCase):
    def lab(self, *parts):
        return LabResult("04_tiled_matmul", "Tiled", 0.0, 0.0, list(parts))

    def test_lab_and_grade_totals(self):
        a = self.lab(PartResult("correctness", "Model", GRADED, 15, 15),
                     PartResult("correctness", "Kernel", NOT_GRADED, 0, 25, "Not graded: no CUDA device"),
                     PartResult("performance", "Speed", GRADED, 12.5, 20, "Partial"))
        b = self.lab(PartResult("correctness", "X", GRADED, 1 / 3, 1))
        self.assertEqual(lab_totals(a), (27.5, 60.0))
        self.assertEqual((a.points, a.max_points), (27.5, 60.0))
        grade = GradeResult("s", 1, "2025-01-01T00:00:00Z", "1", None, {}, [a, b])
        points, max_points = grade_totals(grade)
        self.assertAlmostEqual(points, 27.8333, places=4)
        self.assertEqual(max_points, 61.0)
        self.assertEqual(grade.max_points, 61.0)

    def test_unmeasured_parts_are_neither_lost_nor_gained(self):
        lab = self.lab(PartResult("correctness", "Kernel", GRADED, 40, 40),
                       PartResult("metric", "Bank conflicts", NOT_MEASURED, 0, 10,
                                  "Not measured: ncu was not allowed to read the counters."),
                       PartResult("correctness", "GPU", NOT_GRADED, 0, 50, "no CUDA device"))
        leave_out_unmeasured(lab)
        self.assertEqual(lab_totals(lab), (40.0, 90.0))  # not graded still counts as 0 of 50
        metric = lab.parts[1]
        self.assertEqual((metric.points, metric.max_points), (0.0, 0.0))
        self.assertEqual(metric.details["points_if_measured"], 10)
        self.assertIn("neither lost nor gained", metric.reason)

    def test_empty(self):
        self.assertEqual(lab_totals(self.lab()), (0.0, 0.0))


class CorrectnessRulesTest(unittest.TestCase):
    """Groups that mix host and GPU cases graded without a GPU, and bonus groups."""

    def _grade(self, groups, statuses, has_gpu):
        from grader.catch2.testrun import Case, CaseRun
        from grader.parts.correctness import correctness
        cases = [Case(name, tuple(tags)) for name, tags, _ in statuses]
        runs = {name: CaseRun(name, tuple(tags), status) for name, tags, status in statuses
                if status is not None}
        rubric = SimpleNamespace(tables={"correctness": groups})
        return correctness(rubric, cases, runs, has_gpu, "no CUDA device")

    def test_host_cases_of_a_mixed_group_earn_their_share_without_a_gpu(self):
        from grader.parts.correctness import CorrectnessGroup
        out = self._grade([CorrectnessGroup("Limits", "[limits]", 6)],
                          [("h1", ["limits"], "passed"), ("h2", ["limits"], "failed"),
                           ("g1", ["limits", "gpu"], None)], has_gpu=False)
        part = out.parts[0]
        self.assertEqual(part.status, "not_graded")
        self.assertAlmostEqual(part.points, 2.0)  # one of two host cases, 2 points each
        self.assertAlmostEqual(part.max_points, 6.0)
        self.assertEqual((part.details["host_max"], part.details["gpu_max"]), (4.0, 2.0))
        self.assertIn("no CUDA device", part.reason)
        self.assertNotIn("Limits", out.full_groups)

    def test_a_gpu_only_group_without_a_gpu_earns_nothing_yet(self):
        from grader.parts.correctness import CorrectnessGroup
        out = self._grade([CorrectnessGroup("Kernel", "[k]", 10)],
                          [("g1", ["k", "gpu"], None)], has_gpu=False)
        self.assertEqual((out.parts[0].status, out.parts[0].points), ("not_graded", 0.0))

    def test_a_bonus_group_adds_points_without_raising_the_maximum(self):
        from grader.parts.correctness import CorrectnessGroup
        out = self._grade([CorrectnessGroup("Main", "[m]", 10),
                           CorrectnessGroup("Bonus", "[b]", 4, bonus=True)],
                          [("m1", ["m"], "passed"), ("b1", ["b"], "passed"),
                           ("b2", ["b"], "failed")], has_gpu=True)
        main, bonus = out.parts
        self.assertEqual((main.points, main.max_points), (10.0, 10.0))
        self.assertEqual((bonus.points, bonus.max_points, bonus.details["bonus"]), (2.0, 0.0, 4.0))


if __name__ == "__main__":
    unittest.main()
