"""Profiler metrics: the ncu command, what a profiled call's kernels add up to, and the points,
on ncu logs in fixtures/metrics/ (no GPU, no ncu: the profiling run is simulated)."""

import csv
import io
import re
import tempfile
import unittest
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from unittest import mock

from grader import sandbox, scoring
from grader.parts import metric as metrics_part
from grader.measure import Context, metric_rules, ncu_csv, profiler
from grader.paths import ROOT, LabPaths
from grader.result import GRADED, NOT_MEASURED, REVIEW
from grader.rubric import RubricError, load_rubric, parse_rubric

# A student's copy (grader release) has no fixtures made from the solutions: there every test
# of this module, and of test_profiler_pass (which reads its logs), is skipped with this
# reason (load_tests), never raised at import, which `python3 -m unittest MODULE` reports as
# an error.
NO_FIXTURES = ("" if (Path(__file__).parent / "lab_fixtures.py").is_file() else
               "the lab fixtures are not in this copy of the grader")
LAB06 = LabPaths("06_bank_conflicts", "06", "bank_conflicts", ROOT)
if not NO_FIXTURES:
    from grader.tests.lab_fixtures import FIXTURES_ROOT, LabFixtures
    DATA = FIXTURES_ROOT / "metrics"
    LAB06_VARIANTS = LabFixtures("06_bank_conflicts", "bank_conflicts")
    LAB06_VARIANTS.dir = DATA  # the padded transposes written other ways
else:
    DATA = Path(__file__).parent / "fixtures" / "metrics"  # not in the copy


def load_tests(loader: unittest.TestLoader, tests: unittest.TestSuite,
               pattern: str | None) -> unittest.TestSuite:
    """The module's tests; in a copy without the fixtures, one test that is skipped and
    says why."""
    if not NO_FIXTURES:
        return tests

    class Fixtures(unittest.TestCase):
        def test_fixtures(self):
            self.skipTest(NO_FIXTURES)

    return unittest.TestSuite([Fixtures("test_fixtures")])


def lab06_metric(start: str):
    return next(m for m in load_rubric(LAB06).tables["metrics"] if m.name.startswith(start))


LOADS = "Shared-memory wavefronts per load instruction, padded"
STORES = "Shared-memory wavefronts per store instruction, padded"
LOADS_POINTS = lab06_metric(LOADS).points  # what the rubric gives the column reads
GROUPS = {g.name for g in load_rubric(LAB06).tables["correctness"]}  # every group at full marks


def included(cmd: list[str]) -> str:
    """The NVTX ranges a profiling command includes, e.g. "cml:candidate/"."""
    return " ".join(cmd[i + 1] for i, a in enumerate(cmd) if a == "--nvtx-include")


STACK_HEADER = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def with_ranges(parts: dict[str, str]) -> str:
    """One ncu log of a run that profiled both calls, as ncu (with --nvtx) writes it: the
    launches of each part ("candidate" -> its log text) with the push/pop range column that
    says which call's range they ran in. A part without a table (no kernels) adds none; its
    ==ERROR== / ==WARNING== lines are kept, but "No kernels were profiled" only where no part
    has a table."""
    messages, header, rows = [], None, []
    for call, text in parts.items():
        lines = text.splitlines()
        messages += [ln for ln in lines if ln.startswith("==")]
        table = [ln for ln in lines if ln.startswith('"')]
        if not table:
            continue
        found = list(csv.reader(table))
        if header is None:
            header = found[0] + [STACK_HEADER]
            rows.append(found[1] + [""])  # the units row
        for row in found[2:]:
            rows.append(row + [f'1 "<default domain>:cml:{call}:none:none:none:none:none:none"'])
    if header is None:
        return "\n".join(messages) + "\n"
    # ncu warns that no kernel was profiled only when the run profiled none at all.
    messages = [m for m in messages if "No kernels were profiled" not in m]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([header] + rows)
    return "\n".join(messages) + "\n" + out.getvalue()


class FakeNcu:
    """Stands in for sandbox.run: writes the log the profiling run would have written and
    returns the outcome. `logs`: the log of each call's launches alone ("cml:candidate/",
    "cml:baseline/"; "" for the tests). A run that includes both calls' ranges (the lab's one
    pass) gets them merged with the range column a current ncu writes (`ranges=False`: an
    ncu without that column, which then needs one run per call); a log given for
    "cml:candidate/ cml:baseline/" is used as it is. No log: none written. A run of the bench
    itself (the reference's, without ncu) exits with `bench_returncode`."""

    def __init__(self, logs: dict, returncode: int = 0, output: str = "",
                 bench_returncode: int = 0, ranges: bool = True):
        self.logs, self.returncode, self.output = logs, returncode, output
        self.bench_returncode = bench_returncode
        self.ranges = ranges
        self.commands: list[list[str]] = []

    def __call__(self, cmd, **_kw):
        self.commands.append(cmd)
        if "--log-file" not in cmd:
            return sandbox.Outcome(cmd, self.bench_returncode, False, 0.5, "")
        key = included(cmd)
        text = self.logs.get(key)
        if text is None and key == "cml:candidate/ cml:baseline/" and self.ranges:
            parts = {call: self.logs[f"cml:{call}/"] for call in ("candidate", "baseline")
                     if f"cml:{call}/" in self.logs}
            text = with_ranges(parts) if parts else None
        if text is not None:
            Path(cmd[cmd.index("--log-file") + 1]).write_text(text)
        return sandbox.Outcome(cmd, self.returncode, False, 0.5, self.output)


def log(name: str) -> str:
    return (DATA / name).read_text()


