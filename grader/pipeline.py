"""Grading one submission: build it in a private tree, check it statically, run its tests,
measure it, and score it with the lab's rubric into one GradeResult (grader/README.md,
"What is graded, in order").

Only the files listed in a lab's grading.toml come from the submission; everything else is
the grader's own pristine copy. A lab that does not compile gets its errors as its result
and the other labs are still graded. Without a CUDA device the GPU parts are "not graded"
and earn nothing; a missing or refused tool makes its part "not measured".
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ContextManager

from . import leaks, measure, sandbox, static_checks, workspace
from .gpu import no_lock
from .paths import ROOT, LabPaths
from .result import (CRASHED, FAILED, GRADED, NOT_GRADED, NOT_RUN, PASSED, GradeResult,
                     LabResult, PartResult, TestResult)
from .rubric import Rubric, RubricError, load_rubric
from .scoring import (grade_totals, group_points, lab_totals, leave_out_unmeasured,
                      not_graded_reason)
from .testrun import Case, Runner, list_cases
from .tools import find_catch2, probe_toolchain, query_gpus

GRADER_VERSION = "0.1.0"
HOST_SPEC, GPU_SPEC = "~[gpu]", "[gpu]"
# A lab's test layer, and its GPU measurements together, get this many test timeouts
# (the rubric's test_timeout_s) at most: honest code needs a fraction of one.
STAGE_BUDGET = 3


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived while grading; what is known so far is still written."""


def new_seed() -> int:
    """A fresh input seed (printed with every result, so a run can be repeated)."""
    return random.randrange(1, 2**31)


@dataclass
class Options:
    submission: Path
    labs: list[LabPaths]
    seed: int = field(default_factory=new_seed)
    work_dir: Path | None = None  # kept (and reused) when given; else a temporary folder
    source_root: Path = ROOT  # the pristine tree: the grader's own checkout
    build_timeout: float | None = None  # overrides the rubric's
    test_timeout: float | None = None
    gpu: bool | None = None  # None: detect; False: grade as if there were no GPU
    progress: Callable[[str], None] | None = None
    gpu_section: Callable[[str], ContextManager[None]] = no_lock  # grader/gpu.py


def _say(opts: Options, text: str) -> None:
    if opts.progress:
        opts.progress(text)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def new_result(opts: Options) -> GradeResult:
    tc = probe_toolchain()
    catch_version, _ = find_catch2()
    tools = dict(tc.versions)
    tools["catch2"] = catch_version
    return GradeResult(submission=str(opts.submission), seed=opts.seed,
                       created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                       grader_version=GRADER_VERSION, device=None, tools=tools)


def grade(opts: Options, result: GradeResult | None = None) -> GradeResult:
    """Grades `opts.labs` of `opts.submission`. Fills `result` (made here if None) as it
    goes, so a caller that is interrupted can still write what is known."""
    result = result or new_result(opts)
    gpus, why_no_gpu = query_gpus() if opts.gpu is not False else ([], "GPU use turned off")
    if gpus:
        result.device = gpus[0].as_dict()
        if len(gpus) > 1:
            result.device["others"] = [g.name for g in gpus[1:]]
    keep = opts.work_dir is not None
    work = Path(opts.work_dir or tempfile.mkdtemp(prefix="cml-grade-")).resolve()
    try:
        _grade_in(work, opts, result, bool(gpus) if opts.gpu is None else bool(opts.gpu and gpus),
                  why_no_gpu)
    finally:
        grade_totals(result)
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return result


