"""The grade's trees, made once for every lab: the work folder, the submission as read, the
pristine copy (src, build), the student's tree (student-src, student-build) with the
submitted files placed, the rubrics, and CMake configured in both trees."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import linking, refcache, sandbox, workspace
from ..paths import LabPaths
from ..rubric import Rubric, RubricError, load_rubric
from .job import StudentTree, Trees


@dataclass
class Prepared:
    """The trees and, per lab that has a readable rubric, the rubric, the student files the
    submission lacks and where the submitted ones were placed. `problem`: why grading could
    not start (a grader error); `unconfigured`: why CMake could not configure (every lab is
    then recorded as not graded)."""

    trees: Trees | None = None
    labs: list[LabPaths] = field(default_factory=list)
    rubrics: dict[str, Rubric] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)
    student_paths: dict[str, dict[str, str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # grader errors (rubrics, configure...)
    unconfigured: bool = False
    # how student code is contained (result.json)
    sandbox: dict[str, Any] = field(default_factory=dict)


def trees(work: Path, submission: Path, source_root: Path, labs: list[LabPaths],
          has_gpu: bool, build_timeout: float | None,
          say: Callable[[str], None], cache: Path | None = None) -> Prepared:
    out = Prepared()
    identity = sandbox.unprivileged_identity()
    isolation = sandbox.isolation()
    out.sandbox = isolation.as_dict()
    if not isolation.jailed:
        say(f"warning: student code is not jailed: {isolation.why}")
    if not _open_work(work, identity, out):
        return out
    src, build = work / "src", work / "build"
    student_src, student_build = work / "student-src", work / "student-build"
    build_env, student_env, run_env = _environments(work, identity, isolation.jailed, has_gpu)

    try:
        tree = workspace.submission_tree(submission, work / "submission")
    except (OSError, RuntimeError, subprocess.SubprocessError) as err:
        out.errors.append(f"cannot read the submission: {err}")
        return out

    _copy_trees(source_root, src, student_src, student_build, labs, identity, say)
    _place_labs(out, labs, src, tree, student_src)
    if not out.labs:
        return out

    references, archs = _references(cache, source_root, out.labs, say)
    links = {lab.folder: planned for lab in out.labs
             if (planned := linking.plan(getattr(references.get(lab.folder), "path", None),
                                         LabPaths(lab.folder, lab.number, lab.topic, src),
                                         student_build, build))}
    student = StudentTree(student_src, student_build, student_env, identity,
                          workspace.student_jail(student_src, student_build))
    out.trees = Trees(work, src, build, build_env, run_env, identity, student, references,
                      links)
    _configure(out, out.trees, build_timeout, archs, cache if isolation.jailed else None, say)
    return out


def _open_work(work: Path, identity: sandbox.Identity | None, out: Prepared) -> bool:
    """Makes the work folder; False, the error in `out`, where student code could not reach it."""
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    if identity is not None:
        closed = sandbox.reachable_by_others(work.parent)
        if closed is not None:
            out.errors.append(f"the work folder {work} cannot be reached by the user "
                              f"'{identity.name}' that runs student code ({closed} is "
                              "closed to others): choose a --work-dir under an open folder")
            return False
    return True


def _environments(work: Path, identity: sandbox.Identity | None, jailed: bool, has_gpu: bool
                  ) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """The environments of the grader's builds, of the student's build and of every run."""
    home = sandbox.make_shared_dir(work / "home", identity)
    build_env = workspace.default_env(work / "build-home")
    (work / "build-home").mkdir(exist_ok=True)
    student_env = dict(build_env)
    run_env = sandbox.scrubbed_env(home)
    if jailed:  # a jail has a private /tmp and nothing else to write to
        student_env.update(HOME="/tmp", TMPDIR="/tmp")
        run_env.update(HOME="/tmp", TMPDIR="/tmp")
    if not has_gpu:
        run_env["CUDA_VISIBLE_DEVICES"] = ""  # the test main then skips [gpu] cases
    return build_env, student_env, run_env


def _copy_trees(source_root: Path, src: Path, student_src: Path, student_build: Path,
                labs: list[LabPaths], identity: sandbox.Identity | None,
                say: Callable[[str], None]) -> None:
    """The pristine tree and the student's tree copied afresh, the student's build folder made."""
    say("copying the pristine tree")
    if src.exists() and (src / "solutions").exists():
        (src / "solutions").chmod(0o755)
    workspace.copy_pristine(source_root, src, labs)
    shutil.rmtree(student_src, ignore_errors=True)  # nothing of an earlier submission stays
    workspace.copy_student_tree(source_root, student_src, labs)
    sandbox.make_shared_dir(student_build, identity)


def _place_labs(out: Prepared, labs: list[LabPaths], src: Path, tree: Path,
                student_src: Path) -> None:
    """Each lab's rubric read from `src` and the submission's files of it placed (in `out`)."""
    for lab in labs:
        try:
            out.rubrics[lab.folder] = load_rubric(LabPaths(lab.folder, lab.number, lab.topic,
                                                           src))
        except (RubricError, OSError) as err:
            out.errors.append(f"{lab.folder}: {err}")
    out.labs = [lab for lab in labs if lab.folder in out.rubrics]
    for lab in out.labs:
        rubric = out.rubrics[lab.folder]
        out.missing[lab.folder] = [problem for rel in rubric.student_files
                                   if (problem := workspace.place_student_file(
                                       tree, rel, student_src))]
        out.student_paths[lab.folder] = {str(student_src / rel): rel
                                         for rel in rubric.student_files}


def _configure(out: Prepared, made: Trees, build_timeout: float | None, archs: str | None,
               cache: Path | None, say: Callable[[str], None]) -> None:
    """CMake's configure of the grader's tree (unless all linked) and the student's, into `out`."""
    timeout = max(build_timeout or out.rubrics[lab.folder].build_timeout_s for lab in out.labs)
    say("configuring (CMake)")
    if len(made.links) < len(out.labs):  # a lab builds in the grader's tree: configure it
        configured = workspace.cmake_configure(
            made.src, made.build, out.labs, timeout, made.build_env,
            [f"-DCML_STUDENT_BUILD={made.student.build}",
             *([f"-DCMAKE_CUDA_ARCHITECTURES={archs}"] if archs else [])])
        # The student's tree is built for exactly the GPU architectures of the grader's.
        archs = workspace.cache_value(made.build, "CMAKE_CUDA_ARCHITECTURES") or "75"
    else:  # every lab linked from its cached entry: the grader's tree is never built
        configured = workspace.BuildOutcome(True, 0.0)
    if configured.ok:
        configured = _configure_student(made.student, out, timeout, archs, cache)
    if not configured.ok:
        out.errors.append("CMake could not configure the pristine tree: "
                          + " | ".join(configured.errors or [configured.log_tail[-500:]]))
        out.unconfigured = True


