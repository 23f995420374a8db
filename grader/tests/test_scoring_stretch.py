"""fraction_points (lab 04's bonus speed: a fraction of cuBLAS timed in the same run) and the
rubric's bonus parts (bonus = true: above the lab's maximum)."""

from __future__ import annotations

import math
import unittest
from unittest import mock

from grader.parts import kinds
from grader.paths import find_lab
from grader.result import GRADED, NOT_MEASURED, REVIEW
from grader.rubric import RubricError, load_rubric, parse_rubric
from grader.scoring import fraction_points
from grader.benchdoc import (Document, LaunchStats, Limits, PairTiming, SampleStats,
                                     Side, Verification, Work)


class FractionPointsTest(unittest.TestCase):
    def test_full_points_at_and_above_the_target(self) -> None:
        for fraction in (0.6, 0.79, 1.0, 1.2):
            score = fraction_points(fraction, target=0.6, floor=0.2, points=6)
            self.assertEqual(score.status, GRADED)
            self.assertEqual(score.points, 6.0)

    def test_linear_between_floor_and_target(self) -> None:
        score = fraction_points(0.4, target=0.6, floor=0.2, points=6)
        self.assertEqual(score.status, GRADED)
        self.assertAlmostEqual(score.points, 3.0)
        self.assertAlmostEqual(fraction_points(0.3, 0.6, 0.2, 6).points, 1.5)
        self.assertAlmostEqual(score.time_ratio, 2.5)

    def test_nothing_at_or_below_the_floor(self) -> None:
        for fraction in (0.01, 0.18, 0.2):
            score = fraction_points(fraction, target=0.6, floor=0.2, points=6)
            self.assertEqual((score.status, score.points), (GRADED, 0.0))
            self.assertIn("0.2", score.reason)

    def test_zero_floor_is_proportional(self) -> None:
        self.assertAlmostEqual(fraction_points(0.15, 0.6, 0.0, 8).points, 2.0)

    def test_implausible_fraction_is_flagged(self) -> None:
        score = fraction_points(3.0, target=0.6, floor=0.2, points=6)
        self.assertEqual((score.status, score.points), (REVIEW, 0.0))
        self.assertEqual(fraction_points(1.4, 0.6, 0.2, 6).status, GRADED)

    def test_unmeasurable_fraction(self) -> None:
        for bad in (0.0, -1.0, math.nan, math.inf, None):
            score = fraction_points(bad, target=0.6, floor=0.2, points=6)  # type: ignore[arg-type]
            self.assertEqual((score.status, score.points, score.time_ratio),
                             (NOT_MEASURED, 0.0, None))

    def test_monotonic(self) -> None:
        scores = [fraction_points(f / 100, 0.6, 0.2, 6).points for f in range(1, 120)]
        self.assertEqual(scores, sorted(scores))


def offered(rubric) -> float:
    """The points the rubric's bonus parts offer above its maximum."""
    return sum(kinds.bonus_offers(rubric).values())


class BonusRubricTest(unittest.TestCase):
    def setUp(self) -> None:
        self.lab = find_lab("04")

    def test_lab04_bonus_is_above_the_maximum(self) -> None:
        rubric = load_rubric(self.lab)
        self.assertEqual(rubric.max_points, 100.0)
        self.assertEqual(offered(rubric), 10.0)
        bonus = [g.name for g in rubric.tables["correctness"] if g.bonus]
        self.assertEqual(bonus, ["Bonus: register-tiled kernel"])
        self.assertIsNotNone(rubric.tables["stretch"])
        self.assertTrue(rubric.tables["stretch"].bonus)
        self.assertEqual(rubric.tables["stretch"].comparison, "register_tiled")
        self.assertEqual(rubric.tables["stretch"].requires, bonus)
        # The bonus sanitizer case stays out of the lab's own memory-safety part.
        self.assertIn("~[register]", rubric.tables["memory_safety"].tests)

    def _parse(self, extra: str):
        text = ('student_files = ["labs/04_tiled_matmul/tiled_matmul.cu"]\n'
                '[lab]\ntitle = "t"\n'
                '[[correctness]]\nname = "a"\ntests = "[a]"\npoints = 100\n' + extra)
        return parse_rubric(self.lab, text)

    def test_bonus_defaults_to_false(self) -> None:
        rubric = self._parse('[[correctness]]\nname = "b"\ntests = "[b]"\npoints = 5\n')
        self.assertFalse(rubric.tables["correctness"][1].bonus)
        self.assertEqual((rubric.max_points, offered(rubric)), (105.0, 0.0))

    def test_a_stretch_that_is_not_bonus_counts(self) -> None:
        rubric = self._parse('[stretch]\npoints = 5\ncomparison = "x"\n')
        self.assertEqual((rubric.max_points, offered(rubric)), (105.0, 0.0))
        self.assertEqual((rubric.tables["stretch"].target_fraction, rubric.tables["stretch"].floor_fraction),
                         (0.6, 0.0))

    def test_bad_bonus_and_stretch_are_refused(self) -> None:
        bad = ['[[correctness]]\nname = "b"\ntests = "[b]"\npoints = 5\nbonus = "yes"\n',
               '[stretch]\npoints = 5\ncomparison = "x"\nfloor_fraction = 0.7\n',
               '[stretch]\npoints = 5\ncomparison = "x"\nrequires = ["nope"]\n',
               '[stretch]\npoints = 5\ncomparison = "x"\ntarget = 0.6\n']
        for extra in bad:
            with self.subTest(extra=extra), self.assertRaises(RubricError):
                self._parse(extra)


