"""compute-sanitizer's report, ncu's CSV and the bench's JSON document read
(grader/measure/sanitizer.py, ncu_csv.py, grader/benchdoc.py), on sample outputs in data/."""

import json
import re
import unittest
from pathlib import Path

from grader.measure.bench import Flaw, timed_output_problem
from grader.benchdoc import Document, parse_document
from grader.benchfields import BenchError
from grader.measure import ncu_csv
from grader.measure.ncu_csv import NcuError, ncu_kernels, ncu_number, parse_ncu_csv
from grader.measure.sanitizer import parse_sanitizer_output

DATA = Path(__file__).resolve().parent / "data"


def sample(name: str) -> str:
    return (DATA / name).read_text()


class SanitizerTest(unittest.TestCase):
    def test_memcheck_errors_and_messages(self):
        s = parse_sanitizer_output(sample("memcheck_oob.txt"), "memcheck")
        self.assertEqual(s.tool, "memcheck")
        self.assertEqual(s.errors, 1025)
        self.assertFalse(s.ok)
        self.assertTrue(s.complete)
        self.assertEqual(len(s.messages), 3)
        first = s.messages[0]
        self.assertTrue(first.startswith("Invalid __global__ write of size 4 bytes"), first)
        self.assertIn("tiled_matmul.cu:58", first)
        self.assertIn("by thread (31,7,0) in block (3,3,0)", first)
        self.assertNotIn("Host Frame", first)  # backtraces are left out
        self.assertNotIn("=========", first)
        self.assertIn("cudaErrorLaunchFailure", s.messages[2])
        # program output and the summary lines are not error reports
        self.assertFalse(any("CUDA error" in m or "SUMMARY" in m for m in s.messages))
        self.assertIn("ERROR SUMMARY", s.raw_tail)

    def test_a_second_summary_is_not_believed(self):
        # The runner under the tool inherits its log: a clean summary written ahead of the
        # tool's own (which reports the error), or after it, or the tool's own glued to a
        # partial line so that only the forged one parses, is refused, never "0 errors".
        real = sample("memcheck_oob.txt")
        forged = "========= ERROR SUMMARY: 0 errors\n"
        for text in (forged + real, real + forged,
                     real.replace("========= ERROR SUMMARY: 1025", "x========= ERROR SUMMARY: 1025")
                     + forged):
            s = parse_sanitizer_output(text, "memcheck")
            self.assertFalse(s.ok)
            self.assertFalse(s.complete)
            self.assertIn("more than one summary", s.messages[0])
        race = sample("racecheck_clean.txt")
        s = parse_sanitizer_output(race + race, "racecheck")
        self.assertFalse(s.ok)
        # one summary of each kind, as racecheck prints them, is the tool's own
        self.assertTrue(parse_sanitizer_output(race, "racecheck").ok)

    def test_clean_memcheck(self):
        s = parse_sanitizer_output(sample("memcheck_clean.txt"), "memcheck")
        self.assertEqual((s.errors, s.ok, s.messages), (0, True, []))

    def test_racecheck_counts_errors_not_warnings(self):
        s = parse_sanitizer_output(sample("racecheck_hazard.txt"), "racecheck")
        self.assertEqual((s.errors, s.warnings, s.ok), (1, 1, False))
        self.assertTrue(s.messages[0].startswith("Error: Race reported between Write access"))
        self.assertIn("[4096 hazards]", s.messages[0])
        self.assertTrue(s.messages[1].startswith("Warning"))
        clean = parse_sanitizer_output(sample("racecheck_clean.txt"), "racecheck")
        self.assertEqual((clean.errors, clean.ok), (0, True))

    def test_racecheck_warnings_only_is_ok(self):
        text = ("========= Warning: Race reported between Read access at k()+0x10 in a.cu:3\n"
                "=========     and Write access at k()+0x20 in a.cu:4 [2 hazards]\n"
                "=========\n"
                "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n")
        s = parse_sanitizer_output(text, "racecheck")
        self.assertEqual((s.errors, s.warnings, s.ok), (0, 1, True))

    def test_synccheck_and_initcheck(self):
        s = parse_sanitizer_output(sample("synccheck_divergent.txt"), "synccheck")
        self.assertEqual((s.errors, s.ok), (1, False))
        self.assertIn("Barrier error detected", s.messages[0])
        s = parse_sanitizer_output(sample("initcheck_uninit.txt"), "initcheck")
        self.assertEqual((s.errors, s.ok), (1, False))
        self.assertIn("Uninitialized __global__ memory read", s.messages[0])

    def test_no_summary_means_it_did_not_finish(self):
        s = parse_sanitizer_output(sample("memcheck_killed.txt"), "memcheck")
        self.assertFalse(s.ok)
        self.assertFalse(s.complete)
        self.assertEqual(s.errors, 1)
        self.assertIn("Invalid __shared__ read", s.messages[0])
        self.assertIn("no summary", s.messages[-1])
        empty = parse_sanitizer_output("", "memcheck")
        self.assertFalse(empty.ok)
        self.assertGreaterEqual(empty.errors, 1)

    def test_messages_are_capped(self):
        block = ("========= Invalid __global__ read of size 4 bytes\n"
                 "=========     at k()+0x10 in a.cu:3\n=========\n")
        s = parse_sanitizer_output(block * 50 + "========= ERROR SUMMARY: 50 errors\n", "memcheck")
        self.assertEqual(s.errors, 50)
        self.assertEqual(len(s.messages), 5)


