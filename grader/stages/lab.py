"""One lab through every stage, into its LabResult: build (reference, then the student's),
static checks, tests, correctness scoring, and, with a GPU, the measurements. A lab that
stops early (no submission, no build, a static violation) says why in `failure` and every
part it did not reach scores zero with that reason."""

from __future__ import annotations

import threading

from .. import lab_parts
from ..result import (BUILD_TIMEOUT, COMPILE_ERROR, NO_SUBMISSION, STATIC_VIOLATION,
                      LabResult)
from . import build, gpu_parts, static, tests
from .job import LabJob


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
        lab_parts.finish_unfinished(lab_result, rubric, lab_parts.NOT_SUBMITTED)
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
            lab_parts.finish_unfinished(lab_result, rubric, static.stopped_reason(violations))
            return
    lab_result.build = built.record()
    lab_result.parts.insert(0, build.part(job, built))
    if not built.outcome.ok:
        lab_result.failure = BUILD_TIMEOUT if built.outcome.timed_out else COMPILE_ERROR
        lab_parts.finish_unfinished(lab_result, rubric, "No points: the build failed, so "
                                    "this part could not run (see Build).")
        return

    binaries = build.binaries(job)
    for kind in build.STUDENT_KINDS:
        if binary := binaries[kind]:
            lab_result.binaries[binary.name] = build.sha256(binary)
    with job.costs.stage("tests"):
        place, canonical = tests.prepare(job, binaries)
        tested = tests.run(job, place, canonical)
    scored = lab_parts.correctness(rubric, tested.canonical, tested.runs, job.has_gpu,
                                   job.why_no_gpu)
    lab_result.parts += scored.parts
    lab_result.tests += scored.tests
    lab_result.build.test_runs = tested.log

    if not job.has_gpu:
        lab_result.parts += lab_parts.not_graded_parts(rubric, job.why_no_gpu)
        return
    gpu_parts.run(job, place, tested, scored.full_groups, lab_result)

