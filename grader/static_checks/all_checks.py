"""The static checks in one call: preprocess the student's file, check its source, then check
its object with what the source check found."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from .objects import check_object
from .nvcc import RunFn, preprocess
from .results import Violation
from .rules import LabRules
from .source import check_preprocessed


def check_submission(student_obj: Path, reference_obj: Path | None, compile_cmd: list[str],
                     rules: LabRules, project: str, display: str, run: RunFn,
                     work_dir: Path, harness: Sequence[Path] = (),
                     source_text: str | None = None) -> list[Violation]:
    """preprocess + check_preprocessed + check_object, for callers that want one call."""
    pre = preprocess(compile_cmd, work_dir, run)
    report = check_preprocessed(pre, rules, project, display, source_text)
    return report.violations + check_object(student_obj, reference_obj, rules, report, harness)
