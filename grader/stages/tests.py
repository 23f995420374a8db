"""Test stage: the reference's binary lists the cases (public and hidden), the reference is
locked away, and each test layer (host, then GPU) of the student's binaries runs in the run
jail, as the unprivileged user."""

from __future__ import annotations

import functools
import os
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .. import bwrap, confine, parallel, sandbox, workspace
from ..linking import CHECKERS, tests_kind
from ..result import CRASHED, FAILED, PASSED, TIMEOUT
from ..catch2.testrun import TEST_KINDS, Case, CaseRun, Runner, list_cases
from .job import STAGE_BUDGET, LabJob

HOST_SPEC, GPU_SPEC = "~[gpu]", "[gpu]"


@dataclass
class RunPlace:
    """Where the student's code runs from here on: a jail that holds only its binaries (at
    /cml/bin) and, for GPU work, the device nodes; each process adds a new folder of its
    own, made in `run_dir` (at /cml/work)."""

    run_dir: Path
    jail: bwrap.Jail
    binaries: dict[str, Path | None]
    # The runner of the student's object, when the lab's tests run as checker and runner
    # (common/include/cml/remote.hpp): the checkers hold the tests, outside the jail.
    remote: Path | None = None

    def test_binary(self, kind: str) -> Path | None:
        """What runs the cases of `kind` (tests_student, hidden_student): its checker when
        the lab runs as a pair, else the binary linked with the student's object."""
        return self.binaries.get(tests_kind(kind, self.remote is not None))


@dataclass
class TestRuns:
    """What the tests stage found: every case the rubric may count (`canonical`), the
    result of each case that ran, and the re-runs of crashed binaries."""

    canonical: list[Case]
    runs: dict[str, CaseRun] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)


def prepare(job: LabJob, binaries: dict[str, Path | None]) -> tuple[RunPlace, list[Case]]:
    """Lists the cases, locks the reference away and makes the run jail. The case list
    comes from the reference's binary; a student's copy has no solutions/, so there the
    public binary lists its own cases."""
    trees = job.trees
    lister = binaries["tests_solution"] or binaries["tests_student"]
    canonical = list_cases(lister, trees.run_env) if lister else []
    if trees.identity is not None:
        workspace.lock_down(trees.src, trees.build, [job.lab])
    run_dir = trees.work / "run" / job.lab.folder
    shutil.rmtree(run_dir, ignore_errors=True)
    # The grader's: each process gets a new folder of its own in it (sandbox.run's `fresh`),
    # shown in the jail as /cml/work; the student's user cannot write beside them.
    run_dir.mkdir(parents=True)
    run_dir.chmod(0o711)
    jail = bwrap.Jail(gpu=job.has_gpu)
    for kind in ("tests_student", "hidden_student", "bench_student", "runner"):
        if binary := binaries.get(kind):
            jail.add(binary, f"{bwrap.JAIL_ROOT}/bin/{binary.name}")
    jail.add(confine.SCRIPT, confine.INSIDE)  # what a tool starts in place of the program
    return RunPlace(run_dir, jail, binaries, remote_runner(binaries)), canonical


def remote_runner(binaries: dict[str, Path | None]) -> Path | None:
    """The runner when the lab's tests run as checker and runner: a runner, and a checker
    for every kind of test binary that was built (else None: the tests run in the binaries
    linked with the student's object, as a student's own build does)."""
    runner = binaries.get("runner")
    if runner is None:
        return None
    for kind, checker in CHECKERS.items():
        if binaries.get(kind) is not None and binaries.get(checker) is None:
            return None
    return runner


@contextmanager
def _layer_section(job: LabJob, layer: str) -> Iterator[None]:
    if layer == "gpu":
        with job.gpu_section("tests"):
            yield
    else:
        yield


def run(job: LabJob, place: RunPlace, canonical: list[Case]) -> TestRuns:
    """The host layer, then (with a GPU, inside the GPU section) the GPU layer, each within
    a time limit of its own. Within a layer the binaries (public, hidden) run at the same
    time, each with a Runner of its own (its own processes and re-runs); what they find
    is taken in the order of TEST_KINDS, as if they had run one after another."""
    trees = job.trees
    found = TestRuns(canonical)
    layers = [("host", HOST_SPEC)] + ([("gpu", GPU_SPEC)] if job.has_gpu else [])
    for layer, spec in layers:
        with _layer_section(job, layer):
            # Made inside the section, which sets the device in run_env. Nothing is timed in
            # either layer: one work queue per CUDA context (sandbox.untimed_env). The host
            # layer keeps the GPU: a global set from a device query before main(), with an
            # error macro that exits, is fair code.
            env = sandbox.untimed_env(trees.run_env)
            deadline = time.monotonic() + STAGE_BUDGET * job.test_timeout
            stop = threading.Event()
            todo = []
            for kind in TEST_KINDS:
                binary = place.test_binary(kind)
                if binary is None:
                    continue
                expected = [c for c in canonical if c.matches(spec) and c.runs_in(kind)]
                if not expected:
                    continue
                runner = Runner(place.run_dir, env, trees.identity, job.seed,
                                job.test_timeout, jail=place.jail, deadline=deadline,
                                stop=stop, remote=place.remote)
                job.say(f"{job.lab.folder}: running {layer} tests ({binary.name})")
                todo.append((runner, binary, expected, kind))
            done = parallel.run_all(
                [functools.partial(r.run_layer, b, spec, e) for r, b, e, _ in todo], stop=stop)
            for (runner, binary, _, kind), (runs, outcome) in zip(todo, done):
                output = getattr(outcome, "output_tail", "").rstrip()
                if kind == "hidden_student":
                    # what code in the student's process printed while hidden tests ran
                    # could quote them: the log, too, keeps none of it
                    output = HIDDEN_OUTPUT if output else ""
                job.log(f"----- {job.lab.folder}: {layer} tests ({binary.name}) output -----\n"
                        + output)
                found.runs.update(runs)
                found.log += runner.log
    for case_run in found.runs.values():
        case_run.messages = shown_messages(case_run.messages, "hidden" in case_run.tags,
                                           trees.src, case_run.status)
    return found


HIDDEN_OUTPUT = "(the output of the hidden tests' binary is not kept)"
HIDDEN_NOTICES = {
    FAILED: "a hidden case failed; hidden cases show no details",
    CRASHED: "a hidden case crashed the test process; hidden cases show no details",
    TIMEOUT: "a hidden case did not finish in time; hidden cases show no details",
}


def shown_messages(messages: list[str], hidden: bool, src: Path, status: str = FAILED
                   ) -> list[str]:
    """Messages as the student may see them: work-tree paths made relative. A hidden case
    shows none of its own (an assertion's text, a file name, anything its process printed:
    code in the student's process can read the hidden binary's memory and throw it), only
    a fixed sentence for its status; a passed one shows nothing."""
    if hidden:
        return [] if status == PASSED else [HIDDEN_NOTICES.get(status, HIDDEN_NOTICES[FAILED])]
    prefix = str(src) + os.sep
    return [msg.replace(prefix, "") for msg in messages]
