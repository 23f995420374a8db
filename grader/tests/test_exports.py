"""Every export format against its rules, on results built by hand: a lab fully graded on a
GPU, the same lab graded without one, and a lab that does not compile."""

import io
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET
from contextlib import redirect_stdout
from pathlib import Path
from unittest import mock

from grader.exports import (fmt_points, score_items, terminal_table, to_gradescope, to_html,
                            to_junit, to_markdown, to_prairielearn, write_exports)
from grader.result import (CRASHED, FAILED, GRADED, NOT_GRADED, NOT_MEASURED, NOT_RUN, PASSED,
                           REVIEW, GradeResult, LabResult, PartResult, TestResult)
from grader.scoring import grade_totals, lab_totals, leave_out_unmeasured
from grader.benchdoc import Verification

DATA = Path(__file__).parent / "data"
# Gradescope's autograder specification: the fields results.json may carry.
GRADESCOPE_TOP = {"score", "execution_time", "output", "output_format", "test_output_format",
                  "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
                  "leaderboard"}
GRADESCOPE_TEST = {"score", "max_score", "status", "name", "name_format", "number", "output",
                   "output_format", "tags", "visibility", "extra_data"}
GRADESCOPE_FORMATS = {"text", "html", "simple_format", "md", "ansi"}
GRADESCOPE_VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
# PrairieLearn's external grading results (docs/externalGrading.md, "Grading results").
PRAIRIELEARN_TOP = {"gradable", "score", "message", "output", "images", "tests", "format_errors"}
PRAIRIELEARN_TEST = {"name", "description", "points", "max_points", "message", "output",
                     "images"}

DEVICE = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
NO_GPU = "Not graded: no CUDA device, so this correctness part was not run."


def test(name, group, layer, status, points, max_points, hidden=False, messages=()):
    return TestResult(name, group, layer, hidden, status, points, max_points, list(messages), 0.25)


def graded_lab() -> LabResult:
    """Lab 04 on a GPU: host groups full, one GPU case failing (with a control character and
    markup in its message), a crash, a partial speed score and a metric worth nothing."""
    share = round(25 / 3, 4)
    tests = [
        test("The naive model counts one row and one column per output", "Global-load model",
             "host", PASSED, 7.5, 7.5),
        test("The tiled model divides by the tile width", "Global-load model", "host",
             PASSED, 7.5, 7.5),
        test("Tile chooser respects the shared-memory limit", "Run-time tile chooser", "host",
             PASSED, 10.0, 10.0),
        test("Tiled kernel matches the CPU for 64 x 64", "Tiled kernel, compile-time tile",
             "gpu", PASSED, share, share),
        test("Tiled kernel matches the CPU for 1000 x 1000", "Tiled kernel, compile-time tile",
             "gpu", PASSED, share, share),
        test("Tiled kernel handles sizes that are not multiples of the tile",
             "Tiled kernel, compile-time tile", "gpu", FAILED, 0.0, share, hidden=True,
             messages=["C[63][2] = 0 <never written>, expected 1.5 & more\x07 (size 65, seed 7)",
                       "hint: guard the loads, not the barrier."]),
        test("Dynamic kernel matches the CPU", "Tiled kernel, run-time tile", "gpu", CRASHED,
             0.0, 20.0, messages=["illegal memory access"]),
    ]
    parts = [
        PartResult("build", "Build", GRADED, 0.0, 0.0, "", {"seconds": 41.2}),
        PartResult("static", "Static checks", GRADED, 0.0, 0.0, ""),
        PartResult("correctness", "Global-load model", GRADED, 15.0, 15.0),
        PartResult("correctness", "Run-time tile chooser", GRADED, 10.0, 10.0),
        PartResult("correctness", "Tiled kernel, compile-time tile", GRADED, 16.6667, 25.0,
                   "2 of 3 test cases pass; failing: Tiled kernel handles sizes | edge"),
        PartResult("correctness", "Tiled kernel, run-time tile", GRADED, 0.0, 20.0,
                   "0 of 1 test cases pass; failing: Dynamic kernel matches the CPU"),
        PartResult("memory_safety", "Memory safety", GRADED, 5.0, 10.0,
                   "racecheck reported 1 error: Error: Race reported between Write access."),
        PartResult("performance", "Performance", GRADED, 0.0, 20.0,
                   "No speed points: correctness comes first: these groups need full marks: "
                   "Tiled kernel, compile-time tile."),
        PartResult("metric", "Global load requests per naive request", GRADED, 0.0, 0.0, "",
                   {"value": 0.031}),
    ]
    timing = {"student": {"candidate_ms": {"median": 7.41}}, "student_speedup": 13.25,
              "reference_speedup": 14.1, "time_ratio": 14.1 / 13.25}
    lab = LabResult("04_tiled_matmul", "Tiled matrix multiplication", 0, 0, parts, tests,
                    timing, {"ok": True}, {}, 95.5)
    lab_totals(lab)
    return lab


def full_lab() -> LabResult:
    """A second lab at full marks, with a speed score flagged for review elsewhere."""
    tests = [test("Coalesced index walks columns", "Index function", "host", PASSED, 50.0, 50.0)]
    parts = [PartResult("build", "Build", GRADED, 0.0, 0.0),
             PartResult("correctness", "Index function", GRADED, 50.0, 50.0),
             PartResult("performance", "Performance", GRADED, 50.0, 50.0)]
    lab = LabResult("02_coalescing", "Coalescing", 0, 0, parts, tests,
                    {"student": {"candidate_ms": {"median": 0.412}}, "student_speedup": 6.0,
                     "reference_speedup": 6.2}, {"ok": True}, {}, 20.0)
    lab_totals(lab)
    return lab


