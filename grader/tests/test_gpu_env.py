"""The environment of each run on the GPU: where nothing is timed (the tests, compute-sanitizer,
ncu) each CUDA context gets one work queue; the bench keeps the default."""

import contextlib
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import pairs, sandbox
from grader.measure import Context, bench, profiler, sanitizer
from grader.measure.metric_rules import Metric
from grader.catch2.testrun import Case
from grader.stages import tests

QUEUES = "CUDA_DEVICE_MAX_CONNECTIONS"


class TestLayersTest(unittest.TestCase):
    def test_both_test_layers_run_with_one_work_queue_on_their_device(self):
        shared = {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": ""}
        seen = []

        class FakeRunner:
            def __init__(self, run_dir, env, *args, **kw):
                seen.append(dict(env))
                self.log = []

            def run_layer(self, binary, spec, expected):
                return {}, sandbox.Outcome([], 0, False, 0.0, "")

        @contextlib.contextmanager
        def section(stage):
            shared["CUDA_VISIBLE_DEVICES"] = "3"  # what a batch's lock sets
            yield

        job = mock.Mock(has_gpu=True, gpu_section=section, test_timeout=5.0, seed=1)
        job.trees.run_env = shared
        place = mock.Mock(test_binary=lambda kind: Path("/x") / kind)
        cases = [Case("h", ("host",)), Case("g", ("gpu",))]
        with mock.patch.object(tests, "Runner", FakeRunner):
            tests.run(job, place, cases)
        self.assertEqual(len(seen), 2)  # the public binary, in each layer
        self.assertEqual([env[QUEUES] for env in seen], ["1", "1"])
        self.assertEqual(seen[1]["CUDA_VISIBLE_DEVICES"], "3")
        self.assertNotIn(QUEUES, shared)  # other labs' sections read it


class RunEnvironmentTest(unittest.TestCase):
    """The environment each measurement hands the processes it starts."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.ctx = Context(self.tmp, {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0"}, None,
                           1, 10.0, lambda kind: self.tmp / kind)
        self.seen = []

    def fake_run(self, cmd, **kw):
        self.seen.append(kw["env"])
        return sandbox.Outcome(cmd, 1, False, 0.0, "")

    def test_the_bench_keeps_the_default_work_queues(self):
        with mock.patch.object(sandbox, "run", self.fake_run):
            bench.run_bench(self.tmp / "bench", [], self.ctx, trusted=True)
            bench.run_bench(self.tmp / "bench", [], self.ctx, trusted=False)
        self.assertEqual(len(self.seen), 2)
        for env in self.seen:
            self.assertNotIn(QUEUES, env)
            self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "0")

    def test_the_profiler_run_gets_one_work_queue(self):
        metric = Metric(name="m", target="tests", metric="a.sum", args=["[x]"])
        with mock.patch.object(sandbox, "run", self.fake_run):
            with self.assertRaises(profiler._NotMeasured):  # the fake wrote no log
                profiler._profile("ncu", metric, self.ctx, self.tmp / "tests", "candidate", {
                    "commands": []})
        self.assertEqual([env.get(QUEUES) for env in self.seen], ["1"])
        self.assertNotIn(QUEUES, self.ctx.env)

    def test_a_sanitizer_run_gets_one_work_queue(self):
        run = sanitizer._sanitizer_run("compute-sanitizer", "memcheck", "tests_student",
                                       "[gpu]", self.tmp / "tests", self.ctx)
        with mock.patch.object(sandbox, "run", self.fake_run):
            sanitizer._run_sanitizer(run, self.ctx)
        self.assertEqual([env.get(QUEUES) for env in self.seen], ["1"])
        self.assertNotIn(QUEUES, self.ctx.env)

    def test_a_sanitizer_run_of_a_checker_and_its_runner_gets_one_work_queue(self):
        self.ctx.remote = self.tmp / "runner"
        run = sanitizer._sanitizer_run("compute-sanitizer", "memcheck", "tests_student",
                                       "[gpu]", self.tmp / "checker", self.ctx)

        def fake_pair(checker, runner, **kw):
            self.seen.append(kw["env"])
            done = sandbox.Outcome(checker, 0, False, 0.0, "")
            return pairs.PairOutcome(done, done)

        with mock.patch.object(pairs, "run_pair", fake_pair):
            sanitizer._run_sanitizer(run, self.ctx)
        self.assertEqual([env.get(QUEUES) for env in self.seen], ["1"])
        self.assertNotIn(QUEUES, self.ctx.env)


if __name__ == "__main__":
    unittest.main()
