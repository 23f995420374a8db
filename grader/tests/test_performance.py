"""bench.performance() and parts.performance.performance_part() on bench documents of schema
cml-bench/2: the harness's verdicts on the scored comparison (whole-output verification,
launches per call, determinism, the host-time review flag) decide the speed part before any
speed is scored.

The fixtures in data/bench_v2/ are lab 04's bench as it ran on an H100 (verified.json,
reference.json), and the same document with one timed sample wrong (mismatch.json), work
escaping the timing events (review.json) and calls that launched no kernel (no_launch.json).
"""

from __future__ import annotations

import copy
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from grader.parts import performance as speed_part
from grader.measure import Context, bench, floor, samples, sanitizer, profiler
from grader.costs import Meter
from grader.benchdoc import BENCH_SCHEMA, parse_document, read_document
from grader.benchfields import BenchError
from grader.result import GRADED, NOT_MEASURED, REVIEW
from grader.parts.performance import Performance
from grader.sandbox import Outcome as sandbox_outcome
from grader.tests.test_gate import wait_at

DATA = Path(__file__).parent / "data" / "bench_v2"
GROUP = "Tiled kernel, compile-time tile"


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


class PerformanceTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.rubric = SimpleNamespace(tables={"performance": Performance(
            points=20, bench_args=["--n", "4096"], comparison="tiled", requires=[GROUP])})
        binaries = {"bench_student": Path("lab04_bench_student"),
                    "bench_solution": Path("lab04_bench_solution")}
        self.ctx = Context(run_dir=Path(self.tmp.name), env={}, identity=None, seed=7,
                           timeout=60, binary=binaries.get)

    def grade(self, student: dict, reference: dict | None = None, groups=(GROUP,)):
        docs = {"lab04_bench_student": student,
                "lab04_bench_solution": reference or load("reference.json")}
        # The documents go through the same reader as a real run's --json file.
        for name, doc in docs.items():
            parse_document(json.dumps(doc), name)

        def fake_run(binary, args, ctx, trusted, runner=None):
            self.assertEqual(trusted, binary.name == "lab04_bench_solution")
            self.runs.append((binary.name, runner))
            name = "lab04_bench_student" if binary.name == "lab04_bench_checker" else binary.name
            return read_document(copy.deepcopy(docs[name])), None, None

        perf = self.rubric.tables["performance"]
        self.runs: list[tuple[str, Path | None]] = []
        with mock.patch.object(bench, "run_bench", fake_run):
            runs = bench.performance(perf.comparison, perf.bench_args, self.ctx)
        return speed_part.performance_part(perf, runs, set(groups)), runs.timing

    def test_the_students_bench_runs_as_checker_and_runner(self):
        # Where the lab runs as checker and runner, the student's bench is the bench checker
        # (inputs, clock, verification and document in the grader's process) with the
        # student's object in the runner; else the bench linked with the student's object.
        self.grade(load("verified.json"))
        self.assertIn(("lab04_bench_student", None), self.runs)
        binaries = {"bench_student": Path("lab04_bench_student"),
                    "bench_checker": Path("lab04_bench_checker"),
                    "bench_solution": Path("lab04_bench_solution")}
        self.ctx.binary, self.ctx.remote = binaries.get, Path("lab04_runner")
        part, _ = self.grade(load("verified.json"))
        self.assertIn(("lab04_bench_checker", Path("lab04_runner")), self.runs)
        self.assertNotIn("lab04_bench_student", [name for name, _ in self.runs])
        self.assertEqual(part.points, 20)

    def test_times_the_runner_could_not_vouch_for_are_said_so(self):
        # The runner's clock fell short of the grader's observation: the document's times are
        # the observations (the harness put them there), scored, and the reason says so.
        doc = load("verified.json")
        doc["comparisons"][0]["candidate"]["remote"] = {
            "empty_ms": 0.5, "gap_ms": 4.0, "agreed": False, "runner_complete": True,
            "rule": "", "observed_ms": None, "runner_ms": None}
        part, _ = self.grade(doc)
        self.assertEqual((part.status, part.points), (GRADED, 20))
        self.assertIn("the grader's own observation of each call", part.reason)
        self.assertIn("fell short", part.reason)
        doc["comparisons"][0]["candidate"]["remote"]["agreed"] = True
        part, _ = self.grade(doc)
        self.assertEqual(part.reason, "")

    def test_all_verified_is_scored(self):
        part, timing = self.grade(load("verified.json"))
        self.assertEqual(part.status, GRADED)
        self.assertEqual(part.points, 20)  # the same speedup as the reference: full points
        self.assertEqual(part.reason, "")
        student = timing.student
        self.assertTrue(student.verification.passed)
        self.assertEqual(student.verification.samples_verified,
                         student.verification.samples_total)
        self.assertEqual(student.launches.min, 1)
        self.assertFalse(student.review.flagged)
        self.assertTrue(student.determinism.identical)

    def test_one_sample_mismatched_scores_zero_and_says_where(self):
        part, timing = self.grade(load("mismatch.json"))
        self.assertEqual((part.status, part.points), (GRADED, 0.0))
        self.assertIn("correctness comes first", part.reason)
        for text in ("timed pair 6 (sample 6)", "C[17][4000]", "got 0", "expected 21.5312538",
                     "1 of 16777216 elements"):
            self.assertIn(text, part.reason)
        failure = timing.student.verification.first_failure
        self.assertEqual((failure.pair, failure.sample, failure.index), (6, 6, 73632))

    def test_message_rebuilt_from_the_failure_record(self):
        doc = load("mismatch.json")
        doc["comparisons"][0]["candidate"]["verification"]["message"] = ""
        part, _ = self.grade(doc)
        self.assertEqual(part.points, 0.0)
        self.assertIn("timed pair 6 (sample 6)", part.reason)
        self.assertIn("C[17][4000] = 0, expected 21.5312538", part.reason)

    def test_review_flag_earns_nothing_until_reviewed(self):
        part, timing = self.grade(load("review.json"))
        self.assertEqual((part.status, part.points), (REVIEW, 0.0))
        self.assertIn("Flagged for review", part.reason)
        self.assertIn("escaped the timing events", part.reason)
        self.assertIn("0.0712 ms", part.reason)
        self.assertTrue(timing.student.review.flagged)

    def test_zero_launches_scores_zero(self):
        part, _ = self.grade(load("no_launch.json"))
        self.assertEqual((part.status, part.points), (GRADED, 0.0))
        self.assertIn("your code launched no kernel", part.reason)

    def test_some_calls_without_a_launch_score_zero(self):
        doc = load("verified.json")
        doc["comparisons"][0]["candidate"]["launches"].update(min=0, max=2, median=1)
        part, _ = self.grade(doc)
        self.assertEqual(part.points, 0.0)
        self.assertIn("no kernel in some timed calls", part.reason)

    def test_uncounted_launches_are_no_verdict(self):
        doc = load("verified.json")
        doc["comparisons"][0]["candidate"]["launches"] = {
            "counted": False, "min": None, "max": None, "median": None, "calls": 13}
        part, _ = self.grade(doc)
        self.assertEqual(part.points, 20)

    def test_required_determinism_failure_scores_zero(self):
        doc = load("verified.json")
        doc["comparisons"][0]["determinism"].update(
            required=True, identical=False,
            message="timed pair 2 (sample 2): 5 of 16777216 elements of C changed when the "
                    "candidate ran again on the same inputs")
        part, _ = self.grade(doc)
        self.assertEqual(part.points, 0.0)
        self.assertIn("not deterministic", part.reason)
        self.assertIn("timed pair 2", part.reason)
        # Reported only (a fair kernel may sum in another order): no effect on the score.
        doc["comparisons"][0]["determinism"]["required"] = False
        self.assertEqual(self.grade(doc)[0].points, 20)

    def test_baseline_wrong_beside_the_student_scores_zero(self):
        doc = load("verified.json")
        v = doc["comparisons"][0]["baseline"]["verification"]
        v.update(passed=False, message="timed pair 0: 3 of 16777216 elements of C are NaN or "
                                       "unwritten in the trusted result")
        part, _ = self.grade(doc)
        self.assertEqual(part.points, 0.0)
        self.assertIn("baseline's output was wrong", part.reason)

    def test_wrong_output_comes_before_the_groups_and_the_review(self):
        doc = load("mismatch.json")
        doc["comparisons"][0]["review"] = load("review.json")["comparisons"][0]["review"]
        part, _ = self.grade(doc, groups=())
        self.assertEqual(part.status, GRADED)
        self.assertIn("C[17][4000]", part.reason)

    def test_reference_that_fails_its_own_checks_is_not_measured(self):
        ref = load("review.json")
        ref["variant"] = "solution"
        part, _ = self.grade(load("verified.json"), reference=ref)
        self.assertEqual(part.status, NOT_MEASURED)
        self.assertIn("reference's own timing", part.reason)
        ref = load("mismatch.json")
        part, _ = self.grade(load("verified.json"), reference=ref)
        self.assertEqual(part.status, NOT_MEASURED)
        self.assertIn("the reference's timed kernel was wrong", part.reason)

    def test_a_rewritten_speedup_is_flagged_and_not_believed(self):
        # A static destructor that rewrote the document's median speedup after the harness
        # wrote it: the samples still say 1.54x.
        doc = load("verified.json")
        doc["comparisons"][0]["speedup"]["median"] = 15.4
        part, timing = self.grade(doc)
        self.assertEqual((part.status, part.points), (REVIEW, 0.0))
        self.assertIn("the bench document's figures disagree with its own samples: it was "
                      "altered; not believed", part.reason)
        self.assertIn("speedup median is 15.4, its samples give 1.5425539", part.reason)
        self.assertEqual(len(part.details["disagreements"]), 1)
        self.assertAlmostEqual(timing.student_speedup, 1.54255396, places=7)

    def test_an_altered_document_comes_before_its_own_verdicts(self):
        doc = load("mismatch.json")
        doc["comparisons"][0]["candidate"]["ms"]["samples"][0] = 1.0
        part, _ = self.grade(doc, groups=())
        self.assertEqual(part.status, REVIEW)
        self.assertIn("not believed", part.reason)

    def test_scoring_uses_the_recomputed_speedup(self):
        # Summaries nudged within the printed precision are believed, and the score is made
        # from the samples: the same points as the exact document.
        doc = load("verified.json")
        doc["comparisons"][0]["speedup"]["median"] *= 1 + 5e-7
        part, timing = self.grade(doc)
        self.assertEqual((part.status, part.points), (GRADED, 20))
        comp = doc["comparisons"][0]
        ratios = samples.pair_ratios(comp["baseline"]["ms"]["samples"],
                                      comp["candidate"]["ms"]["samples"])
        self.assertEqual(timing.student_speedup, samples.sample_stats(ratios).median)
        self.assertNotEqual(timing.student_speedup, doc["comparisons"][0]["speedup"]["median"])

    def test_a_reference_that_disagrees_with_itself_is_not_measured(self):
        ref = load("reference.json")
        ref["comparisons"][0]["speedup"]["median"] = 3.0
        part, _ = self.grade(load("verified.json"), reference=ref)
        self.assertEqual(part.status, NOT_MEASURED)
        self.assertIn("a grader problem", part.reason)

    def with_limits(self, doc: dict, fp32_gflops: float = 60000.0) -> dict:
        doc["limits"] = {"copy_gbytes_per_s": 3000.0, "fp32_gflops": fp32_gflops,
                         "copy_method": "copy kernel", "fp32_method": "FMA chains"}
        return doc

    def impossibly_fast(self) -> dict:
        """verified.json with every candidate time an eighth: 1.89 ms for 137 GFLOP (72
        TFLOP/s), 12.3x the baseline's speed (the reference's 1.54x is not 10x below it)."""
        doc = load("verified.json")
        comp = doc["comparisons"][0]
        comp["candidate"]["ms"]["samples"] = [x / 8 for x in comp["candidate"]["ms"]["samples"]]
        fresh, _ = samples.recompute(read_document(doc))  # consistent with those samples
        doc["comparisons"][0] = fresh.comparisons[0].to_dict()
        return doc

    def test_a_time_below_the_physical_floor_is_flagged(self):
        part, _ = self.grade(self.with_limits(self.impossibly_fast()),
                             reference=self.with_limits(load("reference.json")))
        self.assertEqual((part.status, part.points), (REVIEW, 0.0))
        self.assertIn("1.89 ms is below the 2.29 ms the GPU needs to do 137 GFLOP at its "
                      "measured FP32 rate of 60.0 TFLOP/s", part.reason)
        self.assertTrue(part.details["floor"]["checked"])
        self.assertAlmostEqual(part.details["student_speedup"], 8 * 1.54255396, places=5)

    def test_without_limits_the_floor_is_not_checked(self):
        part, _ = self.grade(self.impossibly_fast())  # an older bench: no limits
        self.assertEqual((part.status, part.points), (GRADED, 20))
        self.assertEqual(part.details["floor"], {"checked": False,
                                                 "why": "the bench reported no measured limits"})
        part, _ = self.grade(load("verified.json"))
        self.assertEqual(part.points, 20)
        self.assertFalse(part.details["floor"]["checked"])

    def test_a_fair_time_above_the_floor_is_scored(self):
        part, _ = self.grade(self.with_limits(load("verified.json")),
                             reference=self.with_limits(load("reference.json")))
        self.assertEqual((part.status, part.points), (GRADED, 20))
        self.assertTrue(part.details["floor"]["checked"])
        self.assertAlmostEqual(part.details["floor"]["floor_ms"], 2.2906492, places=6)

    def test_the_rubric_sets_the_floor_margin(self):
        perf = self.rubric.tables["performance"]
        perf.floor_margin = 1.25  # 1.89 ms is above 2.29 ms / 1.25
        part, _ = self.grade(self.with_limits(self.impossibly_fast()),
                             reference=self.with_limits(load("reference.json")))
        self.assertEqual((part.status, part.points), (GRADED, 20))

    def test_the_speed_of_light_is_kept_beside_the_score(self):
        # 137 GFLOP in the student's and the reference's 15.1 ms: 9.07 TFLOP/s, 15 % of 60.
        part, _ = self.grade(self.with_limits(load("verified.json")),
                             reference=self.with_limits(load("reference.json")))
        self.assertEqual((part.status, part.points), (GRADED, 20))
        sol = floor.SpeedOfLight.from_dict(part.details["speed_of_light"])
        self.assertEqual((sol.bound, sol.limit, sol.limits_from), ("flop", 60000.0, "reference"))
        self.assertAlmostEqual(sol.student_rate, 9072.8841, places=3)
        self.assertAlmostEqual(sol.reference_fraction, 9072.8841 / 60000.0, places=7)
        self.assertEqual(sol.text(), "Speed of light: your kernel does 9.07 TFLOP/s, 15 % of "
                                     "this GPU's measured FP32 peak (60.0 TFLOP/s); the "
                                     "reference 15 %.")
        # Correctness groups short of full marks: no points, the verified timing still shown.
        part, _ = self.grade(self.with_limits(load("verified.json")),
                             reference=self.with_limits(load("reference.json")), groups=())
        self.assertEqual(part.points, 0.0)
        self.assertIn("speed_of_light", part.details)
        # Below the floor: flagged, and the fraction above the limit says why.
        part, _ = self.grade(self.with_limits(self.impossibly_fast()),
                             reference=self.with_limits(load("reference.json")))
        self.assertEqual(part.status, REVIEW)
        self.assertGreater(part.details["speed_of_light"]["student_fraction"], 1.1)

    def student_copy(self, student: dict | None, solutions: bool = False,
                     problem: bench.BenchProblem | None = None):
        """The student's bench alone, as in a student copy: no bench_solution binary. With
        `student` None, the bench gave no document, for `problem`."""
        ctx = Context(run_dir=Path(self.tmp.name), env={}, identity=None, seed=7,
                      timeout=60, binary={"bench_student": Path("s")}.get,
                      has_reference=solutions)
        calls = []

        def fake_run(binary, args, ctx, trusted, runner=None):
            calls.append(trusted)
            if student is None:
                return None, problem, None
            return read_document(copy.deepcopy(student)), None, None

        perf = self.rubric.tables["performance"]
        with mock.patch.object(bench, "run_bench", fake_run):
            runs = bench.performance(perf.comparison, perf.bench_args, ctx)
        return speed_part.performance_part(perf, runs, {GROUP}), calls

    def test_a_student_copy_times_the_students_bench_alone(self):
        part, calls = self.student_copy(self.with_limits(load("verified.json")))
        self.assertEqual(calls, [False])  # only the student's bench, untrusted
        self.assertEqual((part.status, part.points), (NOT_MEASURED, 0.0))
        self.assertIn("no reference solution", part.reason)
        self.assertRegex(part.reason, r"your kernel ran \d+\.\d\dx the baseline's speed")
        self.assertGreater(part.details["student_speedup"], 1.0)
        sol = floor.SpeedOfLight.from_dict(part.details["speed_of_light"])
        self.assertEqual((sol.limits_from, sol.reference_fraction), ("student", None))
        # a wrong timed output is said, and no figure is kept
        wrong = self.with_limits(load("verified.json"))
        wrong["comparisons"][0]["candidate"]["verification"]["passed"] = False
        part, _ = self.student_copy(wrong)
        self.assertNotIn("speed_of_light", part.details)
        # a document that disagrees with its own samples is not believed here either
        altered = self.with_limits(load("verified.json"))
        altered["comparisons"][0]["speedup"]["median"] = 15.4
        part, _ = self.student_copy(altered)
        self.assertEqual(part.details, {})
        self.assertIn("Your timed run:", part.reason)
        # a document written twice is not believed, and is not called an unfinished run
        part, _ = self.student_copy(None, problem=bench.BenchProblem(
            bench.Unread.ALTERED, bench.BENCH_ALTERED))
        self.assertIn("Your bench's result was not believed: its document was altered",
                      part.reason)
        self.assertNotIn("did not finish", part.reason)
        # where solutions/ exists, a missing reference bench is the grader's problem
        part, calls = self.student_copy(load("verified.json"), solutions=True)
        self.assertEqual((calls, part.reason), ([], "Not measured: the bench was not built."))

    def test_no_speed_of_light_where_the_timing_is_not_believed(self):
        altered = self.with_limits(load("verified.json"))
        altered["comparisons"][0]["speedup"]["median"] = 15.4
        cases = {"an altered document": altered,
                 "a wrong timed output": self.with_limits(load("mismatch.json")),
                 "no kernel launched": self.with_limits(load("no_launch.json")),
                 "the host-time review flag": self.with_limits(load("review.json")),
                 "no limits measured": load("verified.json")}
        for what, doc in cases.items():
            with self.subTest(what):
                reference = load("reference.json")
                if what != "no limits measured":
                    reference = self.with_limits(reference)
                part, _ = self.grade(doc, reference=reference)
                self.assertEqual(part.points, 0.0 if what != "no limits measured" else 20)
                self.assertNotIn("speed_of_light", part.details)

    def test_old_schema_is_refused(self):
        doc = load("verified.json")
        doc["schema"] = "cml-bench/1"
        with self.assertRaises(BenchError):
            parse_document(json.dumps(doc))