def mixed_tiled_group(host_cases: int, host_points: float, gpu_cases: int) -> PartResult:
    """Lab 04's 25-point tiled group graded without a GPU: its host cases all pass, its GPU
    cases wait for a GPU."""
    gpu_points = round(25.0 - host_points, 2)
    return PartResult(
        "correctness", "Tiled kernel, compile-time tile", NOT_GRADED, host_points, 25.0,
        f"Host cases: {host_cases} of {host_cases} pass ({host_points:g} of {host_points:g} "
        f"points, graded here). Not graded: no CUDA device, so its {gpu_cases} GPU case(s) "
        f"({gpu_points:g} points) were not run.",
        {"host_passed": host_cases, "host_total": host_cases, "host_points": host_points,
         "host_max": host_points, "gpu_max": gpu_points})


def no_gpu_lab() -> LabResult:
    """Lab 04 without a CUDA device: host groups graded, GPU parts not graded."""
    tests = [
        test("The naive model counts one row and one column per output", "Global-load model",
             "host", PASSED, 15.0, 15.0),
        test("Tile chooser respects the shared-memory limit", "Run-time tile chooser", "host",
             FAILED, 0.0, 10.0, messages=["REQUIRE( choose_tile(...) == 16 ) with 32 == 16"]),
        test("Tiled kernel matches the CPU for 64 x 64", "Tiled kernel, compile-time tile",
             "gpu", NOT_RUN, 0.0, 25.0, messages=["Not graded: no CUDA device, so this test "
                                                   "part was not run."]),
    ]
    parts = [
        PartResult("build", "Build", GRADED, 0.0, 0.0),
        PartResult("static", "Static checks", GRADED, 0.0, 0.0),
        PartResult("correctness", "Global-load model", GRADED, 15.0, 15.0),
        PartResult("correctness", "Run-time tile chooser", GRADED, 0.0, 10.0,
                   "0 of 1 test cases pass; failing: Tile chooser respects the shared-memory "
                   "limit. Hint: halve from kMaxTile."),
        PartResult("correctness", "Tiled kernel, compile-time tile", NOT_GRADED, 0.0, 25.0,
                   NO_GPU, {"passed": 0, "total": 1}),
        PartResult("memory_safety", "Memory safety", NOT_GRADED, 0.0, 10.0,
                   "Not graded: no CUDA device, so this memory safety part was not run."),
        PartResult("performance", "Performance", NOT_GRADED, 0.0, 40.0,
                   "Not graded: no CUDA device, so this performance part was not run."),
    ]
    lab = LabResult("04_tiled_matmul", "Tiled matrix multiplication", 0, 0, parts, tests,
                    None, {"ok": True}, {}, 12.0)
    lab_totals(lab)
    return lab


def compile_error_lab() -> LabResult:
    reason = "Not graded: the build failed (see Build)."
    parts = [PartResult("build", "Build", GRADED, 0.0, 0.0,
                        "Your code does not compile:\ncoalescing.cu(41): error: identifier "
                        "\"idx\" is undefined", {"errors": ["coalescing.cu(41): error: "
                                                            "identifier \"idx\" is undefined"]}),
             PartResult("correctness", "Index function", GRADED, 0.0, 60.0, reason),
             PartResult("performance", "Performance", GRADED, 0.0, 40.0, reason)]
    lab = LabResult("02_coalescing", "Coalescing", 0, 0, parts, [], None,
                    {"ok": False, "errors": ["coalescing.cu(41): error: identifier \"idx\" "
                                             "is undefined"]}, {}, 3.0)
    lab_totals(lab)
    return lab


def grade(*labs, device=DEVICE, errors=()) -> GradeResult:
    result = GradeResult("submissions/alice", 1234, "2025-03-01T12:00:00Z", "0.1.0", device,
                         {"nvcc": "13.0", "compute-sanitizer": None}, list(labs),
                         errors=list(errors))
    grade_totals(result)
    return result


def fixtures() -> dict[str, GradeResult]:
    return {
        "graded": grade(graded_lab(), full_lab()),
        "no_gpu": grade(no_gpu_lab(), device=None),
        "compile_error": grade(compile_error_lab(), graded_lab()),
        "review": grade(_review_lab()),
        "empty": grade(errors=["no lab folders found"]),
    }


def _review_lab() -> LabResult:
    lab = full_lab()
    lab.parts[2] = PartResult("performance", "Performance", REVIEW, 0.0, 50.0,
                              "Your kernel measured 140x the baseline's speed, more than 10x "
                              "the reference's: flagged for review.")
    lab.timing["student_speedup"] = 140.0
    lab_totals(lab)
    return lab


class FixtureSanityTest(unittest.TestCase):
    def test_fixture_totals(self):
        f = fixtures()
        self.assertAlmostEqual(f["graded"].labs[0].points, 46.6667, places=4)
        self.assertEqual(f["graded"].labs[0].max_points, 100.0)
        self.assertEqual((f["no_gpu"].points, f["no_gpu"].max_points), (15.0, 100.0))
        self.assertEqual(f["compile_error"].labs[0].points, 0.0)


