"""What the stages of one lab need: the grade's trees (Trees, made once per grade by
prepare.py), the lab's own settings (LabJob) and the student's build (StudentBuild, build.py's
result, here because a LabJob holds one that build.together made ahead)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import bwrap, refcache, sandbox, workspace
from ..costs import Meter
from ..gpu import GpuSection, no_lock
from ..paths import LabPaths
from ..result import BuildRecord
from ..rubric import Rubric

# A lab's test layer, and its GPU measurements together, get this many test timeouts
# (the rubric's test_timeout_s) at most: honest code needs a fraction of one.
STAGE_BUDGET = 3


@dataclass
class StudentTree:
    """Where and how the student's file is compiled: its own trees, in a jail."""

    src: Path
    build: Path
    env: dict[str, str]
    identity: sandbox.Identity | None
    jail: bwrap.Jail


@dataclass
class Trees:
    """The folders of one grade. src and build are the grader's (solutions and hidden tests
    included); the student's file is compiled alone in `student`, whose trees hold neither,
    and src's build only links the library made there."""

    work: Path
    src: Path
    build: Path
    build_env: dict[str, str]  # the grader's builds
    run_env: dict[str, str]  # every run of the student's code (scrubbed)
    identity: sandbox.Identity | None  # the unprivileged user student code runs as
    student: StudentTree
    # lab folder -> the cached reference (grader/refcache.py); a lab not in it builds its
    # reference in `build`
    references: dict[str, refcache.Entry] = field(default_factory=dict)
    # lab folder -> its links (kind -> argv, grader/linking.py) from the cached entry; such a
    # lab's student-linked executables are linked from the entry, not built in `build`
    links: dict[str, dict[str, list[str]]] = field(default_factory=dict)


@dataclass
class StudentBuild:
    """The student's build: `compiled` when the library compiled (the static checks can
    run), `outcome` the build as a whole (compiled and linked)."""

    compiled: bool
    outcome: workspace.BuildOutcome
    errors: list[str] = field(default_factory=list)  # compiler errors, paths as submitted
    output: str = ""  # the compiler's output when the student's compile failed

    def record(self, errors: list[str] | None = None) -> BuildRecord:
        return BuildRecord(self.outcome.ok, round(self.outcome.seconds, 1),
                           self.errors if errors is None else errors, self.outcome.timed_out,
                           output=self.output)


@dataclass
class LabJob:
    """One lab to grade: its rubric, where, and how (seed, time limits, GPU or not)."""

    lab: LabPaths  # with root = the grade's src tree
    rubric: Rubric
    trees: Trees
    seed: int
    build_timeout: float
    test_timeout: float
    has_gpu: bool
    why_no_gpu: str
    missing: list[str] = field(default_factory=list)  # student files the submission lacks
    student_paths: dict[str, str] = field(default_factory=dict)  # placed path -> as submitted
    say: Callable[[str], None] = lambda text: None  # progress
    gpu_section: GpuSection = no_lock
    # the student's build when it was made together with the other labs' (build.together)
    prebuilt: StudentBuild | None = None
    log: Callable[[str], None] = lambda text: None  # whole build/test output (grade.log)
    costs: Meter = field(default_factory=Meter)  # each stage's wall time and processes