@contextmanager
def profiled(fake: FakeNcu, ncu: str | None = "/opt/ncu/ncu") -> Iterator[profiler.Context]:
    """A measurement context whose ncu (found at `ncu`) runs are `fake`'s."""
    with tempfile.TemporaryDirectory() as tmp, \
            mock.patch.object(profiler, "find_tool", return_value=ncu), \
            mock.patch.object(profiler.sandbox, "run", fake):
        yield Context(run_dir=Path(tmp), env={}, identity=None, seed=7, timeout=60,
                      binary=lambda kind: Path(f"/grade/bin/lab_{kind}"))


class MetricRun(unittest.TestCase):
    def measure(self, metric, fake: FakeNcu, groups=GROUPS, ncu="/opt/ncu/ncu"):
        with profiled(fake, ncu) as ctx:
            return metrics_part.metric_part(metric, profiler.metric(metric, ctx), set(groups))


class NcuCommandTest(unittest.TestCase):
    def test_the_candidate_call_is_profiled_by_its_nvtx_range(self):
        m = lab06_metric(LOADS)
        cmd = profiler.ncu_command("ncu", m, Path("/b/bench"), 7, Path("/r/ncu-1.csv"))
        self.assertEqual(cmd, [
            "ncu", "--nvtx", "--nvtx-include", "cml:candidate/", "--nvtx-exclude",
            "cml:baseline/", "--metrics", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,"
            "smsp__inst_executed_op_shared_ld.sum", "--csv", "--page", "raw",
            "--print-units", "base", "--log-file", "/r/ncu-1.csv", "/b/bench", "--n", "1024",
            "--quick", "--probe-iterations", "16", "--only", "padded_vs_conflicted", "--seed", "7"])
        self.assertNotIn("-k", cmd)  # no kernel names anywhere

    def test_the_baseline_call_swaps_the_ranges(self):
        cmd = profiler.ncu_command("ncu", lab06_metric(LOADS), Path("/b"), 7, Path("/l"),
                                       "baseline")
        self.assertEqual(cmd[1], "--nvtx")
        self.assertEqual(set(zip(cmd[2:6:2], cmd[3:6:2])),
                         {("--nvtx-include", "cml:baseline/"),
                          ("--nvtx-exclude", "cml:candidate/")})

    def test_tests_target_profiles_every_kernel_and_averages_get_durations(self):
        m = load_rubric(LabPaths("01_warp_sizing", "01", "warp_sizing", ROOT)).tables["metrics"][0]
        cmd = profiler.ncu_command("ncu", m, Path("/b/tests"), 7, Path("/l"))
        self.assertNotIn("--nvtx", cmd)
        self.assertEqual(cmd[cmd.index("--metrics") + 1],
                         "smsp__thread_inst_executed_per_inst_executed.ratio,"
                         "gpu__time_duration.sum")
        self.assertEqual(cmd[-3:], ["[lab01][measure]", "--rng-seed", "7"])


