"""The stage that grades every GPU part: memory safety (compute-sanitizer), speed (the bench,
student and reference) and profiler metrics (ncu), each measured by its tool's module of
grader/measure/ inside the GPU section, scored by grader/scoring.py. Only with a CUDA
device."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import replace
from typing import Iterator

from .. import measured_parts, scoring
from ..measure import Context, bench, profiler, sanitizer
from ..result import LabResult, PartResult
from .job import STAGE_BUDGET, LabJob
from .tests import TEST_KINDS, RunPlace, TestRuns


@contextmanager
def _section(job: LabJob, stage: str, ctx: Context) -> Iterator[None]:
    """The GPU section of `stage`; time spent waiting to enter it (another grader's GPU
    work) does not count against the lab's GPU time."""
    asked = time.monotonic()
    with job.costs.stage(stage), job.gpu_section(stage):
        ctx.deadline += time.monotonic() - asked
        yield


def run(job: LabJob, place: RunPlace, tested: TestRuns, full_groups: set[str],
        out: LabResult) -> None:
    """Each GPU part, scored, into `out` as soon as it is known (a later stage's failure
    keeps what came before); the bench's Timing record into out.timing."""
    rubric, trees = job.rubric, job.trees
    ctx = Context(place.run_dir, trees.run_env, trees.identity, job.seed,
                               job.test_timeout, place.binaries.get, jail=place.jail,
                               deadline=time.monotonic() + STAGE_BUDGET * job.test_timeout,
                               has_reference=job.lab.solution_dir.is_dir(),
                               remote=place.remote)
    folder = job.lab.folder
    ms = rubric.memory_safety
    if ms:
        job.say(f"{folder}: compute-sanitizer")
        kinds = [(k, ms.tests) for k in TEST_KINDS
                 if any(c.matches(ms.tests) and c.runs_in(k)
                        for c in tested.canonical)]
        gate = measured_parts.memory_safety_gate(tested.canonical, tested.runs, ms.tests)
        runs = None
        if not gate:
            with _section(job, "sanitizer", ctx):
                runs = sanitizer.memory_safety(ms, ctx, kinds)
        out.parts.append(measured_parts.memory_safety_part(ms, runs, gate))
    perf = rubric.performance
    if perf:
        job.say(f"{folder}: timing the bench (yours and the reference)")
        with _section(job, "bench", ctx):
            timed = bench.performance(perf, ctx)
        part = measured_parts.performance_part(perf, timed, full_groups)
        out.parts.append(part)
        out.timing = timed.timing
        if rubric.stretch:
            out.parts.append(_stretch(job, ctx, tested, full_groups, timed))
    if rubric.metrics:
        job.say(f"{folder}: profiling ({len(rubric.metrics)} metric(s), one pass)")
        with _section(job, "profiler", ctx):
            found = profiler.metrics(rubric.metrics, ctx)
        for entry, measured in zip(rubric.metrics, found):
            out.parts.append(measured_parts.metric_part(entry, measured, full_groups))


def _stretch(job: LabJob, ctx: Context, tested: TestRuns, full_groups: set[str],
             timed: bench.BenchRuns) -> PartResult:
    """The [stretch] part: its speed comes from the bench run above; its sanitizer cases
    run here, under the [memory_safety] tools, once its `requires` groups are at full marks."""
    stretch, ms = job.rubric.stretch, job.rubric.memory_safety
    assert stretch is not None  # called for a rubric with [stretch] only
    found = None
    if stretch.sanitizer_tests and ms and not scoring.missing_groups(stretch.requires,
                                                                     full_groups):
        spec = stretch.sanitizer_tests
        kinds = [(k, spec) for k in TEST_KINDS
                 if any(c.matches(spec) and c.runs_in(k)
                        for c in tested.canonical)]
        job.say(f"{job.lab.folder}: compute-sanitizer ({spec})")
        with _section(job, "sanitizer", ctx):
            found = sanitizer.memory_safety(replace(ms, tests=spec), ctx, kinds)
    return measured_parts.stretch_part(stretch, timed, full_groups, found)