class ScoreItemsTest(unittest.TestCase):
    def test_items_add_up_to_the_lab(self):
        for name, result in fixtures().items():
            for lab in result.labs:
                with self.subTest(fixture=name, lab=lab.lab):
                    items = score_items(lab)
                    self.assertAlmostEqual(sum(i.points for i in items), lab.points, places=6)
                    self.assertAlmostEqual(sum(i.max_points for i in items), lab.max_points,
                                           places=6)

    def test_not_graded_parts_are_skipped_not_passed(self):
        items = score_items(no_gpu_lab())
        gpu = [i for i in items if "compile-time tile" in i.name]
        self.assertTrue(gpu)
        self.assertTrue(all(i.outcome == "skip" and i.points == 0 for i in gpu))
        group = next(i for i in gpu if i.max_points > 0)
        self.assertIn("no CUDA device", group.message)


class GradescopeTest(unittest.TestCase):
    def check_rules(self, doc: dict):
        self.assertLessEqual(set(doc), GRADESCOPE_TOP)
        self.assertAlmostEqual(doc["score"], sum(t.get("score", 0) for t in doc["tests"]),
                               places=6)
        self.assertIsInstance(doc["execution_time"], int)
        self.assertIsInstance(doc["output"], str)
        self.assertEqual(doc["output_format"], "text")  # the fixed-width table kept as is
        self.assertIn(doc["test_output_format"], GRADESCOPE_FORMATS)
        self.assertIn(doc["visibility"], GRADESCOPE_VISIBILITY)
        self.assertIn(doc["stdout_visibility"], GRADESCOPE_VISIBILITY)
        for t in doc["tests"]:
            self.assertLessEqual(set(t), GRADESCOPE_TEST)
            self.assertIn("name", t)
            if "status" in t:
                self.assertIn(t["status"], ("passed", "failed"))
            self.assertIn(t["visibility"], GRADESCOPE_VISIBILITY)
            self.assertEqual("score" in t, "max_score" in t)
            if "score" in t:
                self.assertLessEqual(t["score"], t["max_score"] + 1e-9)
                self.assertGreaterEqual(t["score"], 0)
        json.dumps(doc)  # serialisable

    def test_every_fixture_follows_the_rules(self):
        for name, result in fixtures().items():
            with self.subTest(fixture=name):
                self.check_rules(to_gradescope(result))

    def test_graded(self):
        result = fixtures()["graded"]
        doc = to_gradescope(result)
        self.assertAlmostEqual(doc["score"], result.points, places=3)
        hidden = [t for t in doc["tests"] if "not multiples of the tile" in t["name"]]
        self.assertEqual(len(hidden), 1)
        self.assertEqual(hidden[0]["visibility"], "after_published")
        self.assertEqual(hidden[0]["status"], "failed")
        self.assertIn("hint: guard the loads", hidden[0]["output"])
        passed = [t for t in doc["tests"] if t["status"] == "passed"]
        self.assertTrue(all(t["score"] == t["max_score"] for t in passed))
        self.assertEqual(doc["leaderboard"][0]["value"], 13.25)
        self.assertEqual(doc["execution_time"], 116)
        # No time per test in Gradescope's format: Catch2's goes in the test's extra_data.
        case = next(t for t in doc["tests"] if "64 x 64" in t["name"])
        self.assertEqual(case["extra_data"], {"seconds": 0.25})
        self.assertFalse(any("execution_time" in t for t in doc["tests"]))

    def test_no_gpu_parts_are_pending_not_failed(self):
        doc = to_gradescope(fixtures()["no_gpu"])
        self.assertEqual(doc["score"], 15.0)
        pending = [t for t in doc["tests"] if "[pending GPU grading]" in t["name"]]
        self.assertEqual(len(pending), 4)  # GPU group, its test, memory safety, speed
        for t in pending:  # neither passed nor failed, no points either way
            self.assertNotIn("status", t)
            self.assertNotIn("score", t)
            self.assertIn("Pending GPU grading", t["output"])
        self.assertTrue(any("no CUDA device" in t["output"] for t in pending))
        self.assertNotIn("leaderboard", doc)
        self.assertTrue(doc["output"].startswith("PROVISIONAL SCORE: 15 of the 25 points"))
        self.assertEqual(doc["extra_data"]["pending_gpu_points"], 75.0)
        self.assertTrue(doc["extra_data"]["provisional"])
        self.assertNotIn("PROVISIONAL", to_gradescope(fixtures()["graded"])["output"])

    def test_a_group_with_host_and_gpu_cases_keeps_its_host_points_without_a_gpu(self):
        # scoring's rule: its host cases earn their share, its GPU cases wait for a GPU; the
        # gradebook's score must be result.json's, and only the GPU share pending
        lab = no_gpu_lab()
        lab.parts[4] = mixed_tiled_group(2, 10.0, 3)
        lab_totals(lab)
        result = grade(lab, device=None)
        self.assertEqual(result.points, 25.0)
        doc = to_gradescope(result)
        self.assertEqual(doc["score"], result.points)
        self.assertEqual(doc["extra_data"]["pending_gpu_points"], 65.0)
        host = next(t for t in doc["tests"] if "(group, host cases)" in t["name"])
        self.assertEqual((host["score"], host["max_score"], host["status"]),
                         (10.0, 10.0, "passed"))
        gpu = next(t for t in doc["tests"] if "(group, GPU cases)" in t["name"])
        self.assertIn("[pending GPU grading]", gpu["name"])
        self.assertNotIn("score", gpu)
        items = score_items(lab)
        self.assertAlmostEqual(sum(i.points for i in items), lab.points)
        self.assertAlmostEqual(sum(i.max_points for i in items), lab.max_points)

    def test_output_never_names_hidden_tests(self):
        result = fixtures()["graded"]
        hidden = "Tiled kernel handles sizes that are not multiples of the tile"
        result.labs[0].parts[4].reason = f"2 of 3 test cases pass; failing: {hidden}"  # as graded
        doc = to_gradescope(result)
        self.assertNotIn("Tiled kernel handles sizes", doc["output"])
        row = next(t for t in doc["tests"] if hidden in t["name"])
        self.assertEqual(row["visibility"], "after_published")
        # A reason cut short in the table ("…") is still recognised.
        from grader.exports.gradescope import redact_hidden
        self.assertEqual(redact_hidden("failing: Tiled kernel handles si…", [hidden]),
                         "failing: a hidden test case…")

    def test_compile_error(self):
        doc = to_gradescope(fixtures()["compile_error"])
        build = next(t for t in doc["tests"] if t["name"] == "Lab 02 · Build")
        self.assertEqual(build["status"], "failed")
        self.assertIn("identifier \"idx\" is undefined", build["output"])

    def test_review_is_not_awarded(self):
        doc = to_gradescope(fixtures()["review"])
        perf = next(t for t in doc["tests"] if "Performance" in t["name"])
        self.assertEqual((perf["status"], perf["score"]), ("failed", 0.0))
        self.assertIn("flagged for review", perf["name"])