class MetricPartTest(MetricRun):
    def test_every_kernel_of_the_call_counts_whatever_its_name(self):
        # The padded transpose split into two kernels that both do the work (top and bottom
        # half): each is judged, the worse decides, and the points stay.
        fake = FakeNcu({"cml:candidate/": log("ncu_two_kernels.csv")})
        m = lab06_metric(LOADS)
        part = self.measure(m, fake)
        rows = ncu_csv.parse_ncu_log(log("ncu_two_kernels.csv")).rows
        halves = {}
        for name in ("transpose_top_half", "transpose_bottom_half"):
            mine = [r for r in rows if name in r["Kernel Name"]]
            halves[name] = (sum(ncu_csv._row_value(r, m.metric) or 0.0 for r in mine)
                            / sum(ncu_csv._row_value(r, m.per) or 0.0 for r in mine))
        self.assertEqual(part.details["kernels"], 8)  # 2 kernels x 4 calls
        self.assertAlmostEqual(part.details["value"], max(halves.values()))
        self.assertAlmostEqual(part.details["value"], 1.0107, places=4)
        self.assertIn("transpose_bottom_half", part.details["decided_by"])
        self.assertEqual([(k["launches"], k["share"], k["significant"])
                          for k in part.details["by_kernel"]], [(4, 0.5, True), (4, 0.5, True)])
        self.assertEqual((part.status, part.points, part.max_points),
                         (GRADED, LOADS_POINTS, LOADS_POINTS))
        self.assertEqual(part.reason, "")
        self.assertEqual(len(fake.commands), 1)

    def test_a_call_that_launched_no_kernel_scores_zero(self):
        fake = FakeNcu({"cml:candidate/": log("ncu_no_kernels.log"),
                        "cml:baseline/": log("ncu_baseline_naive.csv")})
        part = self.measure(lab06_metric(LOADS), fake)
        self.assertEqual((part.status, part.points, part.max_points), (GRADED, 0.0, LOADS_POINTS))
        self.assertIn("Your code launched no kernel in the timed call", part.reason)
        self.assertIsNone(part.details["value"])
        # One run of both ranges, nothing excluded: the baseline's launches in it tell this
        # from a bench that marks no call (a range left open by the student's code cannot
        # hide the baseline).
        self.assertEqual([included(c) for c in fake.commands], ["cml:candidate/ cml:baseline/"])
        self.assertNotIn("--nvtx-exclude", fake.commands[0])

    def test_an_ncu_without_the_range_column_gets_a_run_per_call(self):
        fake = FakeNcu({"cml:candidate/": log("ncu_no_kernels.log"),
                        "cml:candidate/ cml:baseline/": log("ncu_baseline_naive.csv")},
                       ranges=False)
        part = self.measure(lab06_metric(LOADS), fake)
        self.assertIn("Your code launched no kernel in the timed call", part.reason)
        self.assertEqual([included(c) for c in fake.commands],
                         ["cml:candidate/ cml:baseline/", "cml:candidate/"])
        self.assertIn("--nvtx-exclude", fake.commands[1])

    def test_launches_inside_both_ranges_belong_to_neither_call(self):
        # A range pushed inside the student's call cannot pass its kernels off as the
        # baseline's (nor the other way round): a launch under both ranges counts for none.
        rows = [{"ID": "0", ncu_csv.NVTX_STACK_COLUMN + ":PL_Type": '1 "<default domain>:'
                 'cml:candidate:none:none:none:none:none:none" "<default domain>:cml:baseline:'
                 'none:none:none:none:none:none"'},
                {"ID": "1", ncu_csv.NVTX_STACK_COLUMN + ":PL_Type": '1 "<default domain>:'
                 'cml:candidate:none:none:none:none:none:none"'},
                {"ID": "2", ncu_csv.NVTX_STACK_COLUMN + ":PL_Type": '1 "<default domain>:'
                 'cml:baseline_x:none:none:none:none:none:none"'}]
        self.assertEqual([r["ID"] for r in ncu_csv.rows_of_call(rows, "candidate")], ["1"])
        self.assertEqual(ncu_csv.rows_of_call(rows, "baseline"), [])
        self.assertEqual(len(ncu_csv.rows_of_call(rows, "any")), 3)
        self.assertIsNone(ncu_csv.rows_of_call([{"ID": "0"}], "candidate"))

    def test_a_bench_that_marks_no_call_is_not_the_students_loss(self):
        fake = FakeNcu({"cml:candidate/": log("ncu_no_kernels.log"),
                        "cml:candidate/ cml:baseline/": log("ncu_no_kernels.log")})
        part = self.measure(lab06_metric(LOADS), fake)
        self.assertEqual(part.status, NOT_MEASURED)
        self.assertIn("grader problem", part.reason)

    def test_arguments_the_bench_does_not_know_are_not_the_students_loss(self):
        usage = "unknown option: only\nusage: lab06 bench [--n N (default 8192)]\n"
        fake = FakeNcu({"cml:candidate/": log("ncu_no_kernels.log")}, returncode=2,
                       output=usage, bench_returncode=2)
        part = self.measure(lab06_metric(LOADS), fake)
        self.assertEqual(part.status, NOT_MEASURED)
        self.assertIn("does not accept the rubric's arguments", part.reason)
        self.assertEqual(fake.commands[1][0], "/grade/bin/lab_bench_solution")
        # The reference accepts them: the student's program stopped by itself.
        fake = FakeNcu({"cml:candidate/": log("ncu_no_kernels.log")}, returncode=2,
                       output=usage, bench_returncode=0)
        part = self.measure(lab06_metric(LOADS), fake)
        self.assertEqual((part.status, part.points), (GRADED, 0.0))
        self.assertIn("exit status 2", part.reason)

    def test_refused_counters_are_not_measured(self):
        fake = FakeNcu({"cml:candidate/": log("ncu_refused.log")}, returncode=1)
        part = self.measure(lab06_metric(LOADS), fake)
        self.assertEqual((part.status, part.points, part.max_points),
                         (NOT_MEASURED, 0.0, LOADS_POINTS))
        self.assertIn("ERR_NVGPUCTRPERM", part.reason)

    def test_no_ncu_is_not_measured(self):
        part = self.measure(lab06_metric(LOADS), FakeNcu({}), ncu=None)
        self.assertEqual(part.status, NOT_MEASURED)
        self.assertIn("not installed", part.reason)

    def test_the_students_output_cannot_fake_a_refusal(self):
        fake = FakeNcu({"cml:candidate/": log("ncu_unpadded.csv")},
                       output="==ERROR== ERR_NVGPUCTRPERM - permission denied\n")
        part = self.measure(lab06_metric(LOADS), fake)
        self.assertEqual((part.status, part.points), (GRADED, 0.0))
        self.assertIn("Measured 32", part.reason)

    def test_a_table_the_program_wrote_into_the_log_is_not_believed(self):
        # The program inherits the descriptor ncu logs to. Its own table ahead of ncu's (a
        # clean value in an extra column, so that ncu's rows would not fit the header) makes
        # two tables: no points, flagged, whatever the rows say.
        real = with_ranges({"candidate": log("ncu_unpadded.csv"),
                            "baseline": log("ncu_baseline_naive.csv")})
        forged = ncu_log([*SHARED_LD, "forged"], ["", "inst", ""],
                         [("transpose_padded_kernel", REQUESTS, REQUESTS, 1)])
        fake = FakeNcu({"cml:candidate/ cml:baseline/": forged + real})
        part = self.measure(lab06_metric(LOADS), fake)
        self.assertEqual((part.status, part.points), (GRADED, 0.0))
        self.assertIn("flagged for review", part.reason)
        self.assertIn("2 tables", part.reason)
        # ncu's own log alone is read as before: the unpadded transpose's 32.
        alone = self.measure(lab06_metric(LOADS), FakeNcu({"cml:candidate/ cml:baseline/": real}))
        self.assertIn("Measured 32", alone.reason)

    def test_a_lost_point_explains_itself_in_the_students_terms(self):
        # Issue 36, item 14: the unpadded tile's 32 names the bank conflict, the padding that
        # fixes it and the handout's section, and the kernel by its whole name.
        real = with_ranges({"candidate": log("ncu_unpadded.csv"),
                            "baseline": log("ncu_baseline_naive.csv")})
        metric = lab06_metric(LOADS)
        part = self.measure(metric, FakeNcu({"cml:candidate/ cml:baseline/": real}))
        self.assertEqual((part.status, part.points), (GRADED, 0.0))
        self.assertTrue(part.reason.startswith("Measured 32 in kernel transpose_padded_kernel;"
                                               " full points need a value of at most 1.1. "),
                        part.reason)
        for words in ("bank conflict", "kTile + 1",
                      'section "4. Write: the transpose through a shared tile"'):
            self.assertIn(words, part.reason)
        self.assertTrue(part.reason.endswith(metrics_part.metric_explanation(metric)),
                        part.reason)
        # full points, or points held back by a correctness group, say nothing of it
        kept = self.measure(metric, FakeNcu({"cml:candidate/": log("ncu_textbook_padded.csv")}))
        self.assertEqual(kept.reason, "")
        gated = self.measure(metric, FakeNcu({"cml:candidate/": log("ncu_unpadded.csv")}),
                             groups=GROUPS - {"Padded tile transpose"})
        self.assertNotIn("bank conflict", gated.reason)

    def test_points_wait_for_the_required_groups(self):
        part = self.measure(lab06_metric(LOADS),
                            FakeNcu({"cml:candidate/": log("ncu_textbook_padded.csv")}),
                            groups=GROUPS - {"Padded tile transpose"})
        self.assertEqual((part.status, part.points, part.max_points), (GRADED, 0.0, LOADS_POINTS))
        self.assertIn("Measured 1.01", part.reason)
        self.assertIn("need full marks first in: Padded tile transpose", part.reason)

    def test_nothing_for_the_metric_to_judge_scores_zero(self):
        fake = FakeNcu({"cml:candidate/": log("ncu_no_shared.csv")})
        part = self.measure(lab06_metric(LOADS), fake)
        self.assertEqual((part.status, part.points), (GRADED, 0.0))
        self.assertIn("No shared-memory load was measured", part.reason)

    def test_a_program_that_fails_under_the_profiler_scores_zero(self):
        partial = log("ncu_textbook_padded.csv").replace(
            "==PROF== Disconnected", "==ERROR== The application returned an error code (1).\n"
            "==PROF== Disconnected")
        part = self.measure(lab06_metric(LOADS), FakeNcu({"cml:candidate/": partial},
                                                         returncode=1))
        self.assertEqual((part.status, part.points), (GRADED, 0.0))
        self.assertIn("did not run to the end under the profiler (exit status 1", part.reason)

    def test_a_metric_this_gpu_does_not_know_is_not_measured(self):
        text = "==ERROR== Failed to find metric l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld\n"
        part = self.measure(lab06_metric(LOADS), FakeNcu({"cml:candidate/": text}, returncode=1))
        self.assertEqual(part.status, NOT_MEASURED)
        self.assertIn("cannot measure", part.reason)

    def test_ratio_to_the_baseline_reads_both_calls_from_one_run(self):
        lab04 = load_rubric(LabPaths("04_tiled_matmul", "04", "tiled_matmul", ROOT))
        metric = lab04.tables["metrics"][0]
        self.assertTrue(metric.per_baseline)

        def requests(kernel: str, value: str) -> str:
            return ('"ID","Kernel Name","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"\n'
                    '"","",""\n' + "".join(f'"{i}","{kernel}","{value}"\n' for i in range(4)))
        fake = FakeNcu({"cml:candidate/": requests("void tiled_kernel<32>(...)", "65,536"),
                        "cml:baseline/": requests("naive_kernel(...)", "2,097,152")})
        part = self.measure(metric, fake, groups={g.name for g in lab04.tables["correctness"]})
        self.assertAlmostEqual(part.details["value"], 1 / 32)
        self.assertEqual(part.details["baseline_value"], 4 * 2097152)
        self.assertEqual(len(fake.commands), 1)  # both calls from one profiler run
        # 1/32 is inside the rubric's range: full points, and no reason to give
        self.assertEqual((part.points, part.reason), (metric.points, ""))

    def test_an_average_is_weighted_by_each_launchs_time(self):
        lab07 = load_rubric(LabPaths("07_occupancy", "07", "occupancy", ROOT))
        metric = lab07.tables["metrics"][0]
        text = ('"ID","Kernel Name","gpu__time_duration.sum",'
                '"sm__warps_active.avg.pct_of_peak_sustained_active"\n"","","nsecond","%"\n'
                '"0","chase_tuned_kernel","1,000,000","80"\n"1","setup(int)","10,000","65"\n'
                '"2","chase_tuned_kernel","500,000","60"\n')
        part = self.measure(metric, FakeNcu({"cml:candidate/": text}),
                            groups={g.name for g in lab07.tables["correctness"]})
        # The chase's two launches weighted by their time; the setup kernel (0.7% of the
        # time) does not decide.
        self.assertAlmostEqual(part.details["value"], (80e6 + 30e6) / 1.5e6)
        self.assertEqual(part.details["decided_by"], "chase_tuned_kernel")
        self.assertEqual(part.points, metric.points)
        self.assertEqual(part.details["outliers"], [])


