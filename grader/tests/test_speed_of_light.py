"""The speed-of-light line: floor.speed_of_light on hand-made bench documents (a
bytes-bound and a flop-bound comparison, no limits, no reference, no work), the record kept
in result.json, and the line the terminal table, the Markdown summary and the HTML report
print from it. A figure beside the score: it never changes a part's points."""

from __future__ import annotations

import json
import os
import unittest
import xml.etree.ElementTree as ET
from unittest import mock

from grader.measure import floor, samples
from grader.benchdoc import Limits, Work
from grader.measure.floor import SpeedOfLight
from grader.exports.common import part_speed_of_light, score_items, speed_of_light
from grader.exports.html import to_html
from grader.exports.junit import to_junit
from grader.exports.markdown import to_markdown
from grader.exports.table import terminal_table
from grader.result import GradeResult, LabResult, PartResult
from .bench_records import read, recompute, sample_stats


def sol_of(name: str, student: dict | None, reference: dict | None):
    return floor.speed_of_light(name, read(student), read(reference))


LIMITS = {"copy_gbytes_per_s": 2810.0, "fp32_gflops": 66900.0,
          "copy_method": "device-to-device copy kernel, 1 GiB",
          "fp32_method": "FMA chains, every SM"}


def bench(name: str, candidate_ms: list[float], work: dict, limits: dict | None = LIMITS,
          baseline_ms: float = 4.0) -> dict:
    """A bench document of one comparison as the harness writes it: interleaved pairs of a
    baseline at `baseline_ms` and the candidate's samples, every summary restated from them
    (samples.recompute), the work on both sides."""
    base = [baseline_ms] * len(candidate_ms)
    doc = {"schema": "cml-bench/2", "lab": "lab00", "comparisons": [{
        "name": name,
        "baseline": {"name": "baseline", "ms": sample_stats(base), **work},
        "candidate": {"name": "candidate", "ms": sample_stats(list(candidate_ms)), **work},
        "speedup": sample_stats(samples.pair_ratios(base, candidate_ms))}]}
    if limits is not None:
        doc["limits"] = dict(limits)
    fresh, problems = recompute(doc)
    assert problems == [], problems
    return fresh


# 1 GiB read and written once: bytes-bound at any FP32 rate.
COPY_WORK = {"bytes": 2 * 2 ** 30, "flop": 2 ** 28}
# A 4096^3 SGEMM: 137 GFLOP over 192 MiB, flop-bound.
GEMM_WORK = {"bytes": 3 * 4 * 4096 * 4096, "flop": 2 * 4096 ** 3}