def ncu_metric(rows, metric: str, kernel_regex: str) -> list[float]:
    """`metric` of every launch whose kernel matches, as the profiler reads one launch."""
    return [v for r in rows if re.search(kernel_regex, ncu_csv._kernel_name(r))
            if (v := ncu_csv._row_value(r, metric)) is not None]


class NcuTest(unittest.TestCase):
    def test_raw_page_with_units_row_and_thousands_separators(self):
        rows = parse_ncu_csv(sample("ncu_raw.csv"))
        self.assertEqual(len(rows), 4)  # units row and ==PROF== lines are not rows
        self.assertEqual(rows[0]["ID"], "0")
        self.assertEqual(rows[0]["_units"]["dram__bytes_read.sum"], "Mbyte")
        metric = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
        self.assertEqual(ncu_metric(rows, metric, "tiled_kernel"), [65536.0, 65536.0])
        self.assertEqual(ncu_metric(rows, metric, "naive_kernel"), [2097152.0, 2097152.0])
        self.assertEqual(len(ncu_metric(rows, metric, "")), 4)
        # auto-scaled units come back in base units (bytes, nanoseconds)
        self.assertEqual(ncu_metric(rows, "dram__bytes_read.sum", "naive"), [12.58e6, 12.60e6])
        self.assertAlmostEqual(ncu_metric(rows, "gpu__time_duration.sum", "tiled")[0], 412770.0)
        # "n/a" is left out
        self.assertEqual(ncu_metric(rows, "dram__bytes_read.sum", "tiled"), [8.39e6])
        self.assertEqual(ncu_metric(rows, "no_such.metric", ""), [])
        self.assertEqual(ncu_metric(rows, metric, "no_such_kernel"), [])
        self.assertEqual(ncu_kernels(rows)[1],
                         "void tiled_kernel<32>(const float *, const float *, float *, int)")

    def test_details_page(self):
        rows = parse_ncu_csv(sample("ncu_details.csv"))
        self.assertEqual(len(rows), 4)
        sectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
        self.assertEqual(ncu_metric(rows, sectors, "^strided"), [1048576.0])
        self.assertEqual(ncu_metric(rows, sectors, "coalesced"), [131072.0])
        self.assertAlmostEqual(ncu_metric(rows, "dram__bytes_read.sum", "coalesced")[0],
                               4194300.0)
        self.assertAlmostEqual(ncu_metric(rows, "dram__bytes_read.sum", "strided")[0], 33.56e6)

    def test_numbers(self):
        self.assertEqual(ncu_number("1,234,567"), 1234567.0)
        self.assertEqual(ncu_number("85.31"), 85.31)
        self.assertIsNone(ncu_number("n/a"))
        self.assertIsNone(ncu_number(""))
        self.assertEqual(ncu_number("2", "Kinst"), 2000.0)
        self.assertEqual(ncu_number("1.5", "msecond"), 1.5e6)

    def test_no_table(self):
        with self.assertRaises(NcuError) as ctx:
            parse_ncu_csv("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The "
                          "user does not have permission to access NVIDIA GPU Performance "
                          "Counters\n")
        self.assertIn("ERR_NVGPUCTRPERM", str(ctx.exception))

    def test_unquoted_csv(self):
        text = ("ID,Kernel Name,sm__cycles_elapsed.avg\n,,cycle\n"
                '0,k1(int),"1,000"\n1,k2(int),2000\n')
        rows = parse_ncu_csv(text)
        self.assertEqual(ncu_metric(rows, "sm__cycles_elapsed.avg", "k"), [1000.0, 2000.0])