class PrairieLearnTest(unittest.TestCase):
    def test_every_fixture_follows_the_rules(self):
        for name, result in fixtures().items():
            with self.subTest(fixture=name):
                doc = to_prairielearn(result)
                json.dumps(doc)
                self.assertLessEqual(set(doc), PRAIRIELEARN_TOP)
                self.assertIsInstance(doc["gradable"], bool)
                if not doc["gradable"]:
                    self.assertTrue(doc["format_errors"])
                    self.assertTrue(all(isinstance(e, str) for e in doc["format_errors"]))
                self.assertGreaterEqual(doc["score"], 0.0)
                self.assertLessEqual(doc["score"], 1.0)
                for t in doc["tests"]:
                    self.assertLessEqual(set(t), PRAIRIELEARN_TEST)
                    for key in ("name", "points", "max_points", "message", "output"):
                        self.assertIn(key, t)
                    self.assertLessEqual(t["points"], t["max_points"] + 1e-9)
                total = sum(t["max_points"] for t in doc["tests"])
                if total:
                    self.assertAlmostEqual(
                        doc["score"], sum(t["points"] for t in doc["tests"]) / total, places=5)

    def test_scores(self):
        f = fixtures()
        self.assertAlmostEqual(to_prairielearn(f["no_gpu"])["score"], 0.15)
        self.assertAlmostEqual(to_prairielearn(f["graded"])["score"],
                               f["graded"].points / f["graded"].max_points, places=5)
        empty = to_prairielearn(f["empty"])
        self.assertFalse(empty["gradable"])
        self.assertEqual(empty["score"], 0.0)
        self.assertIn("no lab folders found", empty["output"])

    def test_hidden_cases_summarised_without_messages(self):
        doc = to_prairielearn(fixtures()["graded"])
        text = json.dumps(doc)
        self.assertNotIn("not multiples of the tile", text)
        self.assertNotIn("guard the loads", text)
        self.assertNotIn("never written", text)
        row = next(t for t in doc["tests"] if t["name"] == "Lab 04 · hidden test cases")
        self.assertEqual(row["message"], "0 of 1 hidden test cases pass.")
        self.assertEqual(row["points"], 0.0)

    def test_nothing_gradable(self):
        doc = to_prairielearn(grade(compile_error_lab()))
        self.assertFalse(doc["gradable"])
        self.assertIn("does not compile", doc["format_errors"][0])
        self.assertTrue(to_prairielearn(fixtures()["compile_error"])["gradable"])  # one lab built

    def test_not_graded_message(self):
        doc = to_prairielearn(fixtures()["no_gpu"])
        perf = next(t for t in doc["tests"] if t["name"].endswith("Performance"))
        self.assertEqual(perf["points"], 0.0)
        self.assertIn("no CUDA device", perf["message"])
        self.assertIn("No CUDA device", doc["message"])
        # the score PrairieLearn records is the host parts' only: said first
        self.assertTrue(doc["message"].startswith("PROVISIONAL SCORE (host parts only): "))
        graded = to_prairielearn(fixtures()["graded"])["message"]
        self.assertNotIn("PROVISIONAL", graded)


