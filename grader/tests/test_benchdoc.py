"""samples.recompute and floor.floor_check: the summaries a bench document claims against
its own samples, and its candidate's time against the least time the GPU needs for the work.
Pure functions, on lab 04's bench document as it ran on an H100 (data/bench_v2/)."""

from __future__ import annotations

import copy
import json
import statistics
import unittest
from pathlib import Path

from grader.measure import floor, samples
from grader.benchdoc import Limits, Work
from .bench_records import read, recompute, sample_stats


def physical_floor(work: dict, limits: dict | None) -> dict | None:
    return floor.physical_floor(Work(work.get("flop"), work.get("bytes")),
                                Limits.read(limits, "limits") if limits else None)


def floor_check(name: str, student: dict | None, reference: dict | None, margin: float = floor.FLOOR_MARGIN):
    return floor.floor_check(name, read(student), read(reference), margin)


DATA = Path(__file__).parent / "data" / "bench_v2"
# As the bench writes them at the top level; about an H100 SXM's copy and FP32 FMA rates.
LIMITS = {"copy_gbytes_per_s": 3000.0, "fp32_gflops": 60000.0,
          "copy_method": "device-to-device copy kernel, 1 GiB",
          "fp32_method": "FMA chains, every SM"}


def load(name: str = "verified.json") -> dict:
    return json.loads((DATA / name).read_text())


class SampleStatsTest(unittest.TestCase):
    def test_as_the_harness_summarizes(self):
        s = sample_stats([4.0, 1.0, 3.0, 2.0])
        self.assertEqual((s["median"], s["min"], s["max"], s["mean"], s["n"]),
                         (2.5, 1.0, 4.0, 2.5, 4))
        self.assertAlmostEqual(s["stdev"], statistics.stdev([1, 2, 3, 4]))
        self.assertAlmostEqual(s["rse"], s["stdev"] / 2 / 2.5)
        self.assertEqual(sample_stats([3.0])["rse"], 1.0)  # one sample: no error known
        self.assertEqual(sample_stats([])["median"], 0.0)

    def test_pair_ratios(self):
        self.assertEqual(samples.pair_ratios([6.0, 4.0, 1.0], [2.0, 4.0, 0.0]), [3.0, 1.0, 0.0])


