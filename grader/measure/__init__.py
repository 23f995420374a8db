"""The GPU measurements of a lab, one module per tool, each running its tool, reading its
output and keeping its result record: `sanitizer` (compute-sanitizer: memory safety),
`profiler` (Nsight Compute: the [[metrics]] entries) and `bench` (the bench, student and
reference: speed), whose document grader/benchdoc.py reads into records and `floor` holds against
the GPU's measured limits. Each returns a typed measurement; the points are given by
grader/scoring.py. A tool that is missing or refuses to run leaves the measurement's
`unmeasured` reason set ("not measured": no points either way).
(docs/architecture.md, "Stages and the data they pass")
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import bwrap, sandbox

# What compute-sanitizer and ncu print when this machine does not let them at the GPU.
REFUSED_RE = re.compile(r"ERR_NVGPUCTRPERM|permission|not supported on this|"
                        r"Insufficient privilege|not allowed", re.IGNORECASE)


@dataclass
class Context:
    """What a measurement needs to run the student's binaries."""

    run_dir: Path  # the grader's folder; each process gets a new one of its own in it
    env: dict[str, str]
    identity: sandbox.Identity | None
    seed: int
    timeout: float
    binary: Callable[[str], Path | None]  # "tests_student" -> path, None if not built
    jail: bwrap.Jail | None = None  # where the student's binaries run (grader/sandbox.py)
    # time.monotonic() after which no more GPU work of this lab may start: one submission
    # can never hold the GPU (and a batch's GPU lock) past the lab's GPU time limit
    deadline: float = math.inf
    # False where the checkout has no reference solution (a student copy): the speed part
    # times the student's bench alone, for feedback (student_only).
    has_reference: bool = True
    # The runner of the student's object when the lab's tests run as checker and runner
    # (grader/stages/tests.py); binary() then also knows the checkers.
    remote: Path | None = None

    def limit(self, seconds: float) -> float:
        """A stage's time limit, cut to what is left of the lab's GPU time (at least 1 s, so
        a run that starts after the deadline ends at once as timed out)."""
        return max(1.0, min(seconds, self.deadline - time.monotonic()))