def ncu_log(columns: list[str], units: list[str], launches: list[tuple], calls: int = 4) -> str:
    """An ncu raw page of a profiled call made `calls` times: each call launches the
    kernels of `launches` ((kernel name, value of each column), in order)."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerows([["ID", "Kernel Name", *columns], ["", "", *units]])
    for i in range(calls):
        for j, (kernel, *values) in enumerate(launches):
            writer.writerow([str(i * len(launches) + j), kernel,
                             *(f"{v:,}" if isinstance(v, int) else str(v) for v in values)])
    return out.getvalue()


LAB02 = LabPaths("02_coalescing", "02", "coalescing", ROOT)
LAB07 = LabPaths("07_occupancy", "07", "occupancy", ROOT)
SECTORS = ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
           "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
OCCUPANCY = ["gpu__time_duration.sum", "sm__warps_active.avg.pct_of_peak_sustained_active"]
SHARED_LD = ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
             "smsp__inst_executed_op_shared_ld.sum"]
REQUESTS = 32768  # shared load instructions of one 1024 x 1024 transpose (32 x 8 threads)


class KernelsOfTheCallTest(MetricRun):
    """A metric follows the kernels that do the work: each kernel of the call is judged and
    the worst that carries a tenth of the work decides, so a kernel added beside the work
    never improves it (the three seen on an H100), while work split over two kernels keeps
    its points. The old reading, one value over all the call's kernels together, is shown
    passing each trick."""

    def lab(self, paths: LabPaths, prefix: str):
        rubric = load_rubric(paths)
        return (next(m for m in rubric.tables["metrics"] if m.name.startswith(prefix)),
                {g.name for g in rubric.tables["correctness"]})

    def run_call(self, metric, groups, columns, units, launches):
        text = ncu_log(columns, units, launches)
        rows = ncu_csv.parse_ncu_log(text).rows
        together = ncu_csv.ncu_aggregate(rows, metric.metric)
        if metric.per:
            together /= ncu_csv.ncu_aggregate(rows, metric.per)
        return self.measure(metric, FakeNcu({"cml:candidate/": text}), groups), together

    def inside(self, metric, value: float) -> bool:
        return ((metric.expect_min is None or value >= metric.expect_min)
                and (metric.expect_max is None or value <= metric.expect_max))

    def test_lab06_a_conflict_free_dummy_beside_a_conflicted_transpose(self):
        metric, groups = lab06_metric(LOADS), GROUPS
        conflicted = ("(anonymous namespace)::transpose_conflicted(const float *, float *, "
                      "int, int)", 32 * REQUESTS, REQUESTS)
        for times in (2, 400):  # the dummy's shared loads per transpose load
            dummy = ("warm_banks(float *, int)", times * REQUESTS, times * REQUESTS)
            with self.subTest(dummy_loads=times):
                part, together = self.run_call(metric, groups, SHARED_LD, ["", "inst"],
                                               [conflicted, dummy])
                self.assertEqual(part.points, 0.0)
                if times == 2:  # a third of the work: the transpose decides
                    self.assertEqual(part.status, GRADED)
                    self.assertEqual(part.details["value"], 32.0)
                    self.assertIn("Measured 32 in kernel transpose_conflicted, the worst of the "
                                  "2 that carry at least 10% of the call's work; full points "
                                  "need a value of at most 1.1.", part.reason)
                else:  # thinned out to 0.25% of the loads: it cannot pass unseen
                    self.assertTrue(self.inside(metric, together), together)  # the old reading
                    self.assertEqual(part.status, REVIEW)
                    self.assertIn("kernel transpose_conflicted measured 32 with 0.2% of the "
                                  "call's work, outside the range", part.reason)
                    self.assertEqual(part.details["outliers"][0]["value"], 32.0)

    def test_lab06_the_lower_bound_is_judged_by_the_smallest_kernel(self):
        metric = lab06_metric("Shared load instructions per global store instruction")
        columns = ["smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_global_st.sum"]
        part, together = self.run_call(metric, GROUPS, columns, ["inst", "inst"], [
            ("transpose_padded(const float *, float *, int, int)", REQUESTS, REQUESTS),
            ("copy_without_shared(const float *, float *, int)", 0, REQUESTS)])
        self.assertEqual((part.status, part.points), (GRADED, 0.0))
        self.assertEqual(part.details["value"], 0.0)
        self.assertEqual(part.details["decided_by"], "copy_without_shared(const float *, "
                                                     "float *, int)")

    def test_lab02_a_coalesced_dummy_beside_a_strided_kernel(self):
        metric, groups = self.lab(LAB02, "Sectors per load request, your coalesced")
        strided = ("copy_rows_strided(const float *, float *, int, int)", 32 * 65536, 65536)
        for times in (3, 100):
            dummy = ("touch(const float *, float *, int)", 4 * times * 65536, times * 65536)
            with self.subTest(dummy_requests=times):
                part, together = self.run_call(metric, groups, SECTORS, ["sector", "request"],
                                               [strided, dummy])
                self.assertEqual(part.points, 0.0)
                if times == 3:
                    self.assertEqual((part.status, part.details["value"]), (GRADED, 32.0))
                    self.assertIn("copy_rows_strided", part.details["decided_by"])
                else:
                    self.assertTrue(self.inside(metric, together), together)
                    self.assertEqual(part.status, REVIEW)
                    self.assertIn("kernel copy_rows_strided measured 32", part.reason)

    def test_lab07_an_occupancy_filler_beside_an_untuned_chase(self):
        metric, groups = self.lab(LAB07, "Achieved occupancy of your tuned chase")
        chase = ("chase_kernel(const unsigned int *, unsigned int *, int, int)", 1000000, 25.0)
        for times in (2, 20):  # the filler's time per chase time
            filler = ("fill_sms(int)", times * 1000000, 99.0)
            with self.subTest(filler_time=times):
                part, together = self.run_call(metric, groups, OCCUPANCY, ["nsecond", "%"],
                                               [chase, filler])
                self.assertTrue(self.inside(metric, together), together)
                self.assertEqual(part.points, 0.0)
                if times == 2:
                    self.assertEqual((part.status, part.details["value"]), (GRADED, 25.0))
                    self.assertIn("Measured 25 in kernel chase_kernel", part.reason)
                else:
                    self.assertEqual(part.status, REVIEW)
                    self.assertIn("kernel chase_kernel measured 25 with 4.8% of the call's work",
                                  part.reason)

    def test_fair_work_split_over_two_kernels_keeps_its_points(self):
        lab02, groups02 = self.lab(LAB02, "Sectors per load request, your coalesced")
        lab07, groups07 = self.lab(LAB07, "Achieved occupancy of your tuned chase")
        cases = [
            (lab02, groups02, SECTORS, ["sector", "request"],
             [("copy_rows(const float *, float *, int, int)", 4 * 40000, 40000),
              ("copy_tail_rows(const float *, float *, int, int)", 4 * 25536, 25536)], 4.0),
            (lab07, groups07, OCCUPANCY, ["nsecond", "%"],
             [("chase_first_half(const unsigned int *, unsigned int *, int)", 600000, 71.5),
              ("chase_second_half(const unsigned int *, unsigned int *, int)", 500000, 74.0)],
             71.5),
            (lab06_metric(STORES), GROUPS,
             ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
              "smsp__inst_executed_op_shared_st.sum"], ["", "inst"],
             [("transpose_top_half(const float *, float *, int, int)", 16384, 16384),
              ("transpose_bottom_half(const float *, float *, int, int)", 16390, 16384)],
             16390 / 16384)]
        for metric, groups, columns, units, launches, value in cases:
            with self.subTest(metric=metric.name):
                part, _ = self.run_call(metric, groups, columns, units, launches)
                self.assertEqual((part.status, part.points), (GRADED, metric.points))
                self.assertAlmostEqual(part.details["value"], value)
                self.assertTrue(all(k["significant"] for k in part.details["by_kernel"]))

    def test_a_small_helper_kernel_does_not_decide_and_is_seen_by_a_person(self):
        metric, groups = self.lab(LAB07, "Achieved occupancy of your tuned chase")
        chase = ("chase_tuned(const unsigned int *, unsigned int *, int)", 1000000, 80.0)
        for helper, status in ((("reset_counters(int)", 8000, 70.0), GRADED),
                               (("reset_counters(int)", 8000, 12.0), REVIEW)):
            with self.subTest(helper_occupancy=helper[2]):
                part, _ = self.run_call(metric, groups, OCCUPANCY, ["nsecond", "%"],
                                        [chase, helper])
                self.assertEqual(part.details["value"], 80.0)
                self.assertEqual(part.status, status)
                self.assertEqual(part.points, metric.points if status == GRADED else 0.0)

    def test_a_reported_metric_or_a_total_is_the_whole_call(self):
        metric = lab06_metric("Shared-memory wavefronts per load instruction, conflicted")
        self.assertIsNone(metric.expect_max)
        rows = ncu_csv.parse_ncu_log(ncu_log(SHARED_LD, ["", "inst"], [
            ("a(int)", 32 * REQUESTS, REQUESTS), ("b(int)", REQUESTS, REQUESTS)])).rows
        details: dict = {}
        self.assertEqual(metric_rules.judge_kernels(rows, metric, 16.5, details=details), 16.5)
        self.assertIsNone(details["decided_by"])
        self.assertEqual([k["value"] for k in details["by_kernel"]], [32.0, 1.0])

    def test_more_kernels_than_the_rubric_allows_earn_nothing(self):
        metric, groups = self.lab(LAB02, "Sectors per load request, your coalesced")
        metric.max_kernels = 1
        launches = [("copy_rows(const float *, float *, int, int)", 4 * 40000, 40000),
                    ("copy_tail_rows(const float *, float *, int, int)", 4 * 25536, 25536)]
        part, _ = self.run_call(metric, groups, SECTORS, ["sector", "request"], launches)
        self.assertEqual((part.status, part.points), (GRADED, 0.0))
        self.assertEqual(part.reason, "Your code launched 2 different kernels in the profiled "
                         "call (copy_rows, copy_tail_rows); this metric allows at most 1, so "
                         "it earns nothing.")
        metric.max_kernels = 2
        part, _ = self.run_call(metric, groups, SECTORS, ["sector", "request"], launches)
        self.assertEqual(part.points, metric.points)

    def test_kernel_labels(self):
        self.assertEqual(metric_rules.kernel_label(
            "(anonymous namespace)::transpose_padded(const float *, float *, int, int)"),
            "transpose_padded")
        self.assertEqual(metric_rules.kernel_label("void tiled_kernel<32>(const float *, int)"),
                         "tiled_kernel<32>")
        self.assertEqual(metric_rules.kernel_label("chase"), "chase")

    def test_kernel_labels_are_whole(self):
        """ncu's "<unnamed>::" is the anonymous namespace too, and a name keeps what comes
        before its parameter list whole: template arguments with parentheses in them, its
        namespace (issue 36, item 14)."""
        for name, label in (
                ("void <unnamed>::transpose_padded_kernel(const float *, float *, int, int)",
                 "transpose_padded_kernel"),
                ("void lab06::<unnamed>::transpose_padded_kernel(const float *, float *, int, "
                 "int)", "lab06::transpose_padded_kernel"),
                ("lab06::(anonymous namespace)::transpose_padded_kernel(const float *, float *, "
                 "int, int)", "lab06::transpose_padded_kernel"),
                ("void tiled_kernel<(int)32>(const float *, const float *, float *, int)",
                 "tiled_kernel<(int)32>"),
                ("void apply<<unnamed>::Scale>(void (*)(float), float *)", "apply<Scale>"),
                ("void chase_tuned_kernel<256, 8>(const unsigned int *, unsigned long *)",
                 "chase_tuned_kernel<256, 8>")):
            with self.subTest(name=name):
                self.assertEqual(metric_rules.kernel_label(name), label)


class Lab06ThresholdsTest(MetricRun):
    """The padded transpose written three fair ways keeps the points; the unpadded tile and
    a transpose without shared memory do not (values as measured on the grading H100)."""

    def scored(self):
        return [m for m in load_rubric(LAB06).tables["metrics"] if m.points > 0]

    def test_fair_variants_pass_and_wrong_ones_fail(self):
        recipes = LAB06_VARIANTS.recipes()
        checked = 0
        for name, recipe in recipes.items():
            if not (DATA / f"ncu_{name}.csv").is_file():
                continue
            for metric in self.scored():
                with self.subTest(variant=name, metric=metric.name):
                    fake = FakeNcu({"cml:candidate/": log(f"ncu_{name}.csv")})
                    part = self.measure(metric, fake)
                    if any(metric.name.startswith(s) for s in recipe["must_pass"]):
                        self.assertEqual(part.points, metric.points, part.reason)
                        checked += 1
                    if any(metric.name.startswith(s) for s in recipe["must_fail"]):
                        self.assertEqual(part.points, 0.0, part.reason)
                        checked += 1
        self.assertGreaterEqual(checked, 10)

    def test_the_seen_counts_in_wavefronts_per_request(self):
        value = {}
        for name in ("textbook_padded", "xor_swizzle", "unpadded"):
            value[name] = self.measure(lab06_metric(LOADS), FakeNcu(
                {"cml:candidate/": log(f"ncu_{name}.csv")})).details["value"]
        # 331.5 and 2.25 excess wavefronts per launch of 32,768 requests; 31 per request.
        self.assertAlmostEqual(value["textbook_padded"], 1 + 331.5 / 32768)
        self.assertAlmostEqual(value["xor_swizzle"], 1 + 2.25 / 32768)
        self.assertEqual(value["unpadded"], 32.0)

    def test_scored_metrics_are_ratios_with_room_for_noise(self):
        for metric in self.scored():
            with self.subTest(metric=metric.name):
                self.assertIsNotNone(metric.per)
                self.assertEqual(metric.requires, ["Padded tile transpose"])
                self.assertIn("--only", metric.args)  # the padded comparison alone
                if metric.expect_max is not None:
                    self.assertGreaterEqual(metric.expect_max, 1.05)

    def test_the_variants_are_made_from_the_solution(self):
        solution = LAB06_VARIANTS.solution.read_text()
        for name in LAB06_VARIANTS.recipes():
            with self.subTest(variant=name):
                text = LAB06_VARIANTS.student_text(name)
                self.assertEqual(text == solution, name == "reference")
        self.assertIn("tile[r][threadIdx.x ^ r]", LAB06_VARIANTS.student_text("xor_swizzle"))
        self.assertIn("TILE_DIM + 1", LAB06_VARIANTS.student_text("textbook_padded"))


class MetricRubricTest(unittest.TestCase):
    BASE = """\
