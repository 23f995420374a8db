"""Speed as the bench measures it: the bench run (student's and reference's, each once, its
document read through a pipe the grader holds), the document read into records
(grader/benchdoc.py) and restated from its samples (samples.recompute), the scored
comparison's summary kept in result.json, and the harness's verdicts on the timed runs, each
as the sentence a reason quotes (None when all is well). The measurement (BenchRuns) is
scored by parts/performance.py and parts/stretch.py."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from pathlib import Path

from .. import channel, pairs, sandbox, seccomp
from ..gate import Gated, StartGate
from ..gpu import GpuSection, no_lock
from ..result import BenchSummary, Timing
from . import Context
from ..benchdoc import (Determinism, Document, PairTiming, Verification,
                       parse_document)
from ..benchfields import BenchError
from .samples import altered_problem, recompute

BENCH_ALTERED = ("its document was altered after the bench ended (or written twice): not "
                 "believed")


class Unread(enum.Enum):
    """Why a bench run gave no document."""

    FAILED = "failed"  # it did not run to the end, or wrote nothing readable
    ALTERED = "altered"  # its document was written to besides the harness (BENCH_ALTERED)


class Flaw(enum.Enum):
    """What the harness found wrong with a side's timed runs, by kind (Verdict.flaw)."""

    UNCHECKED = "unchecked"  # the timed output was not checked
    WRONG_OUTPUT = "wrong_output"  # the candidate's output was wrong in some run
    BASELINE_WRONG = "baseline_wrong"  # the baseline's, in the same process as the candidate
    NOT_DETERMINISTIC = "not_deterministic"  # a required second run gave other bits
    NO_LAUNCH = "no_launch"  # a timed call launched no kernel
    REVIEW = "review"  # the host-time cross-check flagged the timing (Review.flagged)


@dataclass(frozen=True)
class Verdict:
    """One of the harness's verdicts on the timed runs: its kind, which the parts decide by,
    and the sentence a reason quotes (also what str() gives)."""

    flaw: Flaw
    said: str

    def __str__(self) -> str:
        return self.said


@dataclass(frozen=True)
class BenchProblem:
    """A bench run that gave no document: the kind, and the sentence a reason quotes."""

    kind: Unread
    message: str


def bench_document_problem(text: str) -> str:
    """Why the text read from the bench's pipe is not one document as the harness writes it
    (BENCH_ALTERED: not well-formed JSON, or anything but whitespace after its end), or ""."""
    body = text.lstrip()
    try:
        _doc, end = json.JSONDecoder().raw_decode(body)
    except ValueError:
        return BENCH_ALTERED
    return BENCH_ALTERED if body[end:].strip() else ""


BenchRun = tuple[Document | None, BenchProblem | None, sandbox.Outcome]  # run_bench's


def run_bench(binary: Path, args: list[str], ctx: Context, trusted: bool,
              runner: Path | None = None, gate: StartGate | None = None) -> BenchRun:
    """One bench run; (document, problem, outcome). The document comes through a pipe the
    grader holds (--json /dev/fd/N), read while the bench runs, in a folder of the run's
    own; a document written to besides the harness is an Unread.ALTERED problem. With a
    `runner`, `binary` is the lab's bench checker: it runs as the grader, outside the jail,
    and only the runner (the student's object) runs in the jail
    (common/include/cml/remote.hpp). `gate`: the grader's own program (the reference's
    bench, a checker) waits at it before it measures anything (grader/gate.py)."""
    assert gate is None or trusted or runner is not None, "the student's code never waits"
    with channel.Channel() as doc:
        cmd = [str(binary), *args, "--json", doc.path, "--seed", str(ctx.seed),
               *(gate.args if gate else [])]
        if trusted:  # the reference's bench: the grader's own code, outside the jail
            out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.timeout * 2, env=ctx.env,
                              fresh=True, channels=[doc], extra_fds=gate.fds if gate else (),
                              starts=gate.opened if gate else None)
        elif runner is not None:
            pair = pairs.run_pair(cmd, [str(runner)], cwd=ctx.run_dir,
                                  timeout=ctx.limit(ctx.timeout * 2), env=ctx.env,
                                  identity=ctx.identity, jail=ctx.jail, channels=[doc],
                                  syscalls=seccomp.PROGRAM, gate=gate)
            out = pair.checker
        else:
            out = sandbox.run(cmd, cwd=ctx.run_dir, timeout=ctx.limit(ctx.timeout * 2),
                              env=ctx.env, identity=ctx.identity, jail=ctx.jail, fresh=True,
                              channels=[doc], syscalls=seccomp.PROGRAM)

    def failed(message: str) -> tuple[None, BenchProblem, sandbox.Outcome]:
        return None, BenchProblem(Unread.FAILED, message), out

    if out.timed_out or out.returncode != 0:
        return failed(f"{binary.name} {out.describe()}")
    if doc.oversized:
        return failed(f"{binary.name} wrote a document larger than {doc.limit // 2**20} MiB "
                      "(not read)")
    text = doc.text()
    if not text.strip():
        return failed(f"{binary.name} wrote no readable result (no JSON document)")
    altered = bench_document_problem(text)
    if altered:
        return None, BenchProblem(Unread.ALTERED, altered), out
    try:
        return parse_document(text, binary.name), None, out
    except BenchError as err:
        if trusted:
            return failed(f"{binary.name} wrote no readable result ({err})")
        # The harness writes every field it declares, typed as declared: a student's bench
        # whose document is otherwise is one something else wrote.
        return None, BenchProblem(Unread.ALTERED, "its document is not one the harness "
                                  f"writes ({err}): not believed"), out


