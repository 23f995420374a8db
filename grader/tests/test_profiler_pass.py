"""One profiler pass per lab: the metrics of a rubric that profile the same run (target and
arguments; for the bench, both calls) are collected by one ncu process (the runs are
simulated: no GPU, no ncu)."""

import unittest

from grader.measure import profiler
from grader.paths import ROOT, LabPaths
from grader.rubric import load_rubric
from grader.tests import test_metrics
from grader.tests.test_metrics import DATA, FakeNcu, included, profiled

LAB06 = LabPaths("06_bank_conflicts", "06", "bank_conflicts", ROOT)
load_tests = test_metrics.load_tests  # skipped, with the reason, without the lab fixtures


def metrics_of(cmd: list[str]) -> list[str]:
    return cmd[cmd.index("--metrics") + 1].split(",")


class ProfilerPassTest(unittest.TestCase):
    def run_pass(self, fake: FakeNcu):
        entries = load_rubric(LAB06).tables["metrics"]
        with profiled(fake) as ctx:
            return entries, profiler.metrics(entries, ctx)

    def test_one_ncu_run_per_lab_with_every_metric(self):
        text = (DATA / "ncu_textbook_padded.csv").read_text()
        fake = FakeNcu({"cml:candidate/": text, "cml:baseline/": text})
        entries, runs = self.run_pass(fake)
        self.assertEqual(len(runs), len(entries))
        ncu_runs = [c for c in fake.commands if "--metrics" in c]
        # lab 06: five entries, one bench argument set, both calls in one run
        self.assertEqual(len(ncu_runs), 1, [" ".join(c) for c in ncu_runs])
        wanted = {n for e in entries for n in profiler.metric_names(e)}
        self.assertEqual(set(metrics_of(ncu_runs[0])), wanted)
        self.assertEqual(len(metrics_of(ncu_runs[0])), len(set(metrics_of(ncu_runs[0]))))
        self.assertEqual(included(ncu_runs[0]), "cml:candidate/ cml:baseline/")
        self.assertNotIn("--nvtx-exclude", ncu_runs[0])
        for run in runs:  # every entry records the command that measured it
            self.assertIn("--metrics", run.details["commands"][0])
        self.assertEqual({e.call for e in entries}, {"candidate", "baseline"})

    def test_every_lab_profiles_in_one_ncu_run(self):
        for folder in sorted(p.name for p in (ROOT / "labs").glob("[0-9][0-9]_*")):
            with self.subTest(lab=folder):
                number, topic = folder.split("_", 1)
                entries = load_rubric(LabPaths(folder, number, topic, ROOT)).tables["metrics"]
                self.assertLessEqual(len({profiler._Pass.group(e) for e in entries}), 1)

    def test_each_entry_reads_its_own_metric_from_the_shared_report(self):
        text = (DATA / "ncu_textbook_padded.csv").read_text()
        fake = FakeNcu({"cml:candidate/": text, "cml:baseline/": text})
        entries, shared = self.run_pass(fake)
        for entry, got in zip(entries, shared):
            with profiled(FakeNcu({"cml:candidate/": text, "cml:baseline/": text})) as ctx:
                single = profiler.metric(entry, ctx)
            self.assertEqual((got.value, got.problem, got.unmeasured),
                             (single.value, single.problem, single.unmeasured), entry.name)

    def test_a_metric_this_gpu_lacks_is_measured_alone_and_the_others_still_are(self):
        # The lab's one run asks for every metric; an ncu that does not know one of them
        # fails the whole run. The grader then measures each entry on its own: only the
        # unknown one is "not measured".
        text = (DATA / "ncu_textbook_padded.csv").read_text()
        missing = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"

        class LacksOne(FakeNcu):
            def __call__(self, cmd, **kw):
                if "--metrics" in cmd and missing in metrics_of(cmd):
                    self.commands.append(cmd)
                    log = cmd[cmd.index("--log-file") + 1]
                    with open(log, "w") as f:
                        f.write(f"==ERROR== Failed to find metric {missing}\n")
                    return profiler.sandbox.Outcome(cmd, 1, False, 0.5, "")
                return super().__call__(cmd, **kw)

        entries, runs = self.run_pass(LacksOne({"cml:candidate/": text, "cml:baseline/": text}))
        for entry, run in zip(entries, runs):
            with self.subTest(entry=entry.name):
                if missing in profiler.metric_names(entry):
                    self.assertIn("cannot measure", run.unmeasured)
                else:
                    self.assertEqual(run.unmeasured, "")
                    self.assertIsNotNone(run.value)


if __name__ == "__main__":
    unittest.main()