class RecordTest(unittest.TestCase):
    def test_a_bytes_bound_comparison_is_held_to_the_copy_bandwidth(self):
        # 2 GiB in 0.93 ms is 2.31 TB/s; the reference's 0.84 ms is 2.56 TB/s.
        sol = sol_of("copy", bench("copy", [0.95, 0.93, 0.92], COPY_WORK),
                                      bench("copy", [0.84, 0.85, 0.83], COPY_WORK))
        self.assertEqual((sol.bound, sol.unit, sol.limit), ("bytes", "GB/s", 2810.0))
        self.assertEqual(sol.work, 2 * 2 ** 30)
        self.assertAlmostEqual(sol.student_rate, 2 * 2 ** 30 / 0.93e-3 / 1e9)
        self.assertAlmostEqual(sol.student_fraction, sol.student_rate / 2810.0)
        self.assertAlmostEqual(sol.reference_rate, 2 * 2 ** 30 / 0.84e-3 / 1e9)
        self.assertAlmostEqual(sol.reference_fraction, sol.reference_rate / 2810.0)
        self.assertEqual(sol.limits_from, "reference")
        self.assertEqual(sol.text(), "Speed of light: your kernel moves 2.31 TB/s, 82 % of this "
                                     "GPU's measured copy bandwidth (2.81 TB/s); the reference "
                                     "91 %.")

    def test_a_flop_bound_comparison_is_held_to_the_fp32_peak(self):
        # 137 GFLOP in 14.6 ms is 9.41 TFLOP/s; the reference's 12.8 ms is 10.7 TFLOP/s.
        sol = sol_of("tiled", bench("tiled", [14.6, 14.7, 14.5], GEMM_WORK),
                                      bench("tiled", [12.8, 12.9, 12.7], GEMM_WORK))
        self.assertEqual((sol.bound, sol.unit, sol.limit), ("flop", "GFLOP/s", 66900.0))
        self.assertAlmostEqual(sol.student_rate, 2 * 4096 ** 3 / 14.6e-3 / 1e9)
        self.assertEqual(sol.text(), "Speed of light: your kernel does 9.41 TFLOP/s, 14 % of "
                                     "this GPU's measured FP32 peak (66.9 TFLOP/s); the "
                                     "reference 16 %.")

    def test_the_binding_limit_is_the_one_whose_floor_is_longer(self):
        # The same work where FP32 runs at 100 GFLOP/s: its 268 MFLOP need 2.7 ms, its bytes
        # 0.76 ms, so the flop bind it.
        slow = {"copy_gbytes_per_s": 2810.0, "fp32_gflops": 100.0}
        sol = sol_of("copy", bench("copy", [5.0], COPY_WORK, slow), None)
        bound = floor.physical_floor(Work(COPY_WORK["flop"], COPY_WORK["bytes"]),
                                     Limits(slow["copy_gbytes_per_s"], slow["fp32_gflops"]))
        self.assertEqual(sol.bound, bound["bound"])
        self.assertEqual(sol.bound, "flop")
        self.assertAlmostEqual(sol.student_rate, 2 ** 28 / 5.0e-3 / 1e9)

    def test_the_limits_and_the_work_are_the_reference_runs(self):
        # A student's document that claims a slower GPU and less work changes nothing.
        student = bench("copy", [0.93], {"bytes": 2 ** 20, "flop": 0},
                        {"copy_gbytes_per_s": 10.0, "fp32_gflops": 10.0})
        sol = sol_of("copy", student, bench("copy", [0.84], COPY_WORK))
        self.assertEqual((sol.limit, sol.work, sol.limits_from), (2810.0, 2 * 2 ** 30,
                                                                  "reference"))
        self.assertAlmostEqual(sol.student_fraction, 2 * 2 ** 30 / 0.93e-3 / 1e9 / 2810.0)

    def test_without_a_reference_the_students_limits_are_used(self):
        sol = sol_of("copy", bench("copy", [0.93], COPY_WORK), None)
        self.assertEqual((sol.limits_from, sol.limit), ("student", 2810.0))
        self.assertIsNone(sol.reference_rate)
        self.assertIsNone(sol.reference_fraction)
        self.assertEqual(sol.text(), "Speed of light: your kernel moves 2.31 TB/s, 82 % of this "
                                     "GPU's measured copy bandwidth (2.81 TB/s).")
        # A reference run without the comparison: its limits still, the student's work.
        other = bench("other", [1.0], COPY_WORK, {"copy_gbytes_per_s": 2000.0})
        sol = sol_of("copy", bench("copy", [0.93], COPY_WORK), other)
        self.assertEqual((sol.limits_from, sol.limit, sol.bound), ("reference", 2000.0, "bytes"))
        self.assertIsNone(sol.reference_fraction)

    def test_no_limits_no_work_or_no_time_give_no_record(self):
        no_limits = bench("copy", [0.93], COPY_WORK, limits=None)
        self.assertIsNone(sol_of("copy", no_limits,
                                                  bench("copy", [0.84], COPY_WORK, None)))
        self.assertIsNone(sol_of("copy", bench("copy", [0.9], {}), None))
        self.assertIsNone(sol_of("copy", bench("copy", [0.9], {"bytes": 0}),
                                                  None))
        # Bytes with only an FP32 rate measured: no limit bounds the work.
        self.assertIsNone(sol_of(
            "copy", bench("copy", [0.9], {"bytes": 1e9}, {"fp32_gflops": 1e4}), None))
        self.assertIsNone(sol_of("copy", None, bench("copy", [0.84], COPY_WORK)))
        self.assertIsNone(sol_of("other", bench("copy", [0.9], COPY_WORK), None))
        zero = bench("copy", [0.0, 0.0], COPY_WORK)
        self.assertIsNone(sol_of("copy", zero, None))

    def test_units_and_percentages_read_well(self):
        self.assertEqual(floor.rate_text(812.4, "bytes"), "812 GB/s")
        self.assertEqual(floor.rate_text(999.97, "bytes"), "1.00 TB/s")
        self.assertEqual(floor.rate_text(2312.0, "bytes"), "2.31 TB/s")
        self.assertEqual(floor.rate_text(48.25, "bytes"), "48.2 GB/s")
        self.assertEqual(floor.rate_text(640.0, "flop"), "640 GFLOP/s")
        self.assertEqual(floor.rate_text(66900.0, "flop"), "66.9 TFLOP/s")
        self.assertEqual(floor.percent_text(0.8249), "82 %")
        self.assertEqual(floor.percent_text(0.005), "0 %")
        self.assertEqual(floor.percent_text(1.126), "113 %")

    def test_the_record_round_trips_through_result_json(self):
        sol = sol_of("copy", bench("copy", [0.93], COPY_WORK),
                                      bench("copy", [0.84], COPY_WORK))
        data = json.loads(json.dumps(sol.to_dict()))
        self.assertEqual(data["unit"], "GB/s")
        self.assertEqual(SpeedOfLight.from_dict(data), sol)

    def test_anything_else_in_result_json_is_no_record(self):
        good = SpeedOfLight("bytes", 2810.0, 2e9, 2300.0, 0.82, 2560.0, 0.91).to_dict()
        self.assertIsNotNone(SpeedOfLight.from_dict(good))
        for bad in (None, "82 %", [], {}, {**good, "bound": "joules"},
                    {**good, "limit": 0}, {**good, "limit": "2810"},
                    {**good, "student_rate": float("nan")}, {**good, "student_fraction": -1},
                    {**good, "work": True}):
            with self.subTest(bad=bad):
                self.assertIsNone(SpeedOfLight.from_dict(bad))
        # A reference side half there is left out, the student's kept.
        sol = SpeedOfLight.from_dict({**good, "reference_fraction": None})
        self.assertIsNone(sol.reference_rate)
        self.assertNotIn("the reference", sol.text())


