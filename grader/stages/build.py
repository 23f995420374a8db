"""Build stages: the grader's reference targets, then the student's library (compiled alone
in its jail) linked with the grader's tests and bench."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .. import linking, workspace
from ..parts import performance
from ..parts.gates import BUILD
from ..paths import ROOT
from ..result import BuildRecord, PartResult
from .job import LabJob, StudentBuild

STUDENT_KINDS = ("tests_student", "hidden_student", "bench_student", "runner")
# The grader's own executables: the reference's, and the checkers that hold the tests when
# they run against the student's runner (common/include/cml/remote.hpp); none holds the
# student's code, so the reference cache keeps them.
REFERENCE_KINDS = ("tests_solution", "bench_solution", "checker", "hidden_checker",
                   "bench_checker")
KINDS = STUDENT_KINDS + REFERENCE_KINDS


def _has(job: LabJob, pattern: str, where: str = "lab") -> bool:
    folder = job.lab.lab_dir if where == "lab" else job.lab.solution_dir
    return any(folder.glob(pattern))


def _reference_targets(job: LabJob) -> list[str]:
    lab, tag = job.lab, job.lab.tag
    if lab.folder in job.trees.references or not lab.solution_file.is_file():
        return []
    targets = [f"{tag}_tests_solution"] if _has(job, "tests/*.c*") else []
    targets += _checker_targets(job)
    return targets + ([f"{tag}_bench_solution"] if _has(job, "bench/*.c*")
                      and performance.rules(job.rubric) else [])


def _checker_targets(job: LabJob) -> list[str]:
    """The lab's checkers, where it lists its interface for the runner: the tests' and, for a
    lab whose speed is graded, the bench's."""
    if not linking.runs_remote(job.lab):
        return []
    tag = job.lab.tag
    return [f"{tag}_checker"] + ([f"{tag}_hidden_checker"]
                                 if _has(job, "tests/*.c*", "solution") else []) + \
        ([f"{tag}_bench_checker"] if _has(job, "bench/*.c*") and performance.rules(job.rubric)
         else [])


def _linked_targets(job: LabJob) -> list[str]:
    """The student-linked targets the grade's tree builds (none for a lab linked from its
    cached entry)."""
    if job.lab.folder in job.trees.links:
        return []
    return [f"{job.lab.tag}_{kind}" for kind in linking.linked_kinds(job.lab)]


def _cached_links(jobs: list[LabJob]) -> dict[str, workspace.BuildOutcome]:
    """The student-linked executables of the labs whose entry holds their links, linked
    from it, every lab at once (grader/linking.py), each within its build time limit."""
    if not jobs:
        return {}
    trees = jobs[0].trees
    work = [(job.lab, trees.references[job.lab.folder].path, trees.links[job.lab.folder],
             job.build_timeout) for job in jobs if job.lab.folder in trees.links]
    return linking.link_labs(work, trees.build_env) if work else {}


def harness_tree(job: LabJob) -> Path:
    """The build tree holding the objects the student's code is linked with (the static
    checks' harness): the cached entry's for a lab linked from it, else the grade's."""
    if job.lab.folder in job.trees.links:
        return job.trees.references[job.lab.folder].build_dir
    return job.trees.build


def together(jobs: list[LabJob]) -> None:
    """Every lab of the submission in one build per tree, with every CPU the grade may use:
    the student's libraries in one build in the jail, then (the references not in the cache
    and) every student-linked target in one build of the grader's tree. Each lab's
    `prebuilt` is set only when both builds succeeded; otherwise nothing is set and each
    lab builds alone (build.student: the targets already made are up to date), so a
    compile error is still the lab's own, with its own time limit."""
    todo = [job for job in jobs if not job.missing]
    if len(todo) < 2:
        return
    trees = todo[0].trees
    timeout = max(job.build_timeout for job in todo)
    todo[0].say("building your code (every lab in one build)")
    libs = workspace.cmake_build(trees.student.build, [f"{j.lab.tag}_student" for j in todo],
                                 timeout, trees.student.env, identity=trees.student.identity,
                                 jail=trees.student.jail)
    if not libs.ok:
        return
    targets = [t for job in todo for t in _reference_targets(job) + _linked_targets(job)]
    linked = workspace.cmake_build(trees.build, targets, max(timeout, 600), trees.build_env) \
        if targets else workspace.BuildOutcome(True, 0.0)
    if not linked.ok:
        return
    cached = _cached_links(todo)
    if not all(outcome.ok for outcome in cached.values()):
        return
    seconds = libs.seconds + linked.seconds + max((o.seconds for o in cached.values()),
                                                  default=0.0)
    for job in todo:
        log = cached[job.lab.folder].log_tail if job.lab.folder in cached else linked.log_tail
        job.prebuilt = StudentBuild(True, workspace.BuildOutcome(True, seconds, False, [], log))


