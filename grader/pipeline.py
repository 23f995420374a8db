"""Grading one submission: build it in a private tree, check it statically, run its tests,
measure it, and score it with the lab's rubric into one GradeResult (grader/README.md,
"What is graded, in order"; every hop: docs/architecture.md, "One grade, hop by hop").

grade() prepares the trees once (stages/prepare.py), then runs each lab through the stages
(stages/lab.py: build, static checks, tests, measurements; points from grader/scoring.py).
Only the files listed in a lab's grading.toml come from the submission; everything else is
the grader's own pristine copy. A lab that does not compile gets its errors as its result
and the other labs are still graded. Without a CUDA device the GPU parts are "not graded"
and earn nothing; a missing or refused tool makes its part "not measured".
"""

from __future__ import annotations

import datetime as _dt
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Callable

from . import __version__, leaks, parallel, sandbox
from .costs import Meter, timed_device_seconds
from .gpu import GpuSection, LabSections, no_lock, timed
from .parts.kinds import finish_unfinished
from .paths import ROOT, LabPaths
from .result import GRADER_ERROR, INTERRUPTED, NOT_CONFIGURED, GradeResult, LabResult
from .rubric import Rubric
from .scoring import grade_totals, lab_totals, leave_out_unmeasured
from .stages import build, prepare
from .stages.job import LabJob
from .stages.lab import grade_lab
from .tools import find_catch2, probe_toolchain, query_gpus
from .workspace import usable_cpus