class FixtureShapeTest(unittest.TestCase):
    """The fields the grader and the reports read are where the README says they are."""

    def test_v2_fields(self):
        doc = load("verified.json")
        self.assertEqual(doc["schema"], BENCH_SCHEMA)
        self.assertTrue(doc["launch_counting"])
        self.assertIsInstance(doc["input_nonce"], int)
        for key in ("inputs", "poison", "verification", "host_check", "nvtx"):
            self.assertIn(key, doc["protocol"])
        self.assertEqual(doc["protocol"]["nvtx"]["candidate"], "cml:candidate")
        self.assertEqual(doc["protocol"]["nvtx"]["baseline"], "cml:baseline")
        for comp in doc["comparisons"]:
            for side in ("baseline", "candidate"):
                s = comp[side]
                for key in ("ms", "host_ms", "host_margin_ms", "verification", "launches"):
                    self.assertIn(key, s)
                for key in ("checked", "passed", "message", "samples_total", "samples_verified",
                            "first_failure", "against", "rule"):
                    self.assertIn(key, s["verification"])
            for key in ("determinism", "review", "refused_pairs", "warmup_pairs"):
                self.assertIn(key, comp)
        for case in doc["cases"]:
            for key in ("ms", "verification", "launches", "review", "gbytes_per_s"):
                self.assertIn(key, case)