def summary(comp: PairTiming, doc: Document) -> BenchSummary:
    """The scored comparison, plus the bench's other cases, derived metrics and the plots it
    declares (drawn by the HTML report)."""
    return BenchSummary(
        baseline_ms=comp.baseline.ms, candidate_ms=comp.candidate.ms, speedup=comp.speedup,
        converged=comp.converged, verification=comp.candidate.verification,
        baseline_verification=comp.baseline.verification,
        launches=comp.candidate.launches, baseline_launches=comp.baseline.launches,
        determinism=comp.determinism, review=comp.review,
        host_margin_ms={"baseline": comp.baseline.host_margin_ms,
                        "candidate": comp.candidate.host_margin_ms},
        cases=list(doc.cases), metrics=dict(doc.metrics), plots=list(doc.plots))


def timed_output_problem(comp: PairTiming, whose: str = "your") -> Verdict | None:
    """The candidate's output wrong in some run (which pair and sample, where, got and
    expected), the baseline's wrong in the same process, or a required determinism check
    failed."""
    cand = comp.candidate.verification or Verification()
    if not cand.checked:
        return Verdict(Flaw.UNCHECKED, f"the output of {whose} timed kernel was not checked")
    if not cand.passed:
        return Verdict(Flaw.WRONG_OUTPUT, f"the output of {whose} timed kernel was wrong: "
                       f"{cand.failure_text()}")
    base = comp.baseline.verification or Verification()
    if base.wrong:
        return Verdict(Flaw.BASELINE_WRONG, f"the baseline's output was wrong in the same run "
                       f"as {whose} code (does it write outside its own output?): "
                       f"{base.failure_text()}")
    det = comp.determinism or Determinism()
    if det.checked and det.required and det.identical is False:
        return Verdict(Flaw.NOT_DETERMINISTIC, f"{whose} kernel is not deterministic: "
                       + (det.message or "a second run on the same inputs gave other bits"))
    return None


def launch_problem(comp: PairTiming) -> Verdict | None:
    """A candidate call that launched no kernel (only where the bench counted launches)."""
    launches = comp.candidate.launches
    if launches is None or not launches.counted:
        return None
    if launches.max == 0:
        return Verdict(Flaw.NO_LAUNCH, "your code launched no kernel (0 kernel launches in "
                       "every timed call)")
    if launches.min == 0:
        return Verdict(Flaw.NO_LAUNCH, f"your code launched no kernel in some timed calls (0 "
                       f"to {launches.max} launches per call): the output cannot have come "
                       "from the timed work")
    return None


def clock_note(comp: PairTiming) -> str:
    """A sentence for the speed part when the runner's clock was not believed for the
    candidate's calls (its times are then the grader's own observations), else ""."""
    remote = comp.candidate.remote
    if remote is None or remote.agreed is not False:
        return ""
    why = ("it did not time every call" if remote.runner_complete is False else
           "its times fell short of what the grader observed")
    return ("Your kernel's times are the grader's own observation of each call, not the "
            f"clock beside your code ({why}).")