# ------------------------------------------------------------------------ what is printed

SOL = SpeedOfLight("bytes", 2810.0, 2 * 2 ** 30, 2309.0, 2309.0 / 2810.0, 2557.0,
                   2557.0 / 2810.0)
LINE = ("Speed of light: your kernel moves 2.31 TB/s, 82 % of this GPU's measured copy "
        "bandwidth (2.81 TB/s); the reference 91 %.")


def lab(performance: PartResult, folder: str = "03_copy") -> LabResult:
    out = LabResult(folder, "Copy kernel", 0.0, 100.0, timing={
        "student_speedup": 4.3, "reference_speedup": 4.8})
    out.parts = [PartResult("correctness", "Copy", "graded", 80.0, 80.0), performance]
    out.points = sum(p.points for p in out.parts)
    return out


def full_speed() -> PartResult:
    return PartResult("performance", "Performance", "graded", 20.0, 20.0, "",
                      {"student_speedup": 4.3, "reference_speedup": 4.8,
                       "speed_of_light": SOL.to_dict()})


def result(*labs: LabResult) -> GradeResult:
    grade = GradeResult("sub", 7, "2025-01-01T00:00:00Z", "0",
                        {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}, {},
                        labs=list(labs))
    grade.points = sum(x.points for x in labs)
    grade.max_points = sum(x.max_points for x in labs)
    return grade


def without_timing() -> list[PartResult]:
    """Speed parts with no record: not graded, a failed bench, an altered document, an
    edited record."""
    return [PartResult("performance", "Performance", "not_graded", 0.0, 20.0,
                       "Not graded: no CUDA device.", {"why": "no device"}),
            PartResult("performance", "Performance", "graded", 0.0, 20.0,
                       "No speed points: your bench did not finish (exit 1)."),
            PartResult("performance", "Performance", "review", 0.0, 20.0,
                       f"Flagged for review: {samples.ALTERED}.", {"disagreements": ["x"]}),
            PartResult("performance", "Performance", "graded", 20.0, 20.0, "",
                       {"speed_of_light": {"bound": "bytes", "limit": "fast"}})]