class GpuSectionTest(unittest.TestCase):
    """The measurement stage runs each GPU measurement inside Options.gpu_section; the
    bench's own program starts in bench_start and runs, let go from its gate, in bench."""

    def test_every_gpu_measurement_runs_inside_its_section(self):
        import contextlib

        from grader.result import LabResult
        from grader.measure.metric_rules import Metric
        from grader.parts.memory_safety import MemorySafety
        from grader.stages import lab as stage
        from grader.stages.tests import RunPlace, TestRuns
        from grader.catch2.testrun import Case, CaseRun

        log: list[str] = []

        @contextlib.contextmanager
        def section(name):
            log.append(f"enter {name}")
            yield
            log.append(f"leave {name}")

        def measured(name, value):
            def fake(*_args):
                log.append(name)
                return value
            return fake

        def run_bench(binary, args, ctx, trusted, runner=None, gate=None):
            if gate is not None:
                wait_at(gate)
            log.append(f"bench {binary.name}")
            outcome = sandbox_outcome([str(binary)], 1, False, 0.0, "")
            return None, bench.BenchProblem(bench.Unread.FAILED, "test"), outcome

        rubric = SimpleNamespace(tables={
            "memory_safety": MemorySafety(points=10, tests="[s]", tools=["memcheck"]),
            "performance": Performance(points=20, bench_args=[], comparison="tiled",
                                       requires=[]),
            "metrics": [Metric(name="m", metric="x.sum", points=0)], "stretch": None,
            "correctness": []})
        job = SimpleNamespace(
            rubric=rubric, seed=7, test_timeout=60, has_gpu=True, gpu_section=section,
            why_no_gpu="",
            costs=Meter(), say=lambda text: None, lab=SimpleNamespace(folder="04_tiled_matmul",
                                                    solution_dir=Path("/")),
            trees=SimpleNamespace(run_env={}, identity=None))
        place = RunPlace(Path("/run"), None, {"bench_solution": Path("reference"),
                                              "bench_student": Path("student")})
        case = Case("small", ("lab04", "gpu", "s"))
        tested = TestRuns([case], {"small": CaseRun("small", case.tags, "passed")})
        lab = LabResult("04_tiled_matmul", "Tiled", 0.0, 30.0)
        unmeasured = "Not measured: test."
        with mock.patch.object(sanitizer, "memory_safety", measured(
                "sanitizer", sanitizer.SanitizerRuns(unmeasured=unmeasured))), \
                mock.patch.object(bench, "run_bench", run_bench), \
                mock.patch.object(profiler, "metric", measured(
                    "profiler", profiler.MetricRun(unmeasured=unmeasured))):
            stage.score_parts(job, place, tested, lab)
        self.assertEqual(list(job.costs.record()),
                         ["sanitizer", "bench_start", "bench", "profiler"])
        self.assertEqual(log, ["enter sanitizer", "sanitizer", "leave sanitizer",
                               "enter bench_start", "leave bench_start",
                               "enter bench", "bench reference", "bench student",
                               "leave bench", "enter profiler", "profiler", "leave profiler"])
        self.assertEqual([p.kind for p in lab.parts], ["memory_safety", "performance", "metric"])