def review_problem(comp: PairTiming) -> Verdict | None:
    """The harness's review flag (work escaped the timing events), with its reasons."""
    if comp.review is None or not comp.review.flagged:
        return None
    return Verdict(Flaw.REVIEW, "; ".join(comp.review.reasons)
                   or "the host-time cross-check flagged the timing")


@dataclass
class BenchRuns:
    """The scored comparison as measured: the reference's bench and the student's, each run
    once (interleaved with the baseline inside), and the harness's verdicts on the student's
    timed runs. `unmeasured`: why the part is "not measured"; `failed`: why the student's
    bench gave no timing. Both documents are kept with every summary recomputed from their
    samples (samples.recompute); `altered` says where the student's disagreed with them."""

    timing: Timing | None = None
    unmeasured: str = ""
    failed: str = ""
    # The harness's verdicts on the student's timed runs (None: nothing wrong)
    output_problem: Verdict | None = None  # timed_output_problem
    launch_problem: Verdict | None = None
    review_problem: Verdict | None = None
    student_doc: Document | None = None  # the student's whole bench document ([stretch])
    reference_doc: Document | None = None  # the reference's (its limits and work)
    student_comparison: PairTiming | None = None  # the scored comparison of student_doc
    # Why the student's document is not believed (written to besides the harness, or its
    # figures disagree with its samples): no points, flagged for review.
    altered: str | None = None
    disagreements: list[str] = field(default_factory=list)  # every one found
    # No reference to time against (the student copy has no solutions/): the student's own
    # bench ran for feedback, its figures kept beside a part that is not measured.
    no_reference: bool = False
    note: str = ""  # what the student's bench alone said, added to the speed part's reason
    clock_note: str = ""  # clock_note of the student's comparison, added to its reason


NO_REFERENCE = ("Not measured here: this copy has no reference solution to time your kernel "
                "against, so the speed points are the course grader's to give.")


def read_student(runs: BenchRuns, student: Document, comparison: str) -> str | None:
    """The student's bench document into `runs`: its summaries recomputed from the samples
    (only the samples are believed; `altered` says where the document disagreed with them),
    the comparison's timing, and the harness's verdicts on the timed runs. Returns why the
    comparison could not be read, or None."""
    student, runs.disagreements = recompute(student)
    runs.altered = altered_problem(runs.disagreements)
    try:
        comp = student.named(comparison)
    except BenchError as err:
        return str(err)
    timing = runs.timing
    assert timing is not None
    runs.student_doc, runs.student_comparison = student, comp
    timing.student = summary(comp, student)
    timing.student_speedup = comp.speedup.median
    runs.output_problem = timed_output_problem(comp)
    runs.launch_problem = launch_problem(comp)
    runs.review_problem = review_problem(comp)
    runs.clock_note = clock_note(comp)
    return None


def student_only(comparison: str, bench_args: list[str], ctx: Context, student_bin: Path,
                 runner: Path | None = None) -> BenchRuns:
    """The student's bench alone, where there is no reference (a student copy): never
    points, but the speedup over the baseline and the speed of light on this GPU, in the
    part's reason and details, so a check on a GPU still says how fast the kernel is."""
    runs = BenchRuns(Timing(comparison, bench_args), unmeasured=NO_REFERENCE,
                     no_reference=True)
    student, why, _ = run_bench(student_bin, bench_args, ctx, trusted=False, runner=runner)
    if student is None:
        if why is not None and why.kind is Unread.ALTERED:
            runs.note = f"Your bench's result was not believed: {why.message}"
        else:
            runs.note = f"Your bench did not finish ({why.message if why else 'no document'})."
        return runs
    unreadable = read_student(runs, student, comparison)
    assert runs.timing is not None
    runs.timing.device = student.device
    problem = (unreadable or runs.altered or runs.output_problem or runs.launch_problem
               or runs.review_problem)
    if problem:
        runs.note = f"Your timed run: {problem}"
    elif runs.timing.student_speedup:
        runs.note = (f"On this GPU your kernel ran {runs.timing.student_speedup:.2f}x the "
                     "baseline's speed.")
    return runs


def student_bench(ctx: Context) -> tuple[Path | None, Path | None]:
    """The student's bench: (the bench checker, the runner) where the lab runs as checker and
    runner, else (the bench linked with the student's object, None)."""
    checker = ctx.binary("bench_checker")
    if ctx.remote is not None and checker is not None:
        return checker, ctx.remote
    return ctx.binary("bench_student"), None