def reference(job: LabJob) -> None:
    """The reference's targets (the grader's own code), first. A student's copy has no
    solutions/: no reference, so speed against it is not measured. Raises RuntimeError when
    the reference does not build (the grader's failure, never the student's)."""
    lab, tag = job.lab, job.lab.tag
    if lab.folder in job.trees.references:
        return  # built once, in the reference cache (grader/refcache.py)
    has_solution = lab.solution_file.is_file()
    targets = [f"{tag}_tests_solution"] if _has(job, "tests/*.c*") and has_solution else []
    targets += _checker_targets(job) if has_solution else []
    targets += ([f"{tag}_bench_solution"] if _has(job, "bench/*.c*")
                and performance.rules(job.rubric) and has_solution else [])
    if not targets:
        return
    job.say(f"{lab.folder}: building the reference")
    built = workspace.cmake_build(job.trees.build, targets, max(job.build_timeout, 600),
                                  job.trees.build_env)
    if not built.ok:
        raise RuntimeError("the reference solution did not build: "
                           + " | ".join(workspace.compile_errors(built.log_tail, {})[:3]
                                        or [built.log_tail[-400:]]))


def student(job: LabJob) -> StudentBuild:
    """The student's file alone, in its jail, as the unprivileged user (a tree with no
    solutions/ and no hidden tests, so nothing of them can be included or embedded); then
    the grader's tests and bench linked with the library made there (no student source is
    compiled in the grader's tree; linking runs none of it)."""
    if job.prebuilt is not None:
        return job.prebuilt
    lab, trees, tag = job.lab, job.trees, job.lab.tag
    job.say(f"{lab.folder}: building your code")
    built = workspace.cmake_build(trees.student.build, [f"{tag}_student"], job.build_timeout,
                                  trees.student.env, identity=trees.student.identity,
                                  jail=trees.student.jail)
    compiled = built.ok
    # The whole compiler output of the student's own compile (its jail holds no solution and
    # no hidden test, so nothing of them is in it); a failed link says only its error lines.
    output = "" if compiled else compiler_output(built.log_tail, job.student_paths, trees.work)
    if compiled and lab.folder in trees.links:
        linked = _cached_links([job])[lab.folder]
        built = workspace.BuildOutcome(linked.ok, built.seconds + linked.seconds,
                                       linked.timed_out, [], linked.log_tail)
    elif compiled:
        targets = _linked_targets(job)
        if targets:
            linked = workspace.cmake_build(trees.build, targets, job.build_timeout,
                                           trees.build_env)
            built = workspace.BuildOutcome(linked.ok, built.seconds + linked.seconds,
                                           linked.timed_out, [], linked.log_tail)
    errors = workspace.compile_errors(built.log_tail, job.student_paths) if not built.ok else []
    job.log(f"----- {lab.folder}: build output ({'ok' if built.ok else 'FAILED'}) -----\n"
            + without_paths(built.log_tail, trees.work).rstrip())
    return StudentBuild(compiled, built, errors, output)


def quiet_part(built: StudentBuild) -> PartResult:
    """The Build part with nothing to say: the build passed, or a static violation (whose
    part speaks) stopped the lab whatever the linker said."""
    return BUILD.part("", {"seconds": round(built.outcome.seconds, 1)})


def part(job: LabJob, built: StudentBuild) -> PartResult:
    """The Build part (no points of its own): its reason says why the lab stopped."""
    outcome = built.outcome
    if outcome.ok:
        return quiet_part(built)
    # A file that compiled but leaves functions undefined (an empty or stub file) is told
    # which, not that it "does not compile" (issue 36, item 3).
    missing = workspace.link_problem(outcome.log_tail) if built.compiled else None
    if outcome.timed_out:
        reason = (f"The build did not finish within {job.build_timeout:g} s (compile-time "
                  "recursion or a huge unrolled loop?), so nothing that needs it was graded.")
    elif missing:
        reason = "Your code compiles, but " + missing
    else:
        reason = "Your code does not compile:\n" + "\n".join(
            built.errors or [without_paths(outcome.log_tail.strip()[-800:], job.trees.work)])
    return BUILD.part(reason, {"errors": built.errors, "timed_out": outcome.timed_out})


def no_submission_part(job: LabJob) -> tuple[PartResult, BuildRecord]:
    reason = "No submission for this lab: " + "; ".join(job.missing) + "."
    return BUILD.part(reason), BuildRecord(False, 0.0, list(job.missing))


def binaries(job: LabJob) -> dict[str, Path | None]:
    """The lab's executables by kind (tests_student, bench_solution...), None if not built."""
    found = {k: workspace.binary(job.trees.build, job.lab, k) for k in KINDS}
    cached = job.trees.references.get(job.lab.folder)
    if cached is not None:
        found.update({k: cached.binary(k) for k in REFERENCE_KINDS})
    return found


def reference_object(job: LabJob) -> Path | None:
    """The reference's compiled object (the lab's interface, for the static checks)."""
    cached = job.trees.references.get(job.lab.folder)
    if cached is not None:
        return cached.solution_object
    return workspace.object_file(job.trees.build, job.lab, "solution")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def compiler_output(log: str, student_paths: dict[str, str], work: Path) -> str:
    """A failed compile's output as the student reads it: their files by the names they
    submitted (labs/NN_topic/topic.cu), no folder of the grader's."""
    for full, short in student_paths.items():
        if full.endswith(short) and len(full) > len(short):
            log = log.replace(full[: -len(short)], "")
    return without_paths(log, work).strip()


def without_paths(text: str, work: Path) -> str:
    """A log excerpt without the grader's folders in it."""
    return text.replace(str(work) + os.sep, "").replace(str(ROOT) + os.sep, "")