GRADER_VERSION = __version__  # the one version (grader/__init__.py), in every result.json


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived while grading; what is known so far is still written."""


def new_seed() -> int:
    """A fresh input seed (printed with every result, so a run can be repeated)."""
    return random.randrange(1, 2**31)


class Progress:
    """One line per step on stderr, with the time since the start (the commands' and a
    cluster job's progress)."""

    def __init__(self, quiet: bool = False) -> None:
        self.start = time.monotonic()
        self.quiet = quiet

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(f"[{time.monotonic() - self.start:6.1f} s] {text}", file=sys.stderr,
                  flush=True)


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
    # Entered around every GPU stage: gpu_section("tests" | "sanitizer" | "bench" |
    # "profiler"). A batch passes one that holds the machine's GPU lock (grader/gpu.py).
    gpu_section: GpuSection = no_lock
    # The reference cache (grader/refcache.py); None: the references are built in the
    # grade's own tree, as a grade without a cache does.
    cache: Path | None = None
    # Given the whole output of every build and test run (a batch writes it to grade.log).
    log: Callable[[str], None] | None = None


def _say(opts: Options, text: str) -> None:
    if opts.progress:
        opts.progress(text)


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
    has_gpu = bool(gpus) if opts.gpu is None else bool(opts.gpu and gpus)
    keep = opts.work_dir is not None
    work = Path(opts.work_dir or tempfile.mkdtemp(prefix="cml-grade-")).resolve()
    sections = LabSections(opts.gpu_section)
    try:
        _grade_in(work, opts, result, has_gpu, why_no_gpu, sections)
    finally:
        grade_totals(result)
        result.gpu_seconds = round(sections.busy_seconds, 2)
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return result


def _grade_in(work: Path, opts: Options, result: GradeResult, has_gpu: bool,
              why_no_gpu: str, sections: LabSections) -> None:
    say: Callable[[str], None] = lambda text: _say(opts, text)
    grade_costs = Meter()
    try:
        with grade_costs.stage("prepare"):
            ready = prepare.trees(work, opts.submission, opts.source_root, opts.labs, has_gpu,
                                  opts.build_timeout, say, opts.cache)
        _grade_ready(ready, work, opts, result, has_gpu, why_no_gpu, sections, grade_costs)
    finally:
        result.stages = grade_costs.record()


def _grade_ready(ready: prepare.Prepared, work: Path, opts: Options, result: GradeResult,
                 has_gpu: bool, why_no_gpu: str, sections: LabSections,
                 grade_costs: Meter) -> None:
    say: Callable[[str], None] = lambda text: _say(opts, text)
    result.sandbox = ready.sandbox
    result.errors += ready.errors
    if ready.trees is None:
        return
    if ready.unconfigured:
        for lab in ready.labs:
            result.labs.append(_failed_lab(lab, ready.rubrics[lab.folder], "The grader could "
                                           "not configure the build; nothing was graded."))
        return
    src = ready.trees.src
    jobs: list[LabJob] = []
    seconds: list[dict[str, float]] = []
    waits: list[dict[str, float]] = []
    sections.env = ready.trees.run_env  # the device a batch's lock yields is set there
    for lab in ready.labs:
        rubric = ready.rubrics[lab.folder]
        seconds.append({})
        waits.append({})
        jobs.append(LabJob(LabPaths(lab.folder, lab.number, lab.topic, src), rubric,
                           ready.trees, opts.seed, opts.build_timeout or rubric.build_timeout_s,
                           opts.test_timeout or rubric.test_timeout_s, has_gpu, why_no_gpu,
                           ready.missing[lab.folder], ready.student_paths[lab.folder], say,
                           timed(sections.section, seconds[-1], waited=waits[-1]),
                           log=opts.log or (lambda text: None)))
    try:  # one build per tree for every lab; a lab that fails builds alone, later
        with grade_costs.stage("build"):
            build.together(jobs)
    except Interrupted:
        raise
    except Exception as err:  # each lab then builds (and fails) on its own
        say(f"building the labs together failed ({err}); building them one at a time")
    labs = [_LabRun(lab, job, gpu_seconds, waited)
            for lab, job, gpu_seconds, waited in zip(ready.labs, jobs, seconds, waits)]
    result.labs += [run.result for run in labs]
    folders = [work, opts.source_root, ROOT] + ([opts.cache] if opts.cache else [])
    _grade_labs(labs, result, src, folders)


# Labs of one grade graded at the same time (at most this many, and half the CPUs the grade
# may use): their GPU sections share or take the GPU as gpu.LabSections says, their builds
# (where a lab builds alone) take turns.
LAB_WORKERS = 8


def lab_workers(labs: int) -> int:
    return max(1, min(labs, LAB_WORKERS, usable_cpus() // 2))


@dataclass
class _LabRun:
    lab: LabPaths
    job: LabJob
    gpu_seconds: dict[str, float]
    gpu_waited: dict[str, float] = field(default_factory=dict)
    result: LabResult = field(init=False)
    done: bool = False

    def __post_init__(self) -> None:
        rubric = self.job.rubric
        self.result = LabResult(self.lab.folder, rubric.title, 0.0, rubric.max_points)


def _grade_labs(labs: list[_LabRun], result: GradeResult, src: Path,
                folders: list[Path]) -> None:
    """Grades each lab in a worker thread (lab_workers() at a time), its result in its place
    in `result.labs`. An interrupt (SIGINT, SIGTERM, the time limit: raised in this thread)
    stops the processes running, lets no new one start, and waits for the workers: each lab
    not finished is recorded as interrupted, and the interrupt goes on up."""
    errors_lock = threading.Lock()

    def one(run: _LabRun) -> None:
        start = time.monotonic()
        lab_result, rubric, folder = run.result, run.job.rubric, run.lab.folder
        try:
            grade_lab(run.job, lab_result)
        except Exception as err:
            with errors_lock:
                if sandbox.stopping():
                    _interrupted(run, result)
                else:  # the grader's own failure: say so, grade the other labs
                    lab_result.failure = GRADER_ERROR
                    result.errors.append(grader_failed(err, folder))
                    finish_unfinished(lab_result, rubric, "the grader failed on this lab")
        finally:
            _finish_lab(run, time.monotonic() - start, src, folders, result)

    pool = ThreadPoolExecutor(max_workers=lab_workers(len(labs)), thread_name_prefix="cml-lab")
    futures: list[Future[None]] = []
    try:  # the interrupt may come at any line, submitting included
        for run in labs:
            futures.append(pool.submit(one, run))
        for future in parallel.as_completed(futures):
            future.result()
    except Interrupted:
        sandbox.stop_starting()
        sandbox.kill_all()  # what a worker started since the handler's kill
        try:
            for future in futures:
                future.cancel()
            wait(futures)
        finally:
            sandbox.stop_starting(False)
        for run in labs:
            if not run.done:  # never started
                _interrupted(run, result)
                _finish_lab(run, 0.0, src, folders, result)
        raise
    finally:
        pool.shutdown(wait=True)


def _interrupted(run: _LabRun, result: GradeResult) -> None:
    run.result.failure = INTERRUPTED
    finish_unfinished(run.result, run.job.rubric, "grading was interrupted")
    result.errors.append(f"{run.lab.folder}: grading was interrupted")


def _finish_lab(run: _LabRun, wall: float, src: Path, folders: list[Path],
                result: GradeResult) -> None:
    lab_result = run.result
    lab_result.wall_seconds = round(wall, 2)
    lab_result.gpu_seconds = {k: round(v, 2) for k, v in run.gpu_seconds.items()}
    lab_result.gpu_waited = {k: round(v, 2) for k, v in run.gpu_waited.items() if v >= 0.01}
    lab_result.stages = run.job.costs.record()
    if lab_result.timing is not None and "bench" in lab_result.stages:
        lab_result.stages["bench"]["device_seconds"] = timed_device_seconds(lab_result.timing)
    leaks.Secrets.of_lab(src, run.lab.folder, folders).scrub_lab(lab_result)
    leave_out_unmeasured(lab_result)
    lab_totals(lab_result)
    device = lab_result.timing.device if lab_result.timing else None
    if device and result.device is not None:
        result.device.setdefault("bench", device)
    run.done = True


def _failed_lab(lab: LabPaths, rubric: Rubric, reason: str) -> LabResult:
    lab_result = LabResult(lab.folder, rubric.title, 0.0, rubric.max_points,
                           failure=NOT_CONFIGURED)
    finish_unfinished(lab_result, rubric, reason)
    lab_totals(lab_result)
    return lab_result


def grader_failed(err: BaseException, where: str = "") -> str:
    """The one way the grader's own failure is recorded in result.errors."""
    return (f"{where}: " if where else "") + f"the grader failed: {type(err).__name__}: {err}"


def interrupt_handler(signum: int, _frame: FrameType | None) -> None:
    """For SIGINT and SIGTERM while grading: stop the children, unwind."""
    sandbox.kill_all()
    raise Interrupted(f"signal {signum}")


class TimeLimit(Interrupted):
    """The wall-clock limit given to grade_submission was reached (SIGALRM)."""


def _on_alarm(signum: int, _frame: FrameType | None) -> None:
    sandbox.kill_all()
    raise TimeLimit("the wall-clock limit per submission was reached")


# How grade_submission ended.
ENDED_GRADED, ENDED_GRADER_ERROR = "graded", "grader_error"
ENDED_INTERRUPTED, ENDED_TIMED_OUT = "interrupted", "timed_out"


def grade_submission(opts: Options, time_limit: float | None = None) -> tuple[GradeResult, str]:
    """One submission graded the way every command does it (`grade`, `check`, `ci`, a batch's
    task): SIGINT and SIGTERM, and with a time limit SIGALRM, stop the children and end the
    grade with what is known; the grader's own failure is recorded, never raised; the
    signal handlers are restored. Returns the result and how it ended, one of ENDED_*
    (graded with errors of the grader's counts as ENDED_GRADER_ERROR)."""
    result = new_result(opts)
    ended = ENDED_GRADED
    handlers = {signal.SIGINT: interrupt_handler, signal.SIGTERM: interrupt_handler}
    if time_limit is not None:
        handlers[signal.SIGALRM] = _on_alarm
    saved = {s: signal.getsignal(s) for s in handlers}
    for s, handler in handlers.items():
        signal.signal(s, handler)
    try:
        if time_limit is not None:
            signal.alarm(max(1, int(time_limit)))
        grade(opts, result)
    except TimeLimit:
        ended = ENDED_TIMED_OUT
        result.errors.append(
            f"stopped: grading took longer than the limit of {time_limit:g} s per submission")
    except Interrupted as why:
        ended = ENDED_INTERRUPTED
        result.errors.append(f"interrupted ({why}); the results are incomplete")
    except Exception as err:  # the grader's own failure, recorded
        result.errors.append(grader_failed(err))
        ended = ENDED_GRADER_ERROR
    finally:
        if time_limit is not None:
            signal.alarm(0)
        for number, previous in saved.items():
            signal.signal(number, previous)
    if ended == ENDED_GRADED and result.errors:  # problems of the grader's, not the student's
        ended = ENDED_GRADER_ERROR
    return result, ended