class StretchPartTest(unittest.TestCase):
    """The [stretch] part from a bench run: correctness first, then the fraction."""

    def _part(self, comp=None, failed="", full=("Bonus",), sanitizer_clean=True,
              not_timed=None, **runs_kw):
        from grader.measure.bench import BenchRuns
        from grader.measure.sanitizer import SanitizerRuns
        from grader.measure.sanitizer import SanitizerSummary
        from grader.parts.stretch import Stretch
        from grader.parts.stretch import stretch_part
        stretch = Stretch(points=6, comparison="register_tiled", requires=["Bonus"],
                          target_fraction=0.6, floor_fraction=0.2,
                          sanitizer_tests="[s]", bonus=True)
        doc = None if comp is None and not_timed is None else \
            Document(comparisons=(comp,) if comp else (), not_timed=not_timed or {})
        runs = BenchRuns(failed=failed, student_doc=doc, **runs_kw)
        summary = mock.Mock(spec=SanitizerSummary)
        san = SanitizerRuns(summaries=[summary])
        with mock.patch("grader.scoring.sanitizer_points") as sp:
            sp.return_value = mock.Mock(points=1.0 if sanitizer_clean else 0.0, reason="dirty")
            return stretch_part(stretch, runs, set(full), san)

    @staticmethod
    def _comp(fraction, ms=None):
        return PairTiming("register_tiled", Side(), Side(
            ms=SampleStats(None, median=ms), work=Work(137438953472.0, 201326592),
            verification=Verification(checked=True, passed=True),
            launches=LaunchStats(min=1, max=1)), SampleStats(None, median=fraction))

    def test_an_altered_document_is_flagged(self):
        part = self._part(self._comp(0.78), altered="the bench document's figures disagree "
                          "with its own samples: it was altered; not believed (x)",
                          disagreements=["x"])
        self.assertEqual((part.status, part.points), (REVIEW, 0.0))
        self.assertIn("altered; not believed", part.reason)
        self.assertEqual(part.details["disagreements"], ["x"])

    def test_a_time_below_the_physical_floor_is_flagged(self):
        reference = Document(comparisons=(self._comp(0.8, ms=3.4),),
                             limits=Limits(copy_gbytes_per_s=3000.0, fp32_gflops=60000.0))
        part = self._part(self._comp(1.4, ms=1.9), reference_doc=reference)
        self.assertEqual((part.status, part.points), (REVIEW, 0.0))
        self.assertIn("1.90 ms is below the 2.29 ms the GPU needs", part.reason)
        part = self._part(self._comp(0.78, ms=3.5), reference_doc=reference)
        self.assertEqual((part.status, part.points), (GRADED, 6.0))
        self.assertTrue(part.details["floor"]["checked"])

    def test_full_points_at_the_target_on_top_of_the_maximum(self):
        part = self._part(self._comp(0.78))
        self.assertEqual((part.points, part.max_points, part.details["bonus"]), (6.0, 0.0, 6))

    def test_a_bench_that_never_finished_scores_zero_not_unmeasured(self):
        part = self._part(failed="your bench did not finish (timeout).")
        self.assertEqual((part.status, part.points), ("graded", 0.0))

    def test_a_comparison_the_bench_could_not_time_says_why(self):
        why = "matmul_register_tiled is not in your file: the optional bonus is not attempted"
        part = self._part(not_timed={"register_tiled": why}, full=())
        self.assertEqual((part.status, part.points), ("graded", 0.0))
        self.assertIn("not attempted", part.reason)
        # Missing without a reason: the correctness groups, then the missing comparison.
        part = self._part(not_timed={"other": why}, full=())
        self.assertIn("correctness comes first", part.reason)
        part = self._part(not_timed={"other": why})
        self.assertIn("no comparison 'register_tiled'", part.reason)

    def test_correctness_and_sanitizer_come_first(self):
        self.assertEqual(self._part(self._comp(0.78), full=()).points, 0.0)
        self.assertEqual(self._part(self._comp(0.78), sanitizer_clean=False).points, 0.0)


if __name__ == "__main__":
    unittest.main()