class PrintedTest(unittest.TestCase):
    # A terminal wide enough for the line on one row of its own (wrapping to the terminal's
    # width is test_exports.TerminalTableTest's).
    def setUp(self):
        wide = mock.patch.dict(os.environ, {"COLUMNS": "240"})
        wide.start()
        self.addCleanup(wide.stop)

    def test_the_table_prints_the_line_under_the_lab_even_at_full_points(self):
        text = terminal_table(result(lab(full_speed())), color=False)
        lines = text.splitlines()
        row = next(i for i, line in enumerate(lines) if line.startswith("03 Copy kernel"))
        self.assertEqual(lines[row + 1].strip(), LINE)
        self.assertEqual(text.count("Speed of light"), 1)

    def test_the_line_follows_the_speed_parts_reason(self):
        part = full_speed()
        part.points, part.reason = 10.0, "Your kernel reaches 4.3x; full points need 4.8x."
        lines = terminal_table(result(lab(part)), color=False).splitlines()
        at = next(i for i, line in enumerate(lines) if "full points need 4.8x" in line)
        self.assertEqual(lines[at + 1].strip(), LINE)

    def test_no_timing_prints_nothing(self):
        for part in without_timing():
            with self.subTest(part=part.reason or part.details):
                grade = result(lab(part))
                self.assertIsNone(speed_of_light(grade.labs[0]))
                self.assertNotIn("Speed of light", terminal_table(grade, color=False))
                self.assertNotIn("Speed of light", to_markdown(grade))
                self.assertNotIn("Speed of light", to_html(grade))
                self.assertNotIn("Speed of light",
                                 "\n".join(i.output for i in score_items(grade.labs[0])))
                self.assertNotIn("Speed of light", to_junit(grade))

    def test_only_a_speed_part_carries_it(self):
        other = PartResult("metric", "Bandwidth", "graded", 0.0, 0.0, "",
                           {"speed_of_light": SOL.to_dict()})
        self.assertIsNone(part_speed_of_light(other))
        self.assertEqual(part_speed_of_light(full_speed()), SOL)

    def test_markdown_shows_it_with_the_labs_parts(self):
        text = to_markdown(result(lab(full_speed())))
        self.assertIn("\n" + LINE + "\n", text)
        self.assertLess(text.index("<summary>Lab 03"), text.index(LINE))

    def test_per_part_outputs_carry_it(self):
        items = score_items(lab(full_speed()))
        speed = next(i for i in items if i.kind == "performance")
        self.assertIn(LINE, speed.output)
        self.assertNotIn("Speed of light", next(i for i in items if i.kind != "performance")
                         .output)
        suite = ET.fromstring(to_junit(result(lab(full_speed()))))
        outs = {case.get("name"): case.findtext("system-out") for case in suite.iter("testcase")}
        self.assertEqual(outs["Performance"], "20 / 20 points, graded\n" + LINE)
        self.assertNotIn("Speed of light", outs["Correctness: Copy"])

    def test_the_html_report_shows_it_beside_the_speed_figures(self):
        no_ref = full_speed()
        no_ref.details["speed_of_light"] = SpeedOfLight(
            "flop", 66900.0, 2 * 4096 ** 3, 9410.0, 9410.0 / 66900.0).to_dict()
        page = to_html(result(lab(full_speed()), lab(no_ref, "04_tiled_matmul")))
        speed = page.index("<h2>Speed</h2>")
        table = page.index('<table class="sol">')
        self.assertLess(speed, table)
        self.assertLess(table, page.index('<h2 id="lab-03_copy">'))
        rows = page[table:page.index("</table>", table)]
        self.assertIn("<td>Lab 03</td><td>copy bandwidth: 2.81 TB/s</td>"
                      '<td class="num">2.31 TB/s (82 %)</td>'
                      '<td class="num">2.56 TB/s (91 %)</td>', rows)
        self.assertIn("<td>Lab 04</td><td>FP32 peak: 66.9 TFLOP/s</td>"
                      '<td class="num">9.41 TFLOP/s (14 %)</td><td class="num">–</td>', rows)
        section = page[page.index('<h2 id="lab-03_copy">'):]
        self.assertIn(f'<p class="sol">{LINE.replace(chr(39), "&#x27;")}</p>', section)
        self.assertIn("it earns no points", page)


if __name__ == "__main__":
    unittest.main()