class RecomputeTest(unittest.TestCase):
    def tiled(self, doc: dict) -> dict:
        return next(c for c in doc["comparisons"] if c["name"] == "tiled")

    def test_a_document_the_harness_wrote_agrees_with_itself(self):
        for name in ("verified.json", "reference.json", "mismatch.json", "review.json",
                     "no_launch.json"):
            with self.subTest(document=name):
                doc = load(name)
                fresh, problems = recompute(doc)
                self.assertEqual(problems, [])
                self.assertEqual(doc, load(name))  # the document itself is left as it was
                comp = self.tiled(fresh)
                self.assertAlmostEqual(comp["speedup"]["median"],
                                       self.tiled(doc)["speedup"]["median"], places=7)
                self.assertIsNone(samples.altered_problem(problems))

    def test_a_rewritten_speedup_median_is_refused_and_not_used(self):
        doc = load()
        self.tiled(doc)["speedup"]["median"] = 15.4
        fresh, problems = recompute(doc)
        self.assertEqual(len(problems), 1)
        self.assertIn("comparison 'tiled' speedup median is 15.4, its samples give 1.5425539",
                      problems[0])
        self.assertAlmostEqual(self.tiled(fresh)["speedup"]["median"], 1.54255396, places=7)
        sentence = samples.altered_problem(problems)
        self.assertTrue(sentence.startswith(
            "the bench document's figures disagree with its own samples: it was altered; not "
            "believed"), sentence)

    def test_each_summary_of_each_side_is_checked(self):
        for side in ("baseline", "candidate"):
            for key in ("median", "min", "max", "mean", "stdev", "rse"):
                with self.subTest(side=side, key=key):
                    doc = load()
                    stats = self.tiled(doc)[side]["ms"]
                    stats[key] = stats[key] * 0.9 + (0.001 if key == "stdev" else 0.0)
                    problems = recompute(doc)[1]
                    self.assertEqual(len(problems), 1, problems)
                    self.assertIn(f"{side} ms {key} is", problems[0])

    def test_figures_within_the_printed_precision_are_believed(self):
        doc = load()
        stats = self.tiled(doc)["candidate"]["ms"]
        stats["median"] *= 1 + 2e-7
        stats["rse"] += 1e-9
        self.assertEqual(recompute(doc)[1], [])

    def test_speedup_samples_must_be_the_ratios_of_the_pairs(self):
        doc = load()
        comp = self.tiled(doc)
        comp["speedup"]["samples"][3] *= 10
        problems = recompute(doc)[1]
        self.assertTrue(any("speedup sample 3 is" in p for p in problems), problems)
        # Samples and summaries rewritten together still disagree with the pairs' times.
        doc = load()
        comp = self.tiled(doc)
        comp["speedup"]["samples"] = [10 * x for x in comp["speedup"]["samples"]]
        comp["speedup"].update(sample_stats(comp["speedup"]["samples"]))
        fresh, problems = recompute(doc)
        self.assertTrue(any("speedup sample 0 is" in p for p in problems), problems)
        self.assertAlmostEqual(self.tiled(fresh)["speedup"]["median"], 1.54255396, places=7)

    def test_sample_counts_must_match_between_sides_and_pairs(self):
        doc = load()
        cand = self.tiled(doc)["candidate"]["ms"]
        cand["samples"] = cand["samples"][:-1]
        cand.update(sample_stats(cand["samples"]))
        problems = recompute(doc)[1]
        self.assertIn("comparison 'tiled': the baseline has 10 samples and the candidate 9",
                      problems)
        doc = load()
        self.tiled(doc)["speedup"]["samples"].append(1.5)
        self.assertIn("comparison 'tiled' speedup has 11 samples for 10 pairs",
                      recompute(doc)[1][0])

    def test_rewritten_samples_are_refused_by_their_own_summaries(self):
        doc = load()
        self.tiled(doc)["candidate"]["ms"]["samples"] = [1.0] * 10
        problems = recompute(doc)[1]
        self.assertTrue(any("candidate ms median is" in p for p in problems), problems)

    def test_missing_or_malformed_samples_are_refused(self):
        for bad in (None, "15.1", [15.1, "x"], [15.1, -1.0], [True] * 10):
            with self.subTest(samples=bad):
                doc = load()
                self.tiled(doc)["candidate"]["ms"]["samples"] = bad
                problems = recompute(doc)[1]
                self.assertIn("comparison 'tiled' candidate ms has no list of samples "
                              "(non-negative numbers)", problems)

    def test_work_rates_host_times_counts_and_cases_are_checked(self):
        edits = {
            "candidate gflops is": lambda d: self.tiled(d)["candidate"].update(gflops=90000.0),
            "candidate host_ms median is":
                lambda d: self.tiled(d)["candidate"]["host_ms"].update(median=0.1),
            "baseline ms n is": lambda d: self.tiled(d)["baseline"]["ms"].update(n=100),
            "case 'cublas_sgemm' ms median is": lambda d: d["cases"][0]["ms"].update(median=0.2),
            "case 'cublas_sgemm' gbytes_per_s is":
                lambda d: d["cases"][0].update(gbytes_per_s=1e4),
        }
        for expected, edit in edits.items():
            with self.subTest(edit=expected):
                doc = load()
                edit(doc)
                problems = recompute(doc)[1]
                self.assertEqual(len(problems), 1, problems)
                self.assertIn(expected, problems[0])

    def test_the_sentence_names_the_first_disagreements_and_counts_the_rest(self):
        problems = ["a is 1, its samples give 2", "b is 3, its samples give 4", "c", "d"]
        sentence = samples.altered_problem(problems)
        self.assertIn("(a is 1, its samples give 2; b is 3, its samples give 4; and 2 more)",
                      sentence)