# A bench: --json OUT ... writes DOC (a file beside it) to OUT; HOW "twice" writes it again
# with a made-up speedup (a destructor rewriting the document), "mistyped" writes it once with
# a field no harness writes so (a verdict as a word), "honest" once as it is.
FAKE_BENCH = """\
#!{python}
import sys
out = sys.argv[sys.argv.index("--json") + 1]
doc = open({doc!r}).read()
if {how!r} == "mistyped":
    doc = doc.replace('"passed": true', '"passed": "yes"')
with open(out, "w") as f:
    f.write(doc)
if {how!r} == "twice":
    with open(out, "w") as f:
        f.write(doc.replace('"median"', '"median": 99.0, "was"'))
"""


class AlteredBenchDocumentTest(unittest.TestCase):
    def test_only_one_document_is_believed(self):
        doc = json.dumps(load("verified.json"))
        self.assertEqual(bench.bench_document_problem(doc + "\n"), "")
        for text in (doc + doc, doc + " x", doc[:-1] + ', "speedup": {"median": 9}}x', "[1"):
            self.assertEqual(bench.bench_document_problem(text), bench.BENCH_ALTERED)

    def run_fake(self, how: str) -> bench.BenchRuns:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            docs = {"lab04_bench_student": load("verified.json"),
                    "lab04_bench_solution": load("reference.json")}
            binaries = {}
            for name, doc in docs.items():
                (tmp / f"{name}.json").write_text(json.dumps(doc))
                binary = tmp / name
                binary.write_text(FAKE_BENCH.format(
                    python=sys.executable, doc=str(tmp / f"{name}.json"),
                    how=how if name == "lab04_bench_student" else "honest"))
                binary.chmod(0o755)
                binaries[name.replace("lab04_", "")] = binary
            run_dir = tmp / "run"
            run_dir.mkdir()
            ctx = Context(run_dir=run_dir, env=dict(os.environ), identity=None,
                          seed=7, timeout=60, binary=binaries.get)
            perf = Performance(points=20, bench_args=["--n", "4096"], comparison="tiled",
                               requires=[])
            runs = bench.performance(perf.comparison, perf.bench_args, ctx)
            self.assertEqual(list(run_dir.iterdir()), [])
        return runs

    def test_an_honest_document_is_scored(self):
        runs = self.run_fake("honest")
        self.assertEqual(runs.failed, "")
        self.assertFalse(runs.altered)
        self.assertIsNotNone(runs.timing.student_speedup)

    def test_a_document_written_twice_scores_nothing_and_is_flagged(self):
        runs = self.run_fake("twice")
        self.assertIn(bench.BENCH_ALTERED, runs.altered)
        part = speed_part.performance_part(Performance(points=20, bench_args=[],
                                                           requires=[], comparison="tiled"),
                                               runs, set())
        self.assertEqual(part.points, 0.0)
        self.assertEqual(part.status, "review")

    def test_a_document_the_harness_cannot_have_written_is_flagged(self):
        runs = self.run_fake("mistyped")
        self.assertIn("passed", runs.altered)
        part = speed_part.performance_part(Performance(points=20, bench_args=[],
                                                           requires=[], comparison="tiled"),
                                               runs, set())
        self.assertEqual(part.points, 0.0)
        self.assertEqual(part.status, "review")


if __name__ == "__main__":
    unittest.main()
