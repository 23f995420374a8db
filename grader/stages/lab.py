"""One lab through every stage, into its LabResult: build (reference, then the student's),
static checks, tests, then every part of grader/parts/kinds.py measured and scored in
report order (correctness from the tests; with a GPU, memory safety, speed and the profiler
metrics, each inside its GPU section). A lab that stops early (no submission, no build, a
static violation) says why in `failure` and every part it did not reach scores zero with
that reason."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from ..measure import Context
from ..parts import kinds
from ..parts.base import NOT_SUBMITTED, PartContext
from ..result import (BUILD_TIMEOUT, COMPILE_ERROR, NO_SUBMISSION, STATIC_VIOLATION,
                      LabResult)
from . import build, static, tests
from .job import STAGE_BUDGET, LabJob
from .tests import RunPlace, TestRuns


# The labs of a grade are graded at the same time (pipeline.py); a build of a lab alone (the
# reference not cached, a lab the build of all together did not make) runs in the grade's
# shared trees, so those builds take turns.
_BUILDS = threading.Lock()


def grade_lab(job: LabJob, lab_result: LabResult) -> None:
    rubric = job.rubric
    with job.costs.stage("build"), _BUILDS:
        build.reference(job)
    if job.missing:
        part, lab_result.build = build.no_submission_part(job)
        lab_result.parts.append(part)
        lab_result.failure = NO_SUBMISSION
        kinds.finish_unfinished(lab_result, rubric, NOT_SUBMITTED)
        return

    with job.costs.stage("build"), _BUILDS:
        built = build.student(job)
    if built.compiled:
        # Before any of it runs (also when linking failed: a definition that collides with
        # the harness is better named by the check than by the linker).
        with job.costs.stage("static"):
            static_part, violations = static.check(job)
        lab_result.parts.append(static_part)
        if violations:
            lab_result.build = built.record(errors=[])
            lab_result.parts.insert(0, build.quiet_part(built))
            lab_result.failure = STATIC_VIOLATION
            kinds.finish_unfinished(lab_result, rubric, static.stopped_reason(violations))
            return
    lab_result.build = built.record()
    lab_result.parts.insert(0, build.part(job, built))
    if not built.outcome.ok:
        lab_result.failure = BUILD_TIMEOUT if built.outcome.timed_out else COMPILE_ERROR
        kinds.finish_unfinished(lab_result, rubric, "No points: the build failed, so "
                                   "this part could not run (see Build).")
        return

    binaries = build.binaries(job)
    for kind in build.STUDENT_KINDS:
        if binary := binaries[kind]:
            lab_result.binaries[binary.name] = build.sha256(binary)
    with job.costs.stage("tests"):
        place, canonical = tests.prepare(job, binaries)
        tested = tests.run(job, place, canonical)
    lab_result.build.test_runs = tested.log
    score_parts(job, place, tested, lab_result)


def score_parts(job: LabJob, place: RunPlace, tested: TestRuns, out: LabResult) -> None:
    """Each part of the registry, in report order, measured and scored into `out` as soon
    as it is known (a later part's failure keeps what came before). Without a CUDA device
    a GPU part's entries are "not graded"."""
    ctx = part_context(job, place, tested)
    for part in kinds.PARTS:
        if part.gpu and not ctx.has_gpu:
            out.parts += kinds.not_graded(part, job.rubric, job.why_no_gpu)
            continue
        measured = part.measure(ctx)
        if measured is None:
            continue
        ctx.measured[part.table] = measured
        out.parts += part.score(measured, ctx.full_groups)
        part.record(measured, ctx, out)


def part_context(job: LabJob, place: RunPlace, tested: TestRuns) -> PartContext:
    """What the parts are measured from. With a GPU, the measurements' Context: the lab's
    GPU time (STAGE_BUDGET test timeouts) counts from here, and the time a section waits to
    open (another grader's GPU work) is given back to it."""
    gpu = None
    if job.has_gpu:
        trees = job.trees
        gpu = Context(place.run_dir, trees.run_env, trees.identity, job.seed, job.test_timeout,
                      place.binaries.get, jail=place.jail,
                      deadline=time.monotonic() + STAGE_BUDGET * job.test_timeout,
                      has_reference=job.lab.solution_dir.is_dir(), remote=place.remote)

    @contextmanager
    def section(stage: str) -> Iterator[Any]:
        asked = time.monotonic()
        with job.costs.stage(stage), job.gpu_section(stage) as device:
            if gpu is not None:
                gpu.deadline += time.monotonic() - asked
            yield device

    return PartContext(job.rubric, job.lab.folder, tested.canonical, tested.runs, job.say,
                       section, gpu, job.why_no_gpu)