class FloorTest(unittest.TestCase):
    def with_limits(self, name: str = "verified.json", limits: dict | None = None) -> dict:
        doc = load(name)
        doc["limits"] = dict(LIMITS if limits is None else limits)
        return doc

    def test_the_floor_is_the_longer_of_moving_the_bytes_and_doing_the_flop(self):
        bound = physical_floor({"flop": 137438953000.0, "bytes": 201326592}, LIMITS)
        self.assertEqual(bound["bound"], "flop")
        self.assertAlmostEqual(bound["ms"], 137438953000.0 / 60000e9 * 1e3)
        bound = physical_floor({"flop": 0, "bytes": 96 * 2 ** 20},
                                        {"copy_gbytes_per_s": 2400.0})
        self.assertEqual(bound["bound"], "bytes")
        self.assertAlmostEqual(bound["ms"], 96 * 2 ** 20 / 2400e9 * 1e3)
        self.assertIsNone(physical_floor({"flop": 1e9, "bytes": 1e6}, None))
        self.assertIsNone(physical_floor({"flop": 0, "bytes": 0}, LIMITS))
        self.assertIsNone(physical_floor({"bytes": 1e6}, {"fp32_gflops": 1e4}))

    def test_the_message_gives_both_times_and_the_measured_rate(self):
        bound = physical_floor({"flop": 0, "bytes": 96 * 2 ** 20},
                                        {"copy_gbytes_per_s": 2400.0})
        self.assertEqual(floor.floor_text(0.012, bound),
                         "12.0 us is below the 41.9 us the GPU needs to move 96.0 MiB at its "
                         "measured 2.40 TB/s")
        bound = physical_floor({"flop": 137438953000.0, "bytes": 201326592}, LIMITS)
        self.assertEqual(floor.floor_text(1.5148, bound),
                         "1.51 ms is below the 2.29 ms the GPU needs to do 137 GFLOP at its "
                         "measured FP32 rate of 60.0 TFLOP/s")

    def test_a_fair_time_passes(self):
        problem, details = floor_check("tiled", self.with_limits(),
                                                self.with_limits("reference.json"))
        self.assertIsNone(problem)
        self.assertTrue(details["checked"])
        self.assertEqual(details["bound"], "flop")
        self.assertAlmostEqual(details["candidate_ms"], 15.1483202)

    def test_work_escaping_the_events_is_below_the_floor(self):
        # review.json: the candidate's events timed a tenth of its work (1.51 ms for a
        # 4096^3 SGEMM, 91 TFLOP/s); its bytes alone would need 0.07 ms, its flop 2.29 ms.
        problem, details = floor_check("tiled", self.with_limits("review.json"),
                                                self.with_limits("reference.json"))
        self.assertEqual(problem, "1.51 ms is below the 2.29 ms the GPU needs to do 137 GFLOP "
                                  "at its measured FP32 rate of 60.0 TFLOP/s")
        self.assertAlmostEqual(details["floor_ms"], 2.2906492, places=6)
        self.assertEqual(details["margin"], floor.FLOOR_MARGIN)

    def test_the_margin_leaves_room_under_the_measured_limits(self):
        floor_ms = 137438953000.0 / 60000e9 * 1e3
        for ms, flagged in ((floor_ms, False), (floor_ms / 1.09, False),
                            (floor_ms / 1.11, True)):
            with self.subTest(ms=ms):
                doc = self.with_limits()
                doc["comparisons"][0]["candidate"]["ms"]["median"] = ms
                problem, _ = floor_check("tiled", doc, self.with_limits("reference.json"))
                self.assertEqual(problem is not None, flagged)
        doc = self.with_limits()
        doc["comparisons"][0]["candidate"]["ms"]["median"] = floor_ms / 1.11
        self.assertIsNone(floor_check("tiled", doc, self.with_limits("reference.json"),
                                               margin=1.2)[0])

    def test_limits_and_work_come_from_the_reference_run(self):
        # The student's document raising its limits or hiding its work changes nothing.
        student = self.with_limits("review.json", {"copy_gbytes_per_s": 1e9, "fp32_gflops": 1e9})
        student["comparisons"][0]["candidate"].update(flop=0, bytes=0)
        problem, _ = floor_check("tiled", student, self.with_limits("reference.json"))
        self.assertIsNotNone(problem)
        # Without a reference run, the student's own limits are used.
        problem, _ = floor_check("tiled", self.with_limits("review.json"), None)
        self.assertIsNotNone(problem)

    def test_no_limits_is_not_checked(self):
        problem, details = floor_check("tiled", load("review.json"),
                                                load("reference.json"))
        self.assertIsNone(problem)
        self.assertEqual(details, {"checked": False,
                                   "why": "the bench reported no measured limits"})

    def test_a_reference_below_the_floor_means_the_limits_do_not_hold(self):
        reference = self.with_limits("reference.json", {"copy_gbytes_per_s": 3000.0,
                                                        "fp32_gflops": 5000.0})
        problem, details = floor_check("tiled", self.with_limits("review.json"),
                                                reference)
        self.assertIsNone(problem)
        self.assertFalse(details["checked"])
        self.assertIn("the reference itself measured 15.1 ms is below the 27.5 ms",
                      details["why"])

    def test_the_floor_survives_the_recomputation(self):
        doc = copy.deepcopy(self.with_limits("review.json"))
        fresh, problems = recompute(doc)
        self.assertEqual(problems, [])
        self.assertEqual(fresh["limits"], LIMITS)


if __name__ == "__main__":
    unittest.main()
