"""One profiler pass per lab: the metrics of a rubric that profile the same run (target,
arguments, call) are collected by one ncu process (the runs are simulated: no GPU, no ncu)."""

import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import measure
from grader.paths import ROOT, LabPaths
from grader.rubric import load_rubric
from grader.tests.test_metrics import DATA, FakeNcu, included

LAB06 = LabPaths("06_bank_conflicts", "06", "bank_conflicts", ROOT)


def metrics_of(cmd: list[str]) -> list[str]:
    return cmd[cmd.index("--metrics") + 1].split(",")


class ProfilerPassTest(unittest.TestCase):
    def run_pass(self, fake: FakeNcu):
        entries = load_rubric(LAB06).metrics
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(measure, "find_tool", return_value="/opt/ncu/ncu"), \
                mock.patch.object(measure.sandbox, "run", fake):
            ctx = measure.Context(run_dir=Path(tmp), env={}, identity=None, seed=7,
                                  timeout=60, binary=lambda kind: Path(f"/b/lab06_{kind}"),
                                  counter=[0])
            return entries, measure.metrics(entries, ctx)

    def test_one_ncu_run_per_profiled_run_with_every_metric(self):
        text = (DATA / "ncu_textbook_padded.csv").read_text()
        fake = FakeNcu({"cml:candidate/": text, "cml:baseline/": text})
        entries, runs = self.run_pass(fake)
        self.assertEqual(len(runs), len(entries))
        ncu_runs = [c for c in fake.commands if "--metrics" in c]
        # lab 06: three bench argument sets, one of them also profiled for its baseline
        self.assertEqual(len(ncu_runs), 4, [" ".join(c) for c in ncu_runs])
        self.assertLess(len(ncu_runs), len(entries) + 1)
        padded = [c for c in ncu_runs if c[-3] == "padded"]
        self.assertEqual(len(padded), 1)
        wanted = {n for e in entries if "padded" in e.args[-1] and e.args[-1] == "padded"
                  for n in measure.metric_names(e)}
        self.assertEqual(set(metrics_of(padded[0])), wanted)
        self.assertEqual(len(metrics_of(padded[0])), len(set(metrics_of(padded[0]))))
        # the candidate's range only, as before
        self.assertEqual(included(padded[0]), "cml:candidate/")
        # every entry records the command that measured it
        for run in runs:
            if run.details.get("commands"):
                self.assertIn("--metrics", run.details["commands"][0])

    def test_each_entry_reads_its_own_metric_from_the_shared_report(self):
        text = (DATA / "ncu_textbook_padded.csv").read_text()
        fake = FakeNcu({"cml:candidate/": text, "cml:baseline/": text})
        entries, shared = self.run_pass(fake)
        for entry, got in zip(entries, shared):
            alone = FakeNcu({"cml:candidate/": text, "cml:baseline/": text})
            with tempfile.TemporaryDirectory() as tmp, \
                    mock.patch.object(measure, "find_tool", return_value="/opt/ncu/ncu"), \
                    mock.patch.object(measure.sandbox, "run", alone):
                ctx = measure.Context(run_dir=Path(tmp), env={}, identity=None, seed=7,
                                      timeout=60, binary=lambda kind: Path(f"/b/{kind}"),
                                      counter=[0])
                single = measure.metric(entry, ctx)
            self.assertEqual((got.value, got.problem, got.unmeasured),
                             (single.value, single.problem, single.unmeasured), entry.name)


if __name__ == "__main__":
    unittest.main()