class JUnitTest(unittest.TestCase):
    def parse(self, result):
        text = to_junit(result)
        return text, ET.fromstring(text.encode("utf-8"))

    def test_parses_and_counts_match(self):
        for name, result in fixtures().items():
            with self.subTest(fixture=name):
                _text, root = self.parse(result)
                self.assertEqual(root.tag, "testsuites")
                totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
                for suite in root.findall("testsuite"):
                    cases = suite.findall("testcase")
                    counts = {"tests": len(cases),
                              "failures": sum(1 for c in cases if c.find("failure") is not None),
                              "errors": sum(1 for c in cases if c.find("error") is not None),
                              "skipped": sum(1 for c in cases if c.find("skipped") is not None)}
                    for key, value in counts.items():
                        self.assertEqual(int(suite.get(key)), value, (suite.get("name"), key))
                        totals[key] += value
                    for c in cases:  # at most one outcome element per case
                        self.assertLessEqual(sum(c.find(t) is not None
                                                 for t in ("failure", "error", "skipped")), 1)
                for key, value in totals.items():
                    if key != "skipped":  # not an attribute of <testsuites> (junit-10.xsd)
                        self.assertEqual(int(root.get(key)), value, key)
                self.assertIsNone(root.get("skipped"))

    def test_one_case_per_test_and_per_part(self):
        result = fixtures()["graded"]
        _text, root = self.parse(result)
        suite = root.findall("testsuite")[0]
        lab = result.labs[0]
        self.assertEqual(len(suite.findall("testcase")), len(lab.tests) + len(lab.parts))
        crashed = next(c for c in suite.iter("testcase") if c.get("name") ==
                       "Dynamic kernel matches the CPU")
        self.assertEqual(crashed.find("error").get("type"), "crashed")
        failed = next(c for c in suite.iter("testcase") if "not multiples" in c.get("name"))
        message = failed.find("failure").get("message")
        self.assertIn("& more", message)  # escaped in the file, intact when parsed
        self.assertNotIn("\x07", message)
        self.assertEqual(failed.get("classname"), "lab04.Tiled kernel, compile-time tile")

    def test_no_gpu_is_skipped(self):
        _text, root = self.parse(fixtures()["no_gpu"])
        skipped = [c for c in root.iter("testcase") if c.find("skipped") is not None]
        self.assertEqual(len(skipped), 4)
        gpu_case = next(c for c in skipped if c.get("classname") != "lab04.parts")
        self.assertEqual(gpu_case.find("skipped").get("message"), "needs a GPU")
        self.assertTrue(all("no CUDA device" in (c.find("skipped").get("message") + (
            c.find("skipped").text or "")) for c in skipped))

    def test_times_and_locations(self):
        result = fixtures()["no_gpu"]
        _text, root = self.parse(result)
        case = next(c for c in root.iter("testcase") if c.get("name").startswith("Tile chooser"))
        self.assertEqual(case.get("time"), "0.250")  # Catch2's duration
        self.assertIsNone(case.get("file"))  # not in junit-10.xsd: only on request
        result.labs[0].tests[1].messages = [
            "labs/04_tiled_matmul/tests/test_tile.cpp:31: REQUIRE( t == 16 ) with 32 == 16"]
        root = ET.fromstring(to_junit(result, locations=True))
        case = next(c for c in root.iter("testcase") if c.get("name").startswith("Tile chooser"))
        self.assertEqual((case.get("file"), case.get("line")),
                         ("labs/04_tiled_matmul/tests/test_tile.cpp", "31"))

    @unittest.skipUnless(shutil.which("xmllint"), "xmllint is not installed "
                         "(apt-get install libxml2-utils)")
    def test_valid_against_jenkins_junit_10_xsd(self):
        schema = DATA / "junit-10.xsd"
        for name, result in fixtures().items():
            with self.subTest(fixture=name), tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "junit.xml"
                path.write_text(to_junit(result), encoding="utf-8")
                out = subprocess.run(["xmllint", "--noout", "--schema", str(schema), str(path)],
                                     capture_output=True, text=True)
                self.assertEqual(out.returncode, 0, out.stderr)
        # The validator can fail: the attribute this export used to write is refused.
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "junit.xml"
            path.write_text(to_junit(fixtures()["no_gpu"]).replace(
                "<testsuites ", '<testsuites skipped="3" ', 1), encoding="utf-8")
            out = subprocess.run(["xmllint", "--noout", "--schema", str(schema), str(path)],
                                 capture_output=True, text=True)
            self.assertNotEqual(out.returncode, 0)

    def test_compile_error_fails_the_build_case(self):
        _text, root = self.parse(fixtures()["compile_error"])
        build = next(c for c in root.iter("testcase") if c.get("name") == "Build"
                     and c.get("classname") == "lab02.parts")
        self.assertIn("does not compile", build.find("failure").get("message"))

    def test_grader_errors_are_errors(self):
        _text, root = self.parse(fixtures()["empty"])
        self.assertEqual(root.get("errors"), "1")