student_files = ["labs/04_tiled_matmul/tiled_matmul.cu"]
[lab]
title = "T"
[[correctness]]
name = "Kernel"
tests = "[lab04][tiled]"
points = 50
[[correctness]]
name = "Model"
tests = "[lab04][model]"
points = 40
[performance]
points = 5
comparison = "tiled"
requires = ["Kernel"]
[[metrics]]
name = "m"
metric = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
expect_max = 1
points = 5
"""
    LAB = LabPaths("04_tiled_matmul", "04", "tiled_matmul", ROOT)

    def parse(self, extra: str = ""):
        return parse_rubric(self.LAB, self.BASE + extra)

    def rejects(self, extra: str, fragment: str):
        with self.assertRaises(RubricError) as ctx:
            self.parse(extra)
        self.assertIn(fragment, str(ctx.exception))

    def test_requires_defaults_to_what_speed_requires(self):
        m = self.parse().tables["metrics"][0]
        self.assertEqual((m.call, m.per_baseline, m.requires), ("candidate", False, ["Kernel"]))
        self.assertEqual(self.parse('requires = ["Model"]\n').tables["metrics"][0].requires, ["Model"])
        self.assertEqual(self.parse("requires = []\n").tables["metrics"][0].requires, [])

    def test_calls_and_ratios_are_checked(self):
        self.rejects('kernel_regex = "tiled_kernel"\n', "'kernel_regex' is no longer read")
        self.rejects('call = "student"\n', "call must be")
        self.rejects('call = "baseline"\n', "not the student's work")
        self.rejects("per_baseline = 1\n", "per_baseline must be true or false")
        self.rejects('target = "tests"\nper_baseline = true\n', "need target = \"bench\"")
        self.assertTrue(self.parse("per_baseline = true\n").tables["metrics"][0].per_baseline)

    def test_max_kernels_and_the_floor_margin(self):
        self.assertIsNone(self.parse().tables["metrics"][0].max_kernels)
        self.assertEqual(self.parse("max_kernels = 2\n").tables["metrics"][0].max_kernels, 2)
        self.rejects("max_kernels = 0\n", "max_kernels must be at least 1")
        self.rejects("max_kernels = 1.5\n", "max_kernels must be a whole number")
        self.rejects('max_kernels = "2"\n', "max_kernels must be a number")
        self.assertEqual(self.parse().tables["performance"].floor_margin, 1.1)
        base = self.BASE.replace('requires = ["Kernel"]\n[[metrics]]',
                                 'requires = ["Kernel"]\nfloor_margin = 1.3\n[[metrics]]')
        self.assertEqual(parse_rubric(self.LAB, base).tables["performance"].floor_margin, 1.3)
        with self.assertRaises(RubricError) as ctx:
            parse_rubric(self.LAB, base.replace("1.3", "0.9"))
        self.assertIn("[performance].floor_margin must be at least 1", str(ctx.exception))

    def test_every_scored_metric_explains_a_lost_point(self):
        """Issue 36, item 14: each lab's metric with points says what its number means, what
        usually makes it bad (`explain`) and the section of the lab's handout that fixes it
        (`handout_section`, one of the handout's headings)."""
        scored = 0
        for lab in sorted(p.name for p in (ROOT / "labs").glob("[0-9][0-9]_*")):
            rubric = load_rubric(LabPaths(lab, lab[:2], lab[3:], ROOT))
            handout = (ROOT / "handouts" / f"{lab}.md").read_text(encoding="utf-8")
            headings = {ln.lstrip("#").strip() for ln in handout.splitlines()
                        if ln.startswith("#")}
            for m in rubric.tables["metrics"]:
                if m.points <= 0:
                    continue
                scored += 1
                with self.subTest(lab=lab, metric=m.name):
                    self.assertGreater(len(m.explain.split()), 15, "explain")
                    self.assertIn(m.handout_section, headings)
        self.assertGreaterEqual(scored, 8)

    def test_the_explanation_keys(self):
        m = self.parse('explain = "Bad."\nhandout_section = "2. Write the tiled kernel"\n'
                       ).tables["metrics"][0]
        self.assertEqual((m.explain, m.handout_section), ("Bad.", "2. Write the tiled kernel"))
        self.assertEqual((self.parse().tables["metrics"][0].explain,
                          self.parse().tables["metrics"][0].handout_section), ("", ""))
        self.rejects("explain = 1\n", "explain must be a string")

    def test_no_lab_scores_a_raw_counter_against_exactly_zero(self):
        for lab in ("01_warp_sizing", "02_coalescing", "03_shared_memory", "04_tiled_matmul",
                    "05_boundary_checks", "06_bank_conflicts", "07_occupancy"):
            rubric = load_rubric(LabPaths(lab, lab[:2], lab[3:], ROOT))
            for m in rubric.tables["metrics"]:
                with self.subTest(lab=lab, metric=m.name):
                    if m.points > 0:
                        self.assertEqual(m.call, "candidate")
                        self.assertTrue(m.requires, "metric points before correctness")
                        self.assertFalse(m.expect_max == 0 and not m.per, "exactly 0 of a counter")


class BenchArgumentsTest(unittest.TestCase):
    """Every option a metric passes to a bench is one the bench reads (declared on its
    CML_BENCH, or a common one): a bench that stops at its arguments measures nothing (the
    grader reports that as its own problem, "not measured")."""

    COMMON = {"json", "seed", "max-seconds", "min-samples", "max-samples", "rse", "quick"}

    def test_metric_arguments_are_bench_options(self):
        for lab in ("01_warp_sizing", "02_coalescing", "03_shared_memory", "04_tiled_matmul",
                    "05_boundary_checks", "06_bank_conflicts", "07_occupancy"):
            paths = LabPaths(lab, lab[:2], lab[3:], ROOT)
            source = "".join(f.read_text() for f in sorted((paths.lab_dir / "bench").iterdir()))
            declared = source.split("CML_BENCH(", 1)[1] if "CML_BENCH(" in source else ""
            known = self.COMMON | set(
                re.findall(r'\.(?:param|option|choice)\(\s*"([^"]+)"', declared))
            for m in load_rubric(paths).tables["metrics"]:
                if m.target != "bench":
                    continue
                for name in (a[2:] for a in m.args if a.startswith("--")):
                    with self.subTest(lab=lab, metric=m.name, option=name):
                        self.assertIn(name, known)


class MetricPointsTest(unittest.TestCase):
    def test_inside_outside_and_open_ends(self):
        self.assertEqual(scoring.metric_points(1.01, 4, None, 1.1).points, 4.0)
        low = scoring.metric_points(32.0, 4, None, 1.1)
        self.assertEqual((low.points, low.status), (0.0, GRADED))
        self.assertEqual(low.reason, "Measured 32; full points need a value of at most 1.1.")
        self.assertIn("between 3.5 and 4.5", scoring.metric_points(16, 10, 3.5, 4.5).reason)
        explained = scoring.metric_points(32.0, 4, None, 1.1, explain="Padding fixes it.")
        self.assertEqual(explained.reason, "Measured 32; full points need a value of at most "
                         "1.1. Padding fixes it.")
        self.assertEqual(scoring.metric_points(1.0, 4, None, 1.1, explain="x").reason,
                         "Measured 1: full points (a value of at most 1.1 needed).")
        self.assertEqual(scoring.metric_points(1.0, 3, 0.99, None).points, 3.0)

    def test_nothing_measured_requires_and_reported_only(self):
        none = scoring.metric_points(None, 4, None, 1.1, [], "Your code launched no kernel.")
        self.assertEqual((none.points, none.reason), (0.0, "Your code launched no kernel."))
        gated = scoring.metric_points(1.0, 4, None, 1.1, ["Padded tile transpose"])
        self.assertEqual(gated.points, 0.0)
        self.assertIn("Padded tile transpose", gated.reason)
        self.assertEqual(scoring.metric_points(32.0, 0, None, None).reason,
                         "Measured 32 (reported, not scored).")


class NcuLogTest(unittest.TestCase):
    def test_no_kernels_is_an_empty_result_and_errors_are_ncus_own(self):
        empty = ncu_csv.parse_ncu_log(log("ncu_no_kernels.log"))
        self.assertEqual((empty.rows, empty.errors), ([], []))
        self.assertEqual(empty.warnings, ["No kernels were profiled."])
        refused = ncu_csv.parse_ncu_log(log("ncu_refused.log"))
        self.assertTrue(refused.errors[0].startswith("ERR_NVGPUCTRPERM"))

    def test_only_what_ncu_writes_is_believed(self):
        clean = log("ncu_unpadded.csv")
        self.assertEqual(ncu_csv.foreign_lines(clean), "")
        self.assertEqual(ncu_csv.foreign_lines(log("ncu_no_kernels.log")), "")
        lines = clean.splitlines()
        at = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
        cases = {
            "tables": "\n".join(lines[:at] + lines[at:] + lines[at:]),
            "does not write": "\n".join(["0 errors, all clean", *lines]),
            "not one of the table's": "\n".join(lines + ['"99","forged"']),
            "no kernel": "\n".join([*lines, "==WARNING== No kernels were profiled."]),
            # a quote left open swallows the lines after it
            "not one of the table's ": "\n".join(lines[:at + 2] + ['"1,"2'] + lines[at + 2:]),
        }
        for said, text in cases.items():
            with self.subTest(said):
                found = ncu_csv.parse_ncu_log(text)
                self.assertIn(said.strip(), found.foreign)
                self.assertEqual(found.rows, [])

    def test_aggregates(self):
        rows = ncu_csv.parse_ncu_log(log("ncu_unpadded.csv")).rows
        requests = "smsp__inst_executed_op_shared_ld.sum"
        self.assertEqual(ncu_csv.ncu_aggregate(rows, requests), 4 * 32768)
        self.assertIsNone(ncu_csv.ncu_aggregate(rows, "dram__bytes_read.sum"))
        self.assertIsNone(ncu_csv.ncu_aggregate([], requests))


if __name__ == "__main__":
    unittest.main()
