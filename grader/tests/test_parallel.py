"""Independent runs of a lab's GPU section at the same time (grader/parallel.py): every
compute-sanitizer run of one memory-safety call, and the test binaries of one layer. Fake
executables (a compute-sanitizer that writes its log, Catch2-like test binaries that write
their XML report) sleep so that running together shows in the wall time; each result must
be what the same runs give one after another (one CPU: the serial path)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from grader import parallel, sandbox
from grader.costs import Meter
from grader.measure import Context, sanitizer
from grader.pipeline import Interrupted, interrupt_handler
from grader.stages import tests as tests_stage
from grader.stages.tests import RunPlace
from grader.catch2.testrun import Case

REPO = Path(__file__).resolve().parents[2]

# A compute-sanitizer: --tool T ... --log-file LOG BINARY SPEC ...; what it does for a
# tool and binary comes from FAKE_PLAN ("memcheck:lab99_hidden_student": "refuse", ...).
FAKE_SANITIZER = r'''
import json, os, sys, time
args = sys.argv[1:]
tool = args[args.index("--tool") + 1]
log = args[args.index("--log-file") + 1]
program = args[args.index(log) + 1:]
if "--" in program:  # started through grader/confine.py
    program = program[program.index("--") + 1:]
binary = os.path.basename(program[0])
plan = json.loads(os.environ.get("FAKE_PLAN", "{}")).get(f"{tool}:{binary}", "clean")
def note(what):
    with open(os.environ["FAKE_TRACE"], "a") as f:
        f.write(f"{what} {tool}:{binary} {time.monotonic()}\n")
note("start")
if plan == "refuse":
    print("==ERROR== Error: ERR_NVGPUCTRPERM - The user does not have permission to access "
          "NVIDIA GPU Performance Counters on the target device.", flush=True)
    sys.exit(1)
time.sleep(60 if plan == "hang" else float(os.environ.get("FAKE_SLEEP", "1")))
with open(log, "w") as f:
    if plan == "errors":
        f.write("========= COMPUTE-SANITIZER\n"
                "========= Invalid __global__ read of size 4 bytes\n"
                "=========     at tiled(float*)+0x90\n=========\n"
                "========= ERROR SUMMARY: 1 error\n")
    elif tool == "racecheck":
        f.write("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n")
    else:
        f.write("========= ERROR SUMMARY: 0 errors\n")
note("end")
sys.exit(99 if plan == "errors" else 0)
'''

# A Catch2 test binary: SPEC -r xml -o REPORT ... (REPORT: /dev/fd/N, the grader's pipe);
# its cases (name, tags, how) come from FAKE_CASES[its own name]; how: pass, fail, slow
# (1 s, then passes), crash, hang.
FAKE_TESTS = r'''
import json, os, signal, sys, time
from xml.sax.saxutils import quoteattr
sys.path.insert(0, os.environ["FAKE_REPO"])
from grader.catch2.spec import spec_matches
me = os.path.basename(sys.argv[0])
spec, out = sys.argv[1], sys.argv[sys.argv.index("-o") + 1]
with open(os.environ["FAKE_TRACE"], "a") as f:
    f.write(f"start {me} {spec} {time.monotonic()}\n")
with open(out, "w") as f:
    f.write('<?xml version="1.0"?>\n<Catch2TestRun name="fake">\n')
    for name, tags, how in json.loads(os.environ["FAKE_CASES"])[me]:
        if not spec_matches(spec, name, tuple(tags)):
            continue
        f.flush()
        if how == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if how == "hang":
            time.sleep(60)
        if how == "slow":
            time.sleep(1)
        f.write(f'<TestCase name={quoteattr(name)} tags="{"".join(f"[{t}]" for t in tags)}">')
        if how == "fail":
            f.write('<Expression success="false" filename="t.cu" line="7">'
                    '<Original>a == b</Original><Expanded>1 == 2</Expanded></Expression>')
        ok = "false" if how == "fail" else "true"
        f.write(f'<OverallResult success="{ok}" durationInSeconds="0.25"/></TestCase>\n')
    f.write("</Catch2TestRun>\n")
with open(os.environ["FAKE_TRACE"], "a") as f:
    f.write(f"end {me} {spec} {time.monotonic()}\n")
'''


def script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


def most_at_once(trace: Path) -> int:
    """The most fake processes that ran at the same time, from their start/end lines."""
    events = []
    for line in trace.read_text().splitlines():
        what, *_, when = line.split()
        events.append((float(when), 1 if what == "start" else -1))
    running = peak = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        running += step
        peak = max(peak, running)
    return peak


class Fakes:
    """A folder with the fakes, the run folder and the trace the fakes append to."""

    def __init__(self, tmp: str) -> None:
        self.dir = Path(tmp)
        self.run_dir = self.dir / "run"
        self.run_dir.mkdir()
        self.trace = self.dir / "trace"
        self.trace.write_text("")
        self.sanitizer = script(self.dir / "compute-sanitizer", FAKE_SANITIZER)
        self.tests = script(self.dir / "lab99_tests_student", FAKE_TESTS)
        self.hidden = script(self.dir / "lab99_hidden_student", FAKE_TESTS)

    def env(self, **fake: object) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "FAKE_TRACE": str(self.trace),
               "FAKE_REPO": str(REPO)}
        env.update({f"FAKE_{k.upper()}": v if isinstance(v, str) else json.dumps(v)
                    for k, v in fake.items()})
        return env

    def reset(self) -> None:
        self.trace.write_text("")
        for f in self.run_dir.iterdir():
            f.unlink()


def cpus(n: int):
    """As if the process could use `n` CPUs (1: the serial path)."""
    return mock.patch.object(parallel, "usable_cpus", return_value=n)


class RunAllTest(unittest.TestCase):
    def test_results_in_order_and_at_most_limit_at_once(self):
        lock, now, peak = threading.Lock(), [0], [0]

        def task(i):
            def go():
                with lock:
                    now[0] += 1
                    peak[0] = max(peak[0], now[0])
                time.sleep(0.3 - 0.05 * i)  # the later ones end first
                with lock:
                    now[0] -= 1
                return i
            return go

        start = time.monotonic()
        self.assertEqual(parallel.run_all([task(i) for i in range(6)], limit=3), list(range(6)))
        self.assertLess(time.monotonic() - start, 1.0)
        self.assertEqual(peak[0], 3)

    def test_the_first_error_in_order_is_raised_once_every_task_has_ended(self):
        ended = []

        def fails(msg, delay):
            def go():
                time.sleep(delay)
                ended.append(msg)
                raise ValueError(msg)
            return go

        def slow():
            time.sleep(0.5)
            ended.append("slow")
            return 1

        with self.assertRaisesRegex(ValueError, "first"):
            parallel.run_all([slow, fails("first", 0.2), fails("second", 0.0)], limit=3)
        self.assertEqual(sorted(ended), ["first", "second", "slow"])
        self.assertFalse([t for t in threading.enumerate()
                          if t.name.startswith("cml-run-") and t.is_alive()])

    def test_one_cpu_runs_in_the_callers_thread(self):
        me = threading.current_thread()
        with cpus(1):
            self.assertEqual(parallel.run_all([lambda: threading.current_thread() is me] * 2),
                             [True, True])


    def test_a_stopped_runner_starts_nothing(self):
        from grader.catch2.testrun import Runner
        stop = threading.Event()
        stop.set()
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(sandbox, "run", side_effect=AssertionError("started")):
            runner = Runner(Path(tmp), {}, None, 1, 30, stop=stop)
            with self.assertRaises(parallel.Stopped):
                runner.run_layer(Path("lab99_tests_student"), "[gpu]", [])
            self.assertEqual(runner.runs, 0)


class MemorySafetyTest(unittest.TestCase):
    KINDS = [("tests_student", "[s]"), ("hidden_student", "[s]")]

    def measure(self, fakes: Fakes, tools: list[str], n_cpus: int, timeout: float = 30,
                **fake: object) -> tuple[sanitizer.SanitizerRuns, float, list[str]]:
        fakes.reset()
        binaries = {"tests_student": fakes.tests, "hidden_student": fakes.hidden}
        ctx = Context(fakes.run_dir, fakes.env(**fake), None, 7, timeout,
                      binaries.get)
        start = time.monotonic()
        with cpus(n_cpus), mock.patch.object(sanitizer, "find_tool",
                                             return_value=str(fakes.sanitizer)):
            runs = sanitizer.memory_safety("[s]", tools, ctx, self.KINDS)
        return runs, time.monotonic() - start, sorted(f.name for f in fakes.run_dir.iterdir())

    def test_two_runs_of_one_second_take_less_than_two(self):
        with tempfile.TemporaryDirectory() as tmp:
            fakes = Fakes(tmp)
            runs, seconds, _ = self.measure(fakes, ["memcheck"], 2)
            self.assertLess(seconds, 1.8)
            self.assertEqual(most_at_once(fakes.trace), 2)
            self.assertEqual([s.ok for s in runs.summaries], [True])

    def test_no_more_at_once_than_the_cpus(self):
        with tempfile.TemporaryDirectory() as tmp:
            fakes = Fakes(tmp)
            _, seconds, _ = self.measure(fakes, ["memcheck", "racecheck"], 2, sleep="0.5")
            self.assertEqual(most_at_once(fakes.trace), 2)
            self.assertGreater(seconds, 0.9)  # four runs of 0.5 s, two at a time

    def assert_same_as_serial(self, fakes: Fakes, tools: list[str], **kw: object
                              ) -> sanitizer.SanitizerRuns:
        together, _, files = self.measure(fakes, tools, 4, **kw)
        serial, _, serial_files = self.measure(fakes, tools, 1, **kw)
        self.assertEqual(together.unmeasured, serial.unmeasured)
        self.assertEqual(together.details, serial.details)
        self.assertEqual([vars(s) for s in together.summaries],
                         [vars(s) for s in serial.summaries])
        if not together.unmeasured:
            self.assertEqual(files, serial_files)
        return together

    def test_results_and_files_as_when_run_one_after_another(self):
        with tempfile.TemporaryDirectory() as tmp:
            fakes = Fakes(tmp)
            runs = self.assert_same_as_serial(
                fakes, ["memcheck", "racecheck"], sleep="0.2",
                plan={"memcheck:lab99_hidden_student": "errors"})
            self.assertEqual([(s.tool, s.errors, s.ok) for s in runs.summaries],
                             [("memcheck", 1, False), ("racecheck", 0, True)])
            self.assertEqual(list(runs.details), ["tests", "memcheck:tests_student",
                                                  "memcheck:hidden_student",
                                                  "racecheck:tests_student",
                                                  "racecheck:hidden_student"])
            self.assertEqual(runs.details["memcheck:hidden_student"], "exit status 99")
            self.assertTrue(any("Invalid __global__ read" in m for m in runs.summaries[0].messages))
            # the logs came through the grader's pipes; each run's own folder is gone
            _, _, files = self.measure(fakes, ["memcheck", "racecheck"], 4, sleep="0.2")
            self.assertEqual(files, [])

    def test_a_refusal_in_one_run_leaves_it_unmeasured(self):
        with tempfile.TemporaryDirectory() as tmp:
            fakes = Fakes(tmp)
            runs = self.assert_same_as_serial(
                fakes, ["memcheck", "racecheck"], sleep="0.2",
                plan={"racecheck:lab99_hidden_student": "refuse"})
            self.assertTrue(runs.unmeasured.startswith(
                "Not measured: compute-sanitizer refused to run here (==ERROR== Error: "
                "ERR_NVGPUCTRPERM"), runs.unmeasured)
            self.assertEqual(runs.summaries, [])

    def test_a_timeout_in_one_run_fails_that_tool_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            fakes = Fakes(tmp)
            # limit: timeout x 3 = 1.5 s; the others end after 0.2 s
            runs = self.assert_same_as_serial(
                fakes, ["memcheck", "racecheck"], timeout=0.5, sleep="0.2",
                plan={"memcheck:lab99_tests_student": "hang"})
            self.assertEqual([(s.tool, s.ok, s.complete) for s in runs.summaries],
                             [("memcheck", False, False), ("racecheck", True, True)])
            self.assertTrue(runs.details["memcheck:tests_student"].startswith("timed out"))
            self.assertEqual(runs.details["memcheck:hidden_student"], "exit status 0")


CASES = {
    "lab99_tests_student": [["host one", ["lab99", "host"], "pass"],
                            ["gpu one", ["lab99", "gpu"], "slow"],
                            ["gpu crash", ["lab99", "gpu"], "crash"],
                            ["gpu two", ["lab99", "gpu"], "fail"]],
    "lab99_hidden_student": [["hidden host", ["lab99", "host", "hidden"], "fail"],
                             ["hidden gpu", ["lab99", "gpu", "hidden"], "slow"],
                             ["hidden gpu two", ["lab99", "gpu", "hidden"], "pass"]],
}


def canonical(cases: dict) -> list[Case]:
    return [Case(name, tuple(tags)) for table in cases.values() for name, tags, _ in table]


class TestLayersTest(unittest.TestCase):
    def grade(self, fakes: Fakes, n_cpus: int, cases: dict = CASES, timeout: float = 30
              ) -> tuple[tests_stage.TestRuns, list[str], list[str], float]:
        fakes.reset()
        events: list[str] = []

        @contextlib.contextmanager
        def section(stage):
            events.append(f"enter {stage} after {len(fakes.trace.read_text().splitlines())}")
            yield
            events.append(f"leave {stage} after {len(fakes.trace.read_text().splitlines())}")

        logged: list[str] = []
        job = SimpleNamespace(
            trees=SimpleNamespace(run_env=fakes.env(cases=cases), identity=None,
                                  src=fakes.dir / "src"),
            seed=7, test_timeout=timeout, has_gpu=True, gpu_section=section, costs=Meter(),
            say=lambda text: None, log=logged.append, lab=SimpleNamespace(folder="99_fake"))
        place = RunPlace(fakes.run_dir, None, {"tests_student": fakes.tests,
                                               "hidden_student": fakes.hidden})
        start = time.monotonic()
        with cpus(n_cpus):
            found = tests_stage.run(job, place, canonical(cases))
        return found, logged, events, time.monotonic() - start

    def test_the_binaries_of_a_layer_run_together_as_if_one_after_another(self):
        with tempfile.TemporaryDirectory() as tmp:
            fakes = Fakes(tmp)
            found, logged, events, _ = self.grade(fakes, 2)
            # the host layer (2 processes) before the GPU section; the GPU layer (tests:
            # the layer, then the crashed binary's two re-runs; hidden: one) inside it
            self.assertEqual(events, ["enter tests after 4", "leave tests after 10"])
            trace = fakes.trace.read_text().splitlines()
            self.assertTrue(all("~[gpu]" in line for line in trace[:4]))
            self.assertTrue(all("~[gpu]" not in line for line in trace[4:]))
            files = sorted(f.name for f in fakes.run_dir.iterdir())
            serial, serial_logged, serial_events, _ = self.grade(fakes, 1)
            self.assertEqual(files, sorted(f.name for f in fakes.run_dir.iterdir()))
            self.assertEqual(events, serial_events)

            def plain(runs):
                return [(k, v.name, v.tags, v.status, v.messages, v.binary)
                        for k, v in runs.items()]

            self.assertEqual(plain(found.runs), plain(serial.runs))
            self.assertEqual(found.log, serial.log)
            self.assertEqual([b.splitlines()[0] for b in logged],
                             [b.splitlines()[0] for b in serial_logged])
        self.assertEqual(list(found.runs), ["host one", "hidden host", "gpu one", "gpu crash",
                                            "gpu two", "hidden gpu", "hidden gpu two"])
        self.assertEqual([r.status for r in found.runs.values()],
                         ["passed", "failed", "passed", "crashed", "failed", "passed",
                          "passed"])
        self.assertEqual(found.runs["gpu crash"].messages[0],
                         "the test process crashed (SIGSEGV) while running this case")
        self.assertEqual(found.log, ["lab99_tests_student [gpu]: crashed (SIGSEGV); re-running "
                                     "the remaining cases one per process"])
        self.assertEqual([b.splitlines()[0] for b in logged], [
            "----- 99_fake: host tests (lab99_tests_student) output -----",
            "----- 99_fake: host tests (lab99_hidden_student) output -----",
            "----- 99_fake: gpu tests (lab99_tests_student) output -----",
            "----- 99_fake: gpu tests (lab99_hidden_student) output -----"])
        self.assertEqual(files, [])  # reports came through pipes; the folders are removed

    def test_two_binaries_of_one_second_take_less_than_two(self):
        cases = {"lab99_tests_student": [["a", ["lab99", "gpu"], "slow"]],
                 "lab99_hidden_student": [["b", ["lab99", "gpu", "hidden"], "slow"]]}
        with tempfile.TemporaryDirectory() as tmp:
            fakes = Fakes(tmp)
            found, _, _, seconds = self.grade(fakes, 2, cases)
            self.assertEqual(most_at_once(fakes.trace), 2)
            self.assertLess(seconds, 1.8)
            self.assertEqual([r.status for r in found.runs.values()], ["passed", "passed"])

    def test_a_hang_in_one_binary_costs_its_case_only(self):
        cases = {"lab99_tests_student": [["a", ["lab99", "gpu"], "pass"],
                                         ["b", ["lab99", "gpu"], "hang"]],
                 "lab99_hidden_student": [["c", ["lab99", "gpu", "hidden"], "pass"]]}
        with tempfile.TemporaryDirectory() as tmp:
            fakes = Fakes(tmp)
            found, _, _, seconds = self.grade(fakes, 2, cases, timeout=2)
        self.assertEqual({k: r.status for k, r in found.runs.items()},
                         {"a": "passed", "b": "timeout", "c": "passed"})
        self.assertEqual(found.runs["b"].messages[0], "the test process timed out after 2 s "
                         "(all its processes were killed) while running this case")
        self.assertLess(seconds, 6)  # the hang: 2 s, and 2 s re-run alone; c alongside

    def test_an_interrupt_stops_every_run_and_thread(self):
        cases = {"lab99_tests_student": [["a", ["lab99", "gpu"], "hang"]],
                 "lab99_hidden_student": [["b", ["lab99", "gpu", "hidden"], "hang"]]}
        if threading.current_thread() is not threading.main_thread():
            self.skipTest("signals reach the main thread only")
        saved = signal.signal(signal.SIGINT, interrupt_handler)
        timer = threading.Timer(0.7, os.kill, (os.getpid(), signal.SIGINT))
        try:
            with tempfile.TemporaryDirectory() as tmp:
                fakes = Fakes(tmp)
                timer.start()
                start = time.monotonic()
                with self.assertRaises(Interrupted):
                    self.grade(fakes, 2, cases)
                self.assertLess(time.monotonic() - start, 5)
                # What has ended may stay listed a moment longer (a loaded machine): wait a
                # little, then nothing may be left running.
                deadline = time.monotonic() + 2
                while time.monotonic() < deadline and (sandbox._live or [
                        t for t in threading.enumerate()
                        if t.name.startswith("cml-run-") and t.is_alive()]):
                    time.sleep(0.05)
                self.assertFalse([t for t in threading.enumerate()
                                  if t.name.startswith("cml-run-") and t.is_alive()])
                self.assertEqual(sandbox._live, set())
                # both hung binaries had started; nothing runs or starts afterwards
                trace = fakes.trace.read_text()
                self.assertEqual(trace.count("start lab99_tests_student [gpu]"), 1)
                self.assertEqual(trace.count("start lab99_hidden_student [gpu]"), 1)
                time.sleep(0.6)
                self.assertEqual(fakes.trace.read_text(), trace)
        finally:
            timer.cancel()
            signal.signal(signal.SIGINT, saved)


if __name__ == "__main__":
    unittest.main()