class MarkdownTest(unittest.TestCase):
    def table_rows(self, text: str, header_start: str) -> list[list[str]]:
        lines = text.splitlines()
        out = []
        for i, line in enumerate(lines):
            if line.startswith(header_start):
                j = i + 2
                while j < len(lines) and lines[j].startswith("|"):
                    cells = [c.strip() for c in re.split(r"(?<!\\)\|", lines[j])[1:-1]]
                    out.append(cells)
                    j += 1
        return out

    def test_every_zero_has_a_reason(self):
        for name, result in fixtures().items():
            with self.subTest(fixture=name):
                text = to_markdown(result)
                labs = self.table_rows(text, "| Lab |")
                self.assertEqual(len(labs), len(result.labs))
                for row in labs:
                    self.assertEqual(len(row), 6, row)
                    if row[5].startswith("0 /"):
                        self.assertIn(" — ", row[5], row)
                        self.assertGreater(len(row[5].split(" — ", 1)[1]), 5)
                for row in self.table_rows(text, "| Part |"):
                    self.assertEqual(len(row), 4, row)
                    points, max_points = (float(x) for x in row[2].split(" / "))
                    if points < max_points or row[1] != "graded" or \
                            row[0].startswith("❌"):
                        self.assertTrue(row[3], row)

    def test_graded_content(self):
        text = to_markdown(fixtures()["graded"])
        self.assertIn("| 04 Tiled matrix multiplication | 5 passed, 2 failed | 7.41 ms | 13.25× | 0.94× |",
                      text)
        self.assertIn("<details>", text)
        self.assertIn("</details>", text)
        self.assertIn("sizes \\| edge", text)  # pipes escaped in cells
        self.assertIn("(hidden) — failed: C[63][2] = 0 &lt;never written&gt;", text)
        self.assertNotIn("\x07", text)
        self.assertIn("H100", text)

    def test_not_run_said_once(self):
        result = fixtures()["no_gpu"]
        result.labs[0].tests[2].messages = ["not run: no CUDA device"]
        text = to_markdown(result)
        self.assertIn("— not run: no CUDA device", text)
        self.assertNotIn("not run: not run", text)

    def test_no_gpu_says_so(self):
        text = to_markdown(fixtures()["no_gpu"])
        self.assertIn("No CUDA device", text)
        self.assertIn("1 passed, 1 failed, 1 need a GPU", text)
        self.assertIn("not graded", text)
        self.assertNotIn("✅ Tiled kernel, compile-time tile", text)

    def test_compile_error_shows_the_compiler(self):
        text = to_markdown(fixtures()["compile_error"])
        self.assertIn("```text", text)
        self.assertIn("does not compile", text)


# Texts as long as the rubrics' and the grader's own (lab 03's): a hint, a concept metric's
# lost points with its kernel's name whole, a sanitizer's report, a static check's violation.
LONG_TEXTS = {
    "chooser": "0 of 2 test cases pass; failing: Tile chooser respects the per-block limit, "
               "Tile chooser opts in above 48 KB. Hint: budget = min(per-block limit with "
               "opt-in, per_sm / blocks_per_sm - reserved); tile = largest multiple of 256 with "
               "(tile + 2*radius) floats in the budget.",
    "static": "shared_memory.cu calls cudaDeviceSynchronize inside "
              "lab03::(anonymous namespace)::launch_blur_shared(const float *, float *, int, "
              "int); the grader's allow-list (grader/allowlist.toml) names the calls a lab may "
              "make.",
}
GPU_TEXTS = {
    "blur": "Measured 0.94 in kernel lab03::blur_shared_kernel<float, kMaxRadius>; full points "
            "need a value of at most 0.2. The number compares the global loads your shared "
            "blur makes with the global-only baseline's: staging each input once in shared "
            "memory (the tile and its halo) brings it near 1/(2*radius+1). The handout's "
            "section \"5. A blur with a run-time tile\" shows how to fix it.",
    "race": "racecheck reported 2 errors: Error: Race reported between Write access at "
            "lab03::reverse_dynamic_kernel(int *, int)+0x3d0 and Read access at "
            "lab03::reverse_dynamic_kernel(int *, int)+0x2b0. Hint: __syncthreads() between "
            "the copy in and the copy out.",
    "review": "Flagged for review: your kernel's median time, 0.0021 ms, which is not possible "
              "on this GPU for 4194304 outputs of a radius-8 blur.",
    "reported": "Measured 17.06 in kernel lab03::blur_shared_kernel<float, kMaxRadius> "
                "(reported, not scored): shared-memory load instructions per global load "
                "request.",
}
UNMEASURED = ("Not measured: compute-sanitizer was not found on this machine (looked for it on "
              "PATH and in /usr/local/cuda/bin), so racecheck, memcheck and synccheck did not "
              "run.")
LONG_TITLE = "Shared memory, static and dynamic"  # "03 " and it is longer than 34 characters


def every_kind_lab(gpu: bool = True) -> LabResult:
    """Lab 03 with every kind of part, each with a long reason where it lost points: build,
    static checks, correctness groups, memory safety, performance (under review), a scored
    concept metric and a reported one; without a GPU its GPU parts wait for one."""
    waits = not gpu
    tests = [test("Arrays are aligned in one buffer", "Layout of several arrays in one buffer",
                  "host", PASSED, 10.0, 10.0),
             test("Tile chooser respects the per-block limit", "Run-time tile chooser", "host",
                  FAILED, 0.0, 5.0, messages=["REQUIRE( choose_tile(48) == 256 )"]),
             test("Tile chooser opts in above 48 KB", "Run-time tile chooser", "host", FAILED,
                  0.0, 5.0),
             test("Blur matches the CPU for radius 8", "Blur with a run-time tile", "gpu",
                  NOT_RUN if waits else PASSED, 0.0 if waits else 25.0, 25.0)]
    parts = [
        PartResult("build", "Build", GRADED, 0.0, 0.0, "", {"seconds": 41.2}),
        PartResult("static", "Static checks", GRADED, 0.0, 0.0, LONG_TEXTS["static"]),
        PartResult("correctness", "Layout of several arrays in one buffer", GRADED, 10.0, 10.0),
        PartResult("correctness", "Run-time tile chooser", GRADED, 0.0, 10.0,
                   LONG_TEXTS["chooser"]),
        PartResult("correctness", "Blur with a run-time tile", NOT_GRADED, 0.0, 25.0, NO_GPU)
        if waits else PartResult("correctness", "Blur with a run-time tile", GRADED, 25.0, 25.0),
        PartResult("memory_safety", "Memory safety", GRADED, 5.0, 10.0, GPU_TEXTS["race"]),
        PartResult("performance", "Performance", REVIEW, 0.0, 25.0, GPU_TEXTS["review"]),
        PartResult("metric", "Global load requests of your shared blur per global-only request "
                   "(about 1/(2*radius+1); at most 0.2)", GRADED, 0.0, 20.0, GPU_TEXTS["blur"]),
        PartResult("metric", "Shared-memory load instructions per global load request",
                   GRADED, 0.0, 0.0, GPU_TEXTS["reported"]),
    ]
    timing = {"student": {"candidate_ms": {"median": 0.412}}, "student_speedup": 140.0,
              "reference_speedup": 6.2}
    if waits:
        for part in parts[5:]:
            part.status, part.points = NOT_GRADED, 0.0
            part.reason = f"Not graded: no CUDA device, so this {part.kind} part was not run."
    lab = LabResult("03_shared_memory", LONG_TITLE, 0, 0, parts, tests, timing if gpu else None,
                    {"ok": True}, {}, 95.0)
    lab_totals(lab)
    return lab