def read(path: Path) -> Document:
    return parse_document(path.read_text(), path.name)


class BenchJsonTest(unittest.TestCase):
    def test_reads_and_finds_comparisons(self):
        doc = read(DATA / "bench_lab04.json")
        comp = doc.named("tiled")
        self.assertEqual(comp.candidate.name, "tiled<32>")
        self.assertGreater(comp.speedup.median, 10)
        self.assertEqual(comp.speedup.n, len(comp.speedup.samples or ()))
        self.assertTrue(comp.candidate.verification.passed)
        self.assertIsNone(timed_output_problem(comp))
        verdict = timed_output_problem(doc.named("dynamic"))
        self.assertEqual(verdict.flaw, Flaw.WRONG_OUTPUT)
        self.assertIn("C[17][4000]", verdict.said)
        # the records go back to JSON as the document wrote them
        self.assertEqual(doc.to_dict(), json.loads((DATA / "bench_lab04.json").read_text()))

    def test_missing_comparison_names_the_ones_there(self):
        doc = read(DATA / "bench_lab04.json")
        self.assertIsNone(doc.comparison("tiledd"))
        with self.assertRaises(BenchError) as ctx:
            doc.named("tiledd")
        self.assertIn("'tiledd'", str(ctx.exception))
        self.assertIn("'tiled', 'dynamic'", str(ctx.exception))

    def test_rejects_bad_documents(self):
        good = json.loads((DATA / "bench_lab04.json").read_text())
        tiled = good["comparisons"][0]

        def candidate(**fields) -> dict:
            return dict(good, comparisons=[dict(tiled, candidate=dict(tiled["candidate"],
                                                                      **fields))])

        cases = {
            "schema": dict(good, schema="cml-bench/1"),  # before whole-output verification
            "comparisons": {k: v for k, v in good.items() if k != "comparisons"},
            "median speedup": dict(good, comparisons=[dict(tiled, speedup={})]),
            "baseline timing": dict(good, comparisons=[{"name": "x", "candidate": {"ms": {"median": 1}},
                                                        "speedup": {"median": 1}}]),
            "not_timed": dict(good, not_timed=["register_tiled"]),  # name -> reason
            # a field the grader reads, of the wrong kind, is named with its place
            "comparisons[0] ('tiled').candidate.verification.passed must be true or false":
                candidate(verification={"checked": True, "passed": "yes"}),
            "comparisons[0] ('tiled').candidate.launches must be a JSON object":
                candidate(launches=[1, 1]),
            "comparisons[0] ('tiled').candidate.ms.stdev must be a number":
                candidate(ms=dict(tiled["candidate"]["ms"], stdev="small")),
        }
        for expected, doc in cases.items():
            with self.subTest(problem=expected):
                with self.assertRaises(BenchError) as ctx:
                    parse_document(json.dumps(doc), "bench.json")
                self.assertIn(expected, str(ctx.exception))
        with self.assertRaises(BenchError) as ctx:
            parse_document((DATA / "bench_lab04.json").read_text()[:200], "truncated.json")
        self.assertIn("not a JSON document", str(ctx.exception))
        # Python's reader takes NaN and Infinity, which are not JSON: a whole number of
        # Infinity raised OverflowError, not BenchError
        for constant in ("Infinity", "-Infinity", "NaN"):
            text = json.dumps(candidate(runs=1)).replace('"runs": 1', f'"runs": {constant}')
            with self.subTest(constant=constant):
                with self.assertRaises(BenchError) as ctx:
                    parse_document(text, "bench.json")
                self.assertIn(f"{constant.lstrip('-')} is not JSON", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
