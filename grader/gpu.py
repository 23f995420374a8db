"""The GPU section: what the pipeline enters around every stage that uses the GPU (tests on
the GPU, compute-sanitizer, bench timing, profiler). A batch passes a section that holds a
machine-wide lock; alone, no lock is needed."""

from __future__ import annotations

import contextlib
from typing import Callable, ContextManager

# gpu_section("tests" | "sanitizer" | "bench" | "profiler") -> a context manager
GpuSection = Callable[[str], ContextManager[None]]


def no_lock(stage: str) -> ContextManager[None]:
    """The default GPU section: nothing to hold."""
    return contextlib.nullcontext()