def unmeasured_lab() -> LabResult:
    """A lab at full marks but for its memory safety, which could not be measured."""
    lab = full_lab()
    lab.parts.append(PartResult("memory_safety", "Memory safety", NOT_MEASURED, 0.0, 10.0,
                                UNMEASURED))
    leave_out_unmeasured(lab)
    lab_totals(lab)
    return lab


class TerminalTableTest(unittest.TestCase):
    def test_units_and_reasons(self):
        text = terminal_table(fixtures()["graded"], color=False)
        self.assertNotIn("\033[", text)
        self.assertIn("7.41 ms", text)
        self.assertIn("13.25x", text)
        self.assertIn("0.94x ref", text)
        self.assertIn("46.67/100 pts", text)
        # every part below full marks is listed with its reason
        for line in text.splitlines():
            if re.search(r"^\s+0/\d+ pts", line):
                self.assertRegex(line, r"pts  .+: \S")

    def test_wrong_timed_output_shows_no_speed(self):
        result = fixtures()["graded"]
        lab = result.labs[0]
        lab.timing.student.verification = Verification(
            checked=True, passed=False, message="C[0][0] was never written")
        text = terminal_table(result, color=False)
        self.assertNotIn("13.25x", text)
        self.assertIn("wrong", text)

    def test_no_gpu_and_compile_error(self):
        text = terminal_table(fixtures()["no_gpu"], color=False)
        self.assertIn("no CUDA device", text)
        self.assertIn("need a GPU: Tiled kernel, compile-time tile (25)", text)
        text = terminal_table(fixtures()["compile_error"], color=False)
        self.assertIn("does not compile", text)

    def test_points_waiting_for_a_gpu_need_no_explaining(self):
        # Issue 36, item 9: a bonus part is not "(0)"; the points that need a GPU are one
        # figure, rounded alike, on the lab's row and on the line that lists the parts.
        lab = no_gpu_lab()
        lab.parts[4] = mixed_tiled_group(7, 9.72, 11)
        lab.parts.append(PartResult("correctness", "Bonus: register-tiled kernel", NOT_GRADED,
                                    0.0, 0.0, NO_GPU, {"bonus": 4.0}))
        lab.parts.append(PartResult("performance", "Bonus speed", NOT_GRADED, 0.0, 0.0, NO_GPU,
                                    {"bonus": 6.0}))
        lab_totals(lab)
        text = terminal_table(grade(lab, device=None), color=False, width=300)
        self.assertIn("24.72/34.72 gradable here, 65.28 need a GPU", text)
        waiting = next(ln for ln in text.splitlines() if "need a GPU:" in ln)
        self.assertIn("65.28 pts  need a GPU: Tiled kernel, compile-time tile (15.28 of 25), "
                      "Memory safety (10), Performance (40), Bonus: register-tiled kernel "
                      "(+4 bonus), Bonus speed (+6 bonus)", waiting)
        self.assertNotIn("(0)", text)

    def test_reasons_wrap_to_the_terminal_never_cutting_a_word(self):
        # Issue 36, item 8: at 80 columns hints were cut mid-word ("Hint: naive: eac…").
        hint = ("naive: each output reads a row of A and a column of B; tiled: the same "
                "divided by the tile width, so count the loads of one phase first and "
                "multiply by the phases; a tile of 32 loads a 32x32 block of each matrix.")
        lab = no_gpu_lab()
        lab.parts[3].reason = ("0 of 1 test cases pass; failing: Tile chooser respects the "
                               f"shared-memory limit. Hint: {hint}")
        for color in (False, True):
            with mock.patch.dict(os.environ, {"COLUMNS": "80"}):
                text = terminal_table(grade(lab, device=None), color=color)
            plain = re.sub("\033\\[[0-9;]*m", "", text)
            self.assertIn(hint, " ".join(plain.split()))
            self.assertNotIn("…", plain)
            for line in plain.splitlines():
                self.assertLessEqual(len(line), 80, line)

    def test_the_table_fits_the_terminal_and_keeps_every_word(self):
        # Issue 36, item 8: the table was laid out for 120 columns; at 80 its header and rows
        # overflowed, and a lab's title was cut to its column.
        results = {"gpu": grade(every_kind_lab(), graded_lab(), unmeasured_lab()),
                   "no GPU": grade(every_kind_lab(gpu=False), no_gpu_lab(), device=None)}
        shown = {"gpu": ["2 passed, 2 failed", "0.412 ms", "140.00x", "22.58x ref",
                         "5 passed, 2 failed", "7.41 ms", "13.25x", "0.94x ref",
                         *GPU_TEXTS.values(), UNMEASURED],
                 "no GPU": ["1 passed, 2 failed, 1 need a GPU", "10/20 gradable here",
                            "1 passed, 1 failed, 1 need a GPU", "15/25 gradable here"]}
        for (name, result), columns, color in itertools.product(
                results.items(), (80, 120), (False, True)):
            with self.subTest(result=name, columns=columns, color=color):
                with mock.patch.dict(os.environ, {"COLUMNS": str(columns)}):
                    text = terminal_table(result, color=color)
                plain = re.sub("\033\\[[0-9;]*m", "", text)
                for line in plain.splitlines():
                    self.assertLessEqual(len(line), columns, line)
                self.assertNotIn("…", plain)
                words = " ".join(plain.split())
                for lab in result.labs + [result]:  # each lab's title and points, the total
                    self.assertIn(f"{fmt_points(lab.points)}/{fmt_points(lab.max_points)} pts",
                                  words)
                for lab in result.labs:
                    self.assertIn(f"{lab.lab[:2]} {lab.title}", words)
                for said in [*LONG_TEXTS.values(), *shown[name]]:
                    self.assertIn(" ".join(said.split()), words)

    def test_fixed_columns(self):
        text = terminal_table(fixtures()["graded"], color=False)
        lines = text.splitlines()
        header = lines[1]
        rows = [ln for ln in lines if ln[:3] in ("04 ", "02 ")]
        self.assertEqual(len(rows), 2)
        col = header.index("Points") + len("Points")
        for row in rows:
            self.assertEqual(row[col - 3:col], "pts", row)

    def test_colour_rules(self):
        result = fixtures()["graded"]
        self.assertIn("\033[", terminal_table(result, color=True))
        buf = io.StringIO()
        with redirect_stdout(buf):  # not a terminal
            self.assertNotIn("\033[", terminal_table(result))
        with mock.patch("sys.stdout.isatty", return_value=True):
            with mock.patch.dict(os.environ, {"NO_COLOR": "1"}):
                self.assertNotIn("\033[", terminal_table(result))
            with mock.patch.dict(os.environ, {}, clear=False):
                os.environ.pop("NO_COLOR", None)
                self.assertIn("\033[", terminal_table(result))


