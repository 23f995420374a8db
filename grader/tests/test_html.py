"""The HTML report: self-contained, parses, and one <svg> per plot the data allows."""

from __future__ import annotations

import html
import re
import tempfile
import unittest
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

from grader.exports import FORMATS, write_exports
from grader.exports.html import lab_plots, to_html
from grader.exports.svg import nice_ticks
from grader.result import BuildRecord, GradeResult, LabResult, PartResult, TestResult
from grader.benchdoc import Plot


class _Collect(HTMLParser):
    VOID = {"meta", "br", "img", "input", "link", "hr", "area", "base", "col", "embed",
            "source", "track", "wbr"}
    SVG_EMPTY = {"line", "circle", "rect", "polyline", "path"}

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()


def _ms(median: float, samples: list[float]) -> dict:
    return {"median": median, "min": min(samples), "max": max(samples), "n": len(samples),
            "samples": samples}


def _side(speedups: list[float], cases: list[dict], metrics: dict, plots: list[dict]) -> dict:
    med = sorted(speedups)[len(speedups) // 2]
    return {"baseline_ms": _ms(2.0, [2.0] * len(speedups)),
            "candidate_ms": _ms(2.0 / med, [2.0 / s for s in speedups]),
            "speedup": _ms(med, speedups), "converged": True,
            "verification": {"checked": True, "passed": True, "message": "ok"},
            "cases": cases, "metrics": metrics, "plots": plots}


def _case(name: str, gbps: float) -> dict:
    return {"name": name, "converged": True, "ms": {"median": 1.0}, "gbytes_per_s": gbps}


def _plot(plot_id: str, title: str, points: list[dict], **kw) -> dict:
    """A plot as a bench declares it (cml::BenchReport::plot)."""
    return {"id": plot_id, "title": title, "caption": f"about {title}", "style": "line",
            "x": {"label": "x", "scale": "log2"}, "y": {"label": "y"}, "points": points, **kw}


def _lab(folder: str, title: str, speedups: list[float], ref: list[float], cases: list[dict],
         metrics: dict, plots: list[dict] = ()) -> LabResult:
    plots = list(plots)
    timing = {"student": _side(speedups, cases, metrics, plots),
              "reference": _side(ref, cases, metrics, plots),
              "student_speedup": sorted(speedups)[len(speedups) // 2],
              "reference_speedup": sorted(ref)[len(ref) // 2]}
    lab = LabResult(folder, title, 90.0, 100.0, timing=timing)
    lab.parts = [PartResult("correctness", "Kernel", "graded", 70.0, 70.0),
                 PartResult("performance", "Performance", "graded", 20.0, 30.0,
                            "Your kernel reaches 2.0x; full points need 2.5x <b>now</b>.")]
    lab.tests = [TestResult("kernel matches the CPU & more", "Kernel", "gpu", False, "passed",
                            35.0, 35.0),
                 TestResult("odd <sizes>", "Kernel", "gpu", True, "failed", 0.0, 35.0,
                            ["C[1][2] = 0, expected 3 (size 5, seed 7)"])]
    return lab


def timed_result() -> GradeResult:
    strides = [1, 2, 4, 8, 16, 32]
    lab01 = _lab("01_warp_sizing", "Warp sizing", [11.9, 12.1, 12.3], [12.2, 12.4, 12.6],
                 [_case(f"sweep_block_{b}", 100.0 + b) for b in (14, 32, 64, 128, 256, 1024)],
                 {}, [_plot("throughput_vs_block", "throughput vs block size",
                            [{"x": b, "case": f"sweep_block_{b}", "field": "gbytes_per_s"}
                             for b in (14, 32, 64, 128, 256, 1024)])])
    lab02 = _lab("02_coalescing", "Coalescing", [3.0, 3.1, 3.2], [3.9, 4.0, 4.1],
                 [_case("copy", 3000.0)] + [_case(f"stride_{s}", 2800.0 / s) for s in strides],
                 {}, [_plot("bandwidth_vs_stride", "bandwidth vs stride",
                            [{"x": s, "case": f"stride_{s}", "field": "gbytes_per_s"}
                             for s in strides],
                            ceiling={"label": "copy kernel", "case": "copy",
                                     "field": "gbytes_per_s"})])
    lab06 = _lab("06_bank_conflicts", "Bank conflicts", [1.5, 1.6], [1.6, 1.6], [],
                 {**{f"cycles_per_access_stride_{s}": 21.0 + 2 * s for s in strides},
                  **{f"predicted_degree_stride_{s}": s for s in strides}},
                 [_plot("cycles_vs_stride", "cycles per shared access vs stride",
                        [{"x": s, "metric": f"cycles_per_access_stride_{s}", "label": f"{s}-way"}
                         for s in strides])])
    lab07 = _lab("07_occupancy", "Occupancy", [1.9, 2.0], [2.1, 2.2],
                 [_case("unbounded_b256", 900.0), _case("bounds256x8_b256", 1500.0)],
                 {"unbounded_b256.predicted_occupancy": 0.375,
                  "unbounded_b256.registers": 80,
                  "bounds256x8_b256.predicted_occupancy": 1.0,
                  "bounds256x8_b256.registers": 32},
                 [_plot("throughput_vs_occupancy", "throughput vs occupancy",
                        [{"x": 0.375, "case": "unbounded_b256", "field": "gbytes_per_s",
                          "label": "unbounded_b256, 80 registers"},
                         {"x": 1.0, "case": "bounds256x8_b256", "field": "gbytes_per_s",
                          "label": "bounds256x8_b256, 32 registers"}],
                        style="dots", x={"label": "predicted occupancy", "scale": "linear",
                                         "min": 0, "max": 1})])
    untimed = LabResult("05_boundary_checks", "Boundary checks", 0.0, 100.0,
                        [PartResult("correctness", "Any size", "not_graded", 0.0, 100.0)])
    labs = [lab01, lab02, untimed, lab06, lab07]
    return GradeResult("submissions/<alice>", 7, "2025-01-01T00:00:00+00:00", "0.1.0",
                       {"name": "Test GPU", "compute_capability": "9.0"}, {}, labs,
                       points=360.0, max_points=500.0)


class HtmlReportTest(unittest.TestCase):
    def setUp(self) -> None:
        self.result = timed_result()
        self.page = to_html(self.result)

    def parse(self, text: str) -> _Collect:
        parser = _Collect()
        parser.feed(text)
        parser.close()
        return parser

    def test_parses_with_balanced_tags(self):
        parsed = self.parse(self.page)
        self.assertEqual(parsed.errors, [])
        self.assertEqual(parsed.stack, [])
        self.assertTrue(self.page.startswith("<!DOCTYPE html>"))

    def test_self_contained(self):
        self.assertNotIn("<script", self.page.lower())
        self.assertIsNone(re.search(r"https?://", self.page))
        parsed = self.parse(self.page)
        for tag, key, value in parsed.attrs:
            if key in ("src", "href"):
                self.assertTrue(str(value).startswith("#"), f"<{tag} {key}={value}>")
        self.assertNotIn("@import", self.page)
        self.assertNotIn("url(", self.page)

    def test_one_svg_per_plot(self):
        # speedups + strip plot + throughput vs block size (01) + bandwidth vs stride (02)
        # + cycles vs stride (06) + throughput vs occupancy (07)
        self.assertEqual(self.page.count("<svg"), 6)
        self.assertEqual(self.page.count("</svg>"), 6)
        for title in ("Speedup over the baseline", "Timing samples", "bandwidth vs stride",
                      "cycles per shared access vs stride", "throughput vs block size",
                      "throughput vs occupancy"):
            self.assertIn(title, self.page)
        self.assertIn("32-way", self.page)  # the predicted degree labels lab 06's points

    def test_text_is_escaped(self):
        self.assertIn("Submission <code>&lt;alice&gt;</code>", self.page)  # its name only
        self.assertIn("odd &lt;sizes&gt;", self.page)
        self.assertIn("&lt;b&gt;now&lt;/b&gt;", self.page)
        self.assertNotIn("<b>now", self.page)

    def test_table_and_reasons(self):
        self.assertIn("90 / 100", self.page)
        self.assertIn("full points need 2.5x", self.page)
        self.assertIn("12.10×", self.page)  # lab 01's median speedup in the table

    def test_no_timing_means_no_plots(self):
        result = GradeResult("s", 1, "t", "v", None, {}, [LabResult("04_tiled_matmul",
                                                                   "Tiled", 0.0, 100.0)])
        page = to_html(result)
        self.assertNotIn("<svg", page)
        self.assertIn("GPU parts were not graded", page)
        self.assertEqual(self.parse(page).errors, [])

    def test_only_declared_plots_are_drawn(self):
        lab = self.result.labs[1]  # cases stride_N and copy, as lab 02's bench writes them
        for side in ("student", "reference"):
            getattr(lab.timing, side).plots = []
        self.assertEqual(lab_plots(lab), [])  # no plot recognised by its cases' names

    def test_a_new_sweep_needs_no_change_here(self):
        lab = self.result.labs[1]
        spec = _plot("latency_vs_depth", "latency vs queue depth",
                     [{"x": d, "case": name, "field": "ms"} for d, name in
                      ((1, "copy"), (2, "stride_2"), (4, "nowhere"))], style="line",
                     x={"label": "queue depth", "scale": "linear"})
        student = lab.timing.student
        student.cases = [replace(case, written={**case.written, "ms": 2.0})
                         for case in student.cases]
        student.plots = [Plot.read(spec, "plots[0]")]
        lab.timing.reference.plots = []
        plots = lab_plots(lab)
        self.assertEqual(len(plots), 1)
        svg, caption = plots[0]
        self.assertIn("Lab 02: latency vs queue depth", svg)
        self.assertIn("queue depth", svg)
        self.assertEqual(caption, "about latency vs queue depth")
        self.assertEqual(svg.count("</circle>"), 2)  # the point with no case is left out

    def test_plots_need_their_data(self):
        lab = self.result.labs[1]
        self.assertEqual(len(lab_plots(lab)), 1)
        lab.timing.student.cases = []
        lab.timing.reference = None
        self.assertEqual(lab_plots(lab), [])

    def test_write_exports_html(self):
        self.assertIn("html", FORMATS)
        with tempfile.TemporaryDirectory() as tmp:
            written = write_exports(self.result, Path(tmp), ["html"])
            self.assertEqual([p.name for p in written], ["report.html"])
            self.assertEqual(written[0].read_text(encoding="utf-8"), self.page)

    def test_grade_html_flag(self):
        from unittest import mock

        from grader.__main__ import build_parser
        from grader.commands import grade as grade_cmd
        with tempfile.TemporaryDirectory() as tmp:
            args = build_parser().parse_args(["grade", tmp, "--labs", "04", "--out", tmp,
                                              "--format", "junit", "--html", "-q"])
            with mock.patch.object(grade_cmd, "grade_submission",
                                   return_value=(self.result, 0)), mock.patch("sys.stdout"):
                self.assertEqual(grade_cmd.run(args), 0)
            self.assertTrue((Path(tmp) / "report.html").is_file())
            self.assertTrue((Path(tmp) / "junit.xml").is_file())

    def test_nice_ticks(self):
        self.assertEqual(nice_ticks(0, 10), [0, 2, 4, 6, 8, 10])
        ticks = nice_ticks(0, 2837)
        self.assertEqual(ticks[0], 0)
        self.assertGreaterEqual(ticks[-1], 2837)


class NeutralMetricTest(unittest.TestCase):
    def test_a_reported_only_metric_is_neither_a_pass_nor_a_fail(self):
        lab = LabResult("04_tiled_matmul", "Tiled", 0.0, 0.0)
        lab.parts = [PartResult("metric", "Load requests per naive request", "graded", 0.0, 0.0,
                                "Measured 0.031 (reported, not scored).")]
        page = to_html(GradeResult("s", 1, "2026-01-01T00:00:00Z", "0", None, {}, labs=[lab]))
        row = re.search(r"<tr><td class=\"(\w+)\">[^<]*Load requests", page)
        self.assertIsNotNone(row)
        self.assertEqual(row.group(1), "info")
        self.assertIn("reported, not scored", page)


class CompilerOutputTest(unittest.TestCase):
    """A failed build shows the compiler's whole output, escaped, scrollable and cut at a
    sane size with a note; not only the first line of each error."""

    NVCC = ("labs/04_tiled_matmul/tiled_matmul.cu(41): error: identifier \"idx\" is "
            "undefined\n      c[idx] = a[row] < b[col] && ok;\n        ^\n\n"
            "labs/04_tiled_matmul/tiled_matmul.cu(52): error: too few arguments in function "
            "call\n          detected during instantiation of \"void tiled<16>(float *)\"\n\n"
            "2 errors detected in the compilation of \"tiled_matmul.cu\".")

    def page(self, output: str) -> str:
        lab = LabResult("04_tiled_matmul", "Tiled", 0.0, 100.0)
        lab.parts = [PartResult("build", "Build", "graded", 0.0, 0.0,
                                "Your code does not compile:\n" + output.splitlines()[0])]
        lab.build = BuildRecord(False, 3.0, [output.splitlines()[0]], False, output=output)
        return to_html(GradeResult("s", 1, "2026-01-01T00:00:00Z", "0", None, {}, labs=[lab]))

    def block(self, page: str) -> str:
        found = re.search(r'<summary>Compiler output</summary><pre class="log">(.*?)</pre>',
                          page, re.S)
        self.assertIsNotNone(found, "no compiler output block")
        return found.group(1)

    def test_the_whole_error_escaped(self):
        page = self.page(self.NVCC)
        shown = html.unescape(self.block(page))
        self.assertEqual(shown, self.NVCC)  # every line, the source line and caret included
        self.assertIn("a[row] &lt; b[col] &amp;&amp; ok", page)
        self.assertNotIn("Cut here", page)
        self.assertIn("pre.log{max-height:", page)  # scrollable, not a page-long block
        parsed = _Collect()
        parsed.feed(page)
        self.assertEqual(parsed.errors, [])

    def test_a_long_output_is_cut_with_a_note(self):
        from grader.exports.html import MAX_LOG_LINES
        output = "\n".join(f"tiled_matmul.cu({i}): error: line {i}" for i in range(3000))
        page = self.page(output)
        shown = html.unescape(self.block(page)).splitlines()
        self.assertEqual(len(shown), MAX_LOG_LINES)
        self.assertEqual(shown[0], "tiled_matmul.cu(0): error: line 0")  # the first errors
        self.assertIn(f"Cut here: the first {MAX_LOG_LINES} of 3000 lines", page)

    def test_one_huge_line_is_cut_too(self):
        from grader.exports.html import MAX_LOG_CHARS
        page = self.page("error: " + "x" * (3 * MAX_LOG_CHARS))
        self.assertEqual(len(html.unescape(self.block(page))), MAX_LOG_CHARS)
        self.assertIn("Cut here: the first 1 of 1 lines", page)

    def test_without_output_the_error_lines_are_shown(self):
        lab = LabResult("02_coalescing", "Coalescing", 0.0, 100.0,
                        build={"ok": False, "errors": ["coalescing.cu(41): error: bad"]})
        page = to_html(GradeResult("s", 1, "t", "0", None, {}, labs=[lab]))
        self.assertIn("<summary>Compiler errors</summary>", page)
        self.assertIn("coalescing.cu(41): error: bad", page)
        ok = LabResult("02_coalescing", "Coalescing", 0.0, 100.0, build={"ok": True})
        self.assertNotIn("<summary>Compiler", to_html(GradeResult("s", 1, "t", "0", None, {},
                                                                   labs=[ok])))

    def test_the_output_names_files_as_submitted_and_hides_secrets(self):
        from grader import leaks
        from grader.stages.build import compiler_output
        work = Path("/tmp/cml-grade-x")
        src = work / "student" / "src"
        rel = "labs/04_tiled_matmul/tiled_matmul.cu"
        log = (f"FAILED: {work}/student/build/x.o\n{src}/{rel}(41): error: bad\n"
               f"{src}/labs/04_tiled_matmul/tiled_matmul.cuh(3): note: declared here\n")
        out = compiler_output(log, {str(src / rel): rel}, work)
        self.assertEqual(out, f"FAILED: student/build/x.o\n{rel}(41): error: bad\n"
                              "labs/04_tiled_matmul/tiled_matmul.cuh(3): note: declared here")
        lab = LabResult("04_tiled_matmul", "Tiled", 0.0, 100.0,
                        build=BuildRecord(False, 1.0, [], False, output=(
                            "x.cu(1): error: bad\n    float secret_reference_line = 42;\n")))
        leaks.Secrets({"float secret_reference_line = 42;"}).scrub_lab(lab)
        self.assertNotIn("secret_reference_line", lab.build.output)
        self.assertIn(leaks.NOTICE, lab.build.output)

    def test_result_json_keeps_the_output(self):
        record = BuildRecord(False, 1.0, ["e"], False, output=self.NVCC)
        self.assertEqual(BuildRecord.from_dict(record.to_dict()).output, self.NVCC)
        self.assertNotIn("output", BuildRecord(True, 1.0).to_dict())


class NoGpuTest(unittest.TestCase):
    """What a grade without a GPU shows: every gradable point earned is not a failure, and a
    case not run says so once."""

    def page(self, host_points: float) -> str:
        lab = LabResult("01_warp_sizing", "Warp sizing", host_points, 100.0)
        lab.parts = [PartResult("correctness", "Warps per block", "graded", host_points, 45.0,
                                "" if host_points == 45.0 else "1 of 2 test cases pass."),
                     PartResult("correctness", "Warps on the GPU", "not_graded", 0.0, 55.0,
                                "Not graded: no CUDA device, so this correctness part was "
                                "not run.")]
        lab.tests = [TestResult("Votes agree", "Warps on the GPU", "gpu", False, "not_run",
                                0.0, 55.0, ["not run: no CUDA device"])]
        return to_html(GradeResult("s", 1, "2026-01-01T00:00:00Z", "0", None, {}, labs=[lab]))

    def test_all_gradable_points_are_not_red(self):
        page = self.page(45.0)
        cell = re.search(r'<td class="num (\w+)">45 / 100</td><td class="why">([^<]*)<', page)
        self.assertIsNotNone(cell)
        self.assertEqual(cell.group(1), "skip")
        self.assertEqual(cell.group(2), "55 points need a GPU: not graded here.")
        self.assertIn("— not run: no CUDA device<", page)
        self.assertNotIn("not run: not run", page)

    def test_points_lost_here_are_red(self):
        cell = re.search(r'<td class="num (\w+)">40 / 100</td>', self.page(40.0))
        self.assertEqual(cell.group(1), "fail")


if __name__ == "__main__":
    unittest.main()