def _grade_in(work: Path, opts: Options, result: GradeResult, has_gpu: bool,
              why_no_gpu: str) -> None:
    identity = sandbox.unprivileged_identity()
    isolation = sandbox.isolation()
    result.sandbox = isolation.as_dict()
    if not isolation.jailed:
        _say(opts, f"warning: student code is not jailed: {isolation.why}")
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    if identity is not None:
        closed = sandbox.reachable_by_others(work.parent)
        if closed is not None:
            result.errors.append(f"the work folder {work} cannot be reached by the user "
                                 f"'{identity.name}' that runs student code ({closed} is "
                                 "closed to others): choose a --work-dir under an open folder")
            return
    # Three trees: src and build are the grader's (solutions and hidden tests included);
    # the student's file is compiled alone in student-src / student-build, which hold
    # neither, and src's build only links the library made there.
    src, build = work / "src", work / "build"
    student_src, student_build = work / "student-src", work / "student-build"
    home = sandbox.make_shared_dir(work / "home", identity)
    build_env = workspace.default_env(work / "build-home")
    (work / "build-home").mkdir(exist_ok=True)
    student_env = dict(build_env)
    run_env = sandbox.scrubbed_env(home)
    if isolation.jailed:  # a jail has a private /tmp and nothing else to write to
        student_env.update(HOME="/tmp", TMPDIR="/tmp")
        run_env.update(HOME="/tmp", TMPDIR="/tmp")
    if not has_gpu:
        run_env["CUDA_VISIBLE_DEVICES"] = ""  # the test main then skips [gpu] cases

    try:
        tree = workspace.submission_tree(opts.submission, work / "submission")
    except (OSError, RuntimeError, subprocess.SubprocessError) as err:
        result.errors.append(f"cannot read the submission: {err}")
        return

    _say(opts, "copying the pristine tree")
    if src.exists() and (src / "solutions").exists():
        (src / "solutions").chmod(0o755)
    workspace.copy_pristine(opts.source_root, src, opts.labs)
    shutil.rmtree(student_src, ignore_errors=True)  # nothing of an earlier submission stays
    workspace.copy_student_tree(opts.source_root, student_src, opts.labs)
    sandbox.make_shared_dir(student_build, identity)

    rubrics: dict[str, Rubric] = {}
    for lab in opts.labs:
        try:
            rubrics[lab.folder] = load_rubric(LabPaths(lab.folder, lab.number, lab.topic, src))
        except (RubricError, OSError) as err:
            result.errors.append(f"{lab.folder}: {err}")
    labs = [lab for lab in opts.labs if lab.folder in rubrics]

    missing: dict[str, list[str]] = {}
    student_paths: dict[str, dict[str, str]] = {}
    for lab in labs:
        rubric = rubrics[lab.folder]
        problems = []
        for rel in rubric.student_files:
            problem = workspace.place_student_file(tree, rel, student_src)
            if problem:
                problems.append(problem)
        missing[lab.folder] = problems
        student_paths[lab.folder] = {str(student_src / rel): rel for rel in rubric.student_files}

    if not labs:
        return
    student = _StudentBuild(student_src, student_build, student_env, identity,
                            workspace.student_jail(student_src, student_build))
    timeout = max(opts.build_timeout or rubrics[lab.folder].build_timeout_s for lab in labs)
    _say(opts, "configuring (CMake)")
    configured = workspace.cmake_configure(src, build, labs, timeout, build_env,
                                           [f"-DCML_STUDENT_BUILD={student_build}"])
    if configured.ok:
        # The student's tree is built for exactly the GPU architectures of the grader's.
        arch = workspace.cache_value(build, "CMAKE_CUDA_ARCHITECTURES") or "75"
        configured = workspace.cmake_configure(
            student_src, student_build, labs, timeout, student_env,
            ["-DCML_BUILD_TESTS=OFF", f"-DCMAKE_CUDA_ARCHITECTURES={arch}",
             "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
            identity=identity, jail=student.jail)
    if not configured.ok:
        result.errors.append("CMake could not configure the pristine tree: "
                             + " | ".join(configured.errors or [configured.log_tail[-500:]]))
        for lab in labs:
            result.labs.append(_failed_lab(lab, rubrics[lab.folder], "The grader could not "
                                           "configure the build; nothing was graded."))
        return

    for lab in labs:
        rubric = rubrics[lab.folder]
        lab_result = LabResult(lab.folder, rubric.title, 0.0, rubric.max_points)
        result.labs.append(lab_result)
        start = time.monotonic()
        try:
            _grade_lab(lab, rubric, lab_result, opts, result, work, src, build, build_env,
                       run_env, identity, has_gpu, why_no_gpu, missing[lab.folder],
                       student_paths[lab.folder], student)
        except Interrupted:
            _finish_unfinished(lab_result, rubric, "grading was interrupted")
            result.errors.append(f"{lab.folder}: grading was interrupted")
            raise
        except Exception as err:  # the grader's own failure: say so, grade the other labs
            result.errors.append(f"{lab.folder}: the grader failed: {type(err).__name__}: {err}")
            _finish_unfinished(lab_result, rubric, "the grader failed on this lab")
        finally:
            lab_result.wall_seconds = round(time.monotonic() - start, 2)
            leaks.Secrets.of_lab(src, lab.folder, [work, opts.source_root, ROOT]) \
                .scrub_lab(lab_result)
            leave_out_unmeasured(lab_result)
            lab_totals(lab_result)


@dataclass
class _StudentBuild:
    """Where and how the student's file is compiled: its own trees, in a jail."""

    src: Path
    build: Path
    env: dict[str, str]
    identity: sandbox.Identity | None
    jail: sandbox.Jail


def _failed_lab(lab: LabPaths, rubric: Rubric, reason: str) -> LabResult:
    lab_result = LabResult(lab.folder, rubric.title, 0.0, rubric.max_points)
    _finish_unfinished(lab_result, rubric, reason)
    lab_totals(lab_result)
    return lab_result


def _rubric_parts(rubric: Rubric) -> list[tuple[str, str, float]]:
    parts = [("correctness", g.name, g.points) for g in rubric.correctness]
    if rubric.memory_safety:
        parts.append(("memory_safety", "Memory safety", rubric.memory_safety.points))
    if rubric.performance:
        parts.append(("performance", "Performance", rubric.performance.points))
    parts += [("metric", m.name, m.points) for m in rubric.metrics]
    return parts


def _finish_unfinished(lab_result: LabResult, rubric: Rubric, reason: str,
                       status: str = GRADED) -> None:
    """Every rubric part not yet in the result, at zero points with `reason`."""
    have = {(p.kind, p.name) for p in lab_result.parts}
    for kind, name, points in _rubric_parts(rubric):
        if (kind, name) not in have:
            lab_result.parts.append(PartResult(kind, name, status, 0.0, points, reason))


def _grade_lab(lab: LabPaths, rubric: Rubric, lab_result: LabResult, opts: Options,
               result: GradeResult, work: Path, src: Path, build: Path,
               build_env: dict[str, str], run_env: dict[str, str],
               identity: sandbox.Identity | None, has_gpu: bool, why_no_gpu: str,
               missing: list[str], student_paths: dict[str, str],
               student: _StudentBuild) -> None:
    srclab = LabPaths(lab.folder, lab.number, lab.topic, src)
    has_public = any(srclab.lab_dir.glob("tests/*.c*"))
    has_hidden = any(srclab.solution_dir.glob("tests/*.c*"))
    has_bench = any(srclab.lab_dir.glob("bench/*.c*"))
    build_timeout = opts.build_timeout or rubric.build_timeout_s
    test_timeout = opts.test_timeout or rubric.test_timeout_s

    # 1. The reference's targets (the grader's own code) first, then the student's. A
    # student's copy has no solutions/: no reference, so speed against it is not measured.
    has_solution = srclab.solution_file.is_file()
    ref_targets = [f"{lab.tag}_tests_solution"] if has_public and has_solution else []
    ref_targets += ([f"{lab.tag}_bench_solution"]
                    if has_bench and rubric.performance and has_solution else [])
    if ref_targets:
        _say(opts, f"{lab.folder}: building the reference")
        ref_build = workspace.cmake_build(build, ref_targets, max(build_timeout, 600), build_env)
        if not ref_build.ok:
            raise RuntimeError("the reference solution did not build: "
                               + " | ".join(workspace.compile_errors(ref_build.log_tail, {})[:3]
                                            or [ref_build.log_tail[-400:]]))
    if missing:
        reason = "No submission for this lab: " + "; ".join(missing) + "."
        lab_result.parts.append(PartResult("build", "Build", GRADED, 0.0, 0.0, reason))
        lab_result.build = {"ok": False, "seconds": 0.0, "errors": missing}
        _finish_unfinished(lab_result, rubric, reason)
        return

    # 2. The student's file alone, in its jail, as the unprivileged user: a tree with no
    # solutions/ and no hidden tests, so nothing of them can be included or embedded.
    _say(opts, f"{lab.folder}: building your code")
    built = workspace.cmake_build(student.build, [f"{lab.tag}_student"], build_timeout,
                                  student.env, identity=student.identity, jail=student.jail)
    violations: list[static_checks.Violation] = []
    if built.ok:
        # 3. The grader's tests and bench linked with the student's library (no student
        # source is compiled here; linking runs none of it).
        targets = [f"{lab.tag}_tests_student"] if has_public else []
        targets += [f"{lab.tag}_hidden_student"] if has_hidden else []
        targets += [f"{lab.tag}_bench_student"] if has_bench else []
        linked = workspace.cmake_build(build, targets, build_timeout, build_env) if targets \
            else built
        # 4. Static checks, before any of it runs (also when linking failed: a definition
        # that collides with the harness is better named by the check than by the linker).
        violations = _static(lab, rubric, student, build, lab_result)
        if violations is None:
            return
        if targets:
            built = workspace.BuildOutcome(linked.ok, built.seconds + linked.seconds,
                                           linked.timed_out, [], linked.log_tail)
        if violations:
            lab_result.build = {"ok": built.ok, "seconds": round(built.seconds, 1),
                                "timed_out": built.timed_out, "errors": []}
            lab_result.parts.insert(0, PartResult("build", "Build", GRADED, 0.0, 0.0, "",
                                                  {"seconds": round(built.seconds, 1)}))
            text = "; ".join(v.describe() for v in violations[:5])
            _finish_unfinished(lab_result, rubric, "Zero: a static check failed, so your "
                               f"code was not run ({text}).")
            return
    errors = workspace.compile_errors(built.log_tail, student_paths) if not built.ok else []
    lab_result.build = {"ok": built.ok, "seconds": round(built.seconds, 1),
                        "timed_out": built.timed_out, "errors": errors}
    if not built.ok:
        if built.timed_out:
            reason = (f"The build did not finish within {build_timeout:g} s (compile-time "
                      "recursion or a huge unrolled loop?), so nothing that needs it was graded.")
        else:
            reason = "Your code does not compile:\n" + "\n".join(
                errors or [_without_paths(built.log_tail.strip()[-800:], work)])
        lab_result.parts.insert(0, PartResult("build", "Build", GRADED, 0.0, 0.0, reason,
                                              {"errors": errors, "timed_out": built.timed_out}))
        _finish_unfinished(lab_result, rubric, "Not graded: the build failed (see Build).")
        return
    lab_result.parts.insert(0, PartResult("build", "Build", GRADED, 0.0, 0.0, "",
                                          {"seconds": round(built.seconds, 1)}))
    binaries = {k: workspace.binary(build, lab, k) for k in
                ("tests_student", "hidden_student", "bench_student", "tests_solution",
                 "bench_solution")}
    for kind in ("tests_student", "hidden_student", "bench_student"):
        if binaries[kind]:
            lab_result.binaries[binaries[kind].name] = sha256(binaries[kind])

    # 5. Lock the reference away; the student's code runs as another user from here on.
    # The case list comes from the reference's binary (public + hidden); a student's copy
    # has no solutions/, so there the public binary lists its own cases.
    lister = binaries["tests_solution"] or binaries["tests_student"]
    canonical = list_cases(lister, run_env) if lister else []
    if identity is not None:
        workspace.lock_down(src, build, [lab])
    run_dir = work / "run" / lab.folder
    shutil.rmtree(run_dir, ignore_errors=True)  # never read a report left by an earlier run
    sandbox.make_shared_dir(run_dir, identity)
    # Every run of the student's code: in a jail that holds only its binaries (at
    # /cml/bin), this run folder (at /cml/run) and, for GPU work, the device nodes.
    jail = sandbox.Jail(gpu=has_gpu).add(run_dir, sandbox.JAIL_ROOT + "/run", writable=True)
    for kind in ("tests_student", "hidden_student", "bench_student"):
        if binaries[kind]:
            jail.add(binaries[kind], f"{sandbox.JAIL_ROOT}/bin/{binaries[kind].name}")
    runner = Runner(run_dir, run_env, identity, opts.seed, test_timeout, jail=jail)
    runs: dict[str, object] = {}
    layers = [("host", HOST_SPEC)] + ([("gpu", GPU_SPEC)] if has_gpu else [])
    for layer, spec in layers:
        # Each layer, and the GPU measurements after it, within a time limit of its own.
        runner.deadline = time.monotonic() + STAGE_BUDGET * test_timeout
        for kind in ("tests_student", "hidden_student"):
            binary = binaries[kind]
            if binary is None:
                continue
            expected = [c for c in canonical if c.matches(spec)
                        and (c.hidden == (kind == "hidden_student"))]
            if not expected:
                continue
            _say(opts, f"{lab.folder}: running {layer} tests ({binary.name})")
            found, _outcome = runner.run_layer(binary, spec, expected)
            runs.update(found)

    for run in runs.values():
        run.messages = _shown_messages(run.messages, "hidden" in run.tags, src)
    full_groups = _correctness(rubric, canonical, runs, lab_result, has_gpu, why_no_gpu)
    if runner.log:
        lab_result.build["test_runs"] = runner.log

    # 4-5. GPU measurements.
    if not has_gpu:
        for kind, name, points in _rubric_parts(rubric):
            if kind != "correctness":
                lab_result.parts.append(PartResult(kind, name, NOT_GRADED, 0.0, points,
                                                   not_graded_reason(kind),
                                                   {"why": why_no_gpu}))
        return
    ctx = measure.Context(run_dir, run_env, identity, opts.seed, test_timeout,
                          lambda k: binaries.get(k), [0], jail=jail,
                          deadline=time.monotonic() + STAGE_BUDGET * test_timeout)
    if rubric.memory_safety:
        _say(opts, f"{lab.folder}: compute-sanitizer")
        spec = rubric.memory_safety.tests
        kinds = [(k, spec) for k in ("tests_student", "hidden_student")
                 if any(c.matches(spec) and c.hidden == (k == "hidden_student")
                        for c in canonical)]
        gate = memory_safety_gate(canonical, runs, spec)
        if gate:
            lab_result.parts.append(PartResult("memory_safety", "Memory safety", GRADED, 0.0,
                                               rubric.memory_safety.points, gate))
        else:
            lab_result.parts.append(measure.memory_safety(rubric, ctx, kinds))
    if rubric.performance:
        _say(opts, f"{lab.folder}: timing the bench (yours and the reference)")
        part, timing = measure.performance(rubric, ctx, full_groups)
        lab_result.parts.append(part)
        lab_result.timing = timing
        if timing and timing.get("device") and result.device is not None:
            result.device.setdefault("bench", timing["device"])
    for metric in rubric.metrics:
        _say(opts, f"{lab.folder}: profiling ({metric.name[:40]})")
        lab_result.parts.append(measure.metric_part(metric, ctx, full_groups))


def _without_paths(text: str, work: Path) -> str:
    """A log excerpt without the grader's folders in it."""
    return text.replace(str(work) + os.sep, "").replace(str(ROOT) + os.sep, "")


def _shown_messages(messages: list[str], hidden: bool, src: Path) -> list[str]:
    """Messages as the student may see them: work-tree paths made relative; for hidden
    tests, no line of the hidden test's source (only what the checks themselves report)."""
    prefix = str(src) + os.sep
    shown = []
    for msg in messages:
        if hidden and (prefix + "solutions" in msg or "solutions/" in msg.split(":", 1)[0]):
            continue
        shown.append(msg.replace(prefix, ""))
    if hidden and len(shown) < len(messages):
        shown.append("(the hidden test's own source lines are not shown)")
    return shown


def memory_safety_gate(canonical: list[Case], runs: dict, spec: str) -> str:
    """Why memory safety earns nothing before the sanitizer runs, or "" when it may: a
    kernel that does nothing is trivially clean, so the checked cases must pass first."""
    cases = [c for c in canonical if c.matches(spec)]
    failing = [c.name for c in cases if getattr(runs.get(c.name), "status", None) != PASSED]
    if not cases:
        return f"No test case matches '{spec}' (a rubric problem)."
    if failing:
        return ("No memory-safety points: the cases checked under compute-sanitizer must "
                "pass first (a kernel that writes nothing is trivially clean); failing: "
                + "; ".join(failing[:3]) + ".")
    return ""


def _static(lab: LabPaths, rubric: Rubric, student: _StudentBuild, build: Path,
            lab_result: LabResult) -> list[static_checks.Violation] | None:
    """The allow-lists (grader/static_checks.py) on the student's object and preprocessed
    file. The preprocessing runs the compiler on the student's source, so it runs in the
    student's jail. A check the grader cannot make is the grader's failure, never a pass."""
    details: dict = {}
    violations: list[static_checks.Violation] = []
    rules = static_checks.load_rules(lab.folder, rubric.static)
    obj = workspace.object_file(student.build, lab)
    reference = workspace.object_file(build, lab, "solution")
    jailed = sandbox.isolation().jailed
    inside_src = Path(sandbox.JAIL_ROOT + "/src") if jailed else student.src
    rel = f"labs/{lab.folder}/{lab.topic}.cu"
    cmd = static_checks.compile_command_from_db(student.build, inside_src / rel)
    if obj is None or cmd is None:
        raise RuntimeError("the static check found no object or compile command for "
                           f"{rel} (student build tree incomplete)")

    def run(argv: list[str]) -> tuple[int | None, str]:
        out = sandbox.run(argv, cwd=student.build, timeout=300, env=student.env,
                          identity=student.identity, jail=student.jail)
        return (None if out.timed_out else out.returncode), out.output_tail

    scratch = student.build / "static" / lab.folder
    shutil.rmtree(scratch, ignore_errors=True)
    sandbox.make_shared_dir(scratch.parent, student.identity)
    sandbox.make_shared_dir(scratch, student.identity)
    try:
        text = (student.src / rel).read_text(errors="replace")
        violations = static_checks.check_submission(
            obj, reference, cmd, rules, str(inside_src), rel,
            run, scratch, static_checks.harness_objects(build, lab.folder, lab.tag), text)
    except static_checks.CheckError as err:
        raise RuntimeError(f"the static check could not be made: {err}") from err
    details["violations"] = [v.describe() for v in violations]
    details["allowed"] = rules.summary
    reason = ""
    if violations:
        reason = ("Not allowed in this lab, so correctness (and everything that depends on "
                  "it) scores zero: " + "; ".join(v.describe() for v in violations[:5])
                  + (f" (and {len(violations) - 5} more)" if len(violations) > 5 else ""))
    lab_result.parts.append(PartResult("static", "Static checks", GRADED, 0.0, 0.0, reason,
                                       details))
    return violations


def _correctness(rubric: Rubric, canonical: list[Case], runs: dict, lab_result: LabResult,
                 has_gpu: bool, why_no_gpu: str) -> set[str]:
    """Groups scored from the case results; returns the names of groups at full marks."""
    full: set[str] = set()
    assigned: set[str] = set()
    for group in rubric.correctness:
        cases = [c for c in canonical if c.matches(group.tests)]
        gpu_cases = [c for c in cases if "gpu" in c.tags]
        passed = [c for c in cases if getattr(runs.get(c.name), "status", None) == PASSED]
        share = group.points / len(cases) if cases else 0.0
        for c in cases:
            if c.name in assigned:
                continue
            assigned.add(c.name)
            run = runs.get(c.name)
            if run is None:
                status = NOT_RUN
                msgs = ["not run: no CUDA device" if "gpu" in c.tags and not has_gpu
                        else "this case did not report a result"]
            else:
                status, msgs = run.status, list(run.messages)
            if status == FAILED and group.hint:
                msgs.append(f"hint: {group.hint}")
            lab_result.tests.append(TestResult(
                c.name, group.name, "gpu" if "gpu" in c.tags else "host", c.hidden, status,
                round(share, 4) if status == PASSED else 0.0, round(share, 4), msgs,
                getattr(run, "seconds", None)))
        details = {"passed": len(passed), "total": len(cases), "spec": group.tests}
        if not cases:
            lab_result.parts.append(PartResult("correctness", group.name, GRADED, 0.0,
                                               group.points, "No test case matches "
                                               f"'{group.tests}' (a rubric problem).", details))
            continue
        if gpu_cases and not has_gpu:
            host_passed = sum(1 for c in passed if "gpu" not in c.tags)
            details["host_passed"] = host_passed
            lab_result.parts.append(PartResult("correctness", group.name, NOT_GRADED, 0.0,
                                               group.points, not_graded_reason("correctness"),
                                               {**details, "why": why_no_gpu}))
            continue
        points = group_points(len(passed), len(cases), group.points)
        if len(passed) == len(cases):
            full.add(group.name)
        reason = ""
        if points < group.points:
            bad = [c.name for c in cases if c not in passed]
            reason = (f"{len(passed)} of {len(cases)} test cases pass; failing: "
                      + "; ".join(bad[:4]) + ("…" if len(bad) > 4 else ""))
            if group.hint:
                reason += f". Hint: {group.hint}"
        lab_result.parts.append(PartResult("correctness", group.name, GRADED, points,
                                           group.points, reason, details))
    return full


def interrupt_handler(signum, _frame) -> None:
    """Installed by the commands for SIGINT and SIGTERM: stop the children, unwind."""
    sandbox.kill_all()
    raise Interrupted(f"signal {signum}")


def version_info() -> dict[str, str]:
    return {"grader": GRADER_VERSION, "python": sys.version.split()[0]}