class SubmissionNameTest(unittest.TestCase):
    """Every text a student sees names the submission as the student knows it, never the
    folder it lay in on the grader's machine (issue 36, item 10)."""

    def texts(self, result) -> dict[str, str]:
        return {"table": terminal_table(result, color=False),
                "gradescope": json.dumps(to_gradescope(result)),
                "prairielearn": json.dumps(to_prairielearn(result)),
                "markdown": to_markdown(result), "html": to_html(result),
                "junit": to_junit(result)}

    def test_a_path_is_shown_as_its_name(self):
        for result in (grade(no_gpu_lab(), device=None), grade(graded_lab())):
            result.submission = "/tmp/subs/alice"
            result.errors = ["cannot read /tmp/subs/alice/labs/x.cu"]
            for name, text in self.texts(result).items():
                self.assertNotIn("/tmp/subs", text, name)
                self.assertIn("alice", text, name)
        self.assertIn("Grade for alice (seed 1234", to_gradescope(result)["output"])
        self.assertIn("cannot read alice/labs/x.cu", to_gradescope(result)["output"])
        self.assertIn("Submission `alice`", to_markdown(result))
        self.assertIn("Submission <code>alice</code>", to_html(result))

    def test_an_address_is_shown_as_given(self):
        result = grade(full_lab())
        for given in ("https://git.example.edu/cuda/alice-labs.git",
                      "git@git.example.edu:cuda/alice-labs.git"):
            result.submission = given
            self.assertIn(f"Grade for {given} (seed", terminal_table(result, color=False))


class WriteExportsTest(unittest.TestCase):
    def test_writes_each_format(self):
        result = fixtures()["graded"]
        with tempfile.TemporaryDirectory() as tmp:
            paths = write_exports(result, Path(tmp), ["gradescope", "prairielearn", "junit",
                                                      "markdown"])
            rel = sorted(str(p.relative_to(tmp)) for p in paths)
            self.assertEqual(rel, ["gradescope/results.json", "junit.xml",
                                   "prairielearn/results.json", "summary.md"])
            gs = json.loads((Path(tmp) / "gradescope" / "results.json").read_text())
            self.assertEqual(gs, json.loads(json.dumps(to_gradescope(result))))
            ET.parse(Path(tmp) / "junit.xml")

    def test_round_trip_through_result_json(self):
        result = fixtures()["no_gpu"]
        again = GradeResult.from_json(result.to_json())
        self.assertEqual(to_markdown(again), to_markdown(result))
        self.assertEqual(to_gradescope(again), to_gradescope(result))

    def test_unknown_format(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(ValueError):
                write_exports(fixtures()["graded"], Path(tmp), ["markdown", "html5"])
            self.assertEqual(list(Path(tmp).iterdir()), [])


if __name__ == "__main__":
    unittest.main()