def _configure_student(student: StudentTree, out: Prepared, timeout: float, archs: str | None,
                       cache: Path | None) -> workspace.BuildOutcome:
    """CMake's configure of the student's tree, in its jail; copied from the reference
    cache where an earlier grade configured the same tree the same way (only when jailed:
    then its paths are the jail's, the same in every grade)."""
    # Only the student's libraries: no order-only dependency on libcml or the given code,
    # which the student's tree would otherwise compile first.
    options = ["-DCML_BUILD_TESTS=OFF", f"-DCMAKE_CUDA_ARCHITECTURES={archs}",
               "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", "-DCMAKE_OPTIMIZE_DEPENDENCIES=ON"]
    store = refcache.Cache(cache) if cache is not None else None
    key = ""
    if store is not None:
        files = [rel for lab in out.labs for rel in out.rubrics[lab.folder].student_files]
        labs = ";".join(lab.folder for lab in out.labs)
        key = store.configured_key(student.src, files, [*options, labs])
        owner = (student.identity.uid, student.identity.gid) if student.identity else None
        try:
            if store.restore_configured(key, student.build, owner):
                return workspace.BuildOutcome(True, 0.0)
        except OSError:  # configured here instead
            pass
    # Kept only when configured in an empty tree: a batch worker's tree also holds what the
    # last submission compiled there, which no other grade may see.
    fresh = not any(student.build.iterdir())
    configured = workspace.cmake_configure(student.src, student.build, out.labs, timeout,
                                           student.env, options, identity=student.identity,
                                           jail=student.jail)
    if configured.ok and store is not None and fresh:
        try:
            store.keep_configured(key, student.build)
        except OSError:  # the next grade configures again
            pass
    return configured


def _references(cache: Path | None, source_root: Path, labs: list[LabPaths],
                say: Callable[[str], None]) -> tuple[dict[str, refcache.Entry], str | None]:
    """The cached references of `labs` (filled first where missing), and the cache's GPU
    architectures, which the grade's trees are built for. A cache that cannot be filled is
    said and left out: each lab then builds its reference in the grade's tree, where a
    failure is named per lab."""
    if cache is None:
        return {}, None
    store = refcache.Cache(cache)
    try:
        return store.fill(source_root, labs, say=say), store.archs
    except (OSError, RuntimeError) as err:
        say(f"warning: the reference cache was not used ({err})")
        return {}, None