# The section the bench's own programs start in (a shared one, grader/gpu.py), before the
# exclusive section that times them.
BENCH_START = "bench_start"

def timed_runs(args: list[str], ctx: Context, section: GpuSection, reference_bin: Path,
               student_bin: Path, runner: Path | None) -> tuple[BenchRun, BenchRun]:
    """The reference's bench, then the student's, both with `args`, in the exclusive
    section "bench". The grader's own programs among them (the reference's bench; the
    student's bench checker, where the student's code runs in a runner) start first, in
    the shared section BENCH_START, and wait at their start gates (grader/gate.py): the
    exclusive section then holds the GPU for their measurements, not their start-ups. A
    program that is not ready in time, or a section that yields another device than the
    one it started on, is dropped and its bench run again from the start, inside the
    section."""
    waiting: list[Gated[BenchRun]] = []
    try:
        with section(BENCH_START) as started_on:
            waiting.append(Gated(lambda g: run_bench(reference_bin, args, ctx, True, gate=g)))
            if runner is not None:
                waiting.append(Gated(lambda g: run_bench(student_bin, args, ctx, False, runner,
                                                         gate=g)))
            ready = all(w.ready(ctx.limit(ctx.timeout)) for w in waiting)
        with section("bench") as device:
            if not ready or device != started_on:
                for w in waiting:
                    w.cancel()
                waiting = []
            reference = (waiting[0].go() if waiting else
                         run_bench(reference_bin, args, ctx, trusted=True))
            student = (waiting[1].go() if len(waiting) > 1 else
                       run_bench(student_bin, args, ctx, trusted=False, runner=runner))
            waiting = []
            return reference, student
    finally:
        for w in waiting:
            w.cancel()


def performance(comparison: str, bench_args: list[str], ctx: Context,
                section: GpuSection = no_lock) -> BenchRuns:
    """Both benches with `bench_args` ([performance].bench_args; timed_runs, in `section`),
    read for the bench's comparison `comparison`."""
    (student_bin, runner), reference_bin = student_bench(ctx), ctx.binary("bench_solution")
    if student_bin is not None and reference_bin is None and not ctx.has_reference:
        with section("bench"):
            return student_only(comparison, bench_args, ctx, student_bin, runner)
    if student_bin is None or reference_bin is None:
        return BenchRuns(unmeasured="Not measured: the bench was not built.")
    (reference, why_ref, _), (student, why_student, _) = timed_runs(
        bench_args, ctx, section, reference_bin, student_bin, runner)
    timing = Timing(comparison, bench_args)
    runs = BenchRuns(timing)
    if reference is None:
        said = why_ref.message if why_ref else "no document"
        runs.unmeasured = f"Not measured: the reference bench did not run ({said})."
        return runs
    reference, ref_disagrees = recompute(reference)
    if ref_disagrees:
        runs.unmeasured = ("Not measured: the reference's own bench document disagrees with "
                           f"its samples ({ref_disagrees[0]}): a grader problem, not yours.")
        return runs
    runs.reference_doc = reference
    try:
        ref_comp = reference.named(comparison)
    except BenchError as err:
        runs.unmeasured = f"Not measured: {err}"
        return runs
    timing.reference = summary(ref_comp, reference)
    timing.device = reference.device
    timing.clocks = reference.clocks
    ref_problem = (timed_output_problem(ref_comp, "the reference's")
                   or review_problem(ref_comp))
    if ref_problem:
        runs.unmeasured = ("Not measured: the reference's own timing could not be trusted on "
                           f"this machine ({ref_problem}).")
        return runs
    if student is None and why_student is not None and why_student.kind is Unread.ALTERED:
        runs.altered = f"your bench's result was not believed: {why_student.message}"
        return runs
    if student is None:
        said = why_student.message if why_student else "no document"
        runs.failed = f"your bench did not finish ({said})."
        return runs
    unreadable = read_student(runs, student, comparison)
    if unreadable:
        runs.failed = unreadable
        return runs
    timing.reference_speedup = ref_comp.speedup.median
    if timing.student_speedup and timing.reference_speedup:
        timing.time_ratio = timing.reference_speedup / timing.student_speedup
    return runs
