"""Every output format, made from one GradeResult (result.json, schema cml-result/1).

    to_gradescope(result) -> dict       Gradescope autograder results.json
    to_prairielearn(result) -> dict     PrairieLearn external grader results.json
    to_junit(result) -> str             JUnit XML (CI test reports)
    to_markdown(result) -> str          PR comment / CI job summary
    to_html(result) -> str              self-contained HTML report with plots
    terminal_table(result, color) -> str
    write_exports(result, out_dir, formats) -> list[Path]

common.py holds what the formats share, so that every one of them shows the same points,
the same statuses and the same reasons; registry.py names the formats
(docs/architecture.md, "Exports").
"""

from __future__ import annotations

from .common import (EPS, FAIL, FLAG, PASS, SKIP, Item, fmt_points, lab_reason, part_outcome,
                     part_reason, score_items, test_counts, test_outcome, timing_summary)
from .gradescope import to_gradescope
from .html import to_html
from .junit import to_junit
from .markdown import to_markdown
from .prairielearn import to_prairielearn
from .registry import FORMATS, write_exports
from .table import terminal_table

__all__ = ["to_gradescope", "to_prairielearn", "to_junit", "to_markdown", "to_html",
           "terminal_table", "write_exports", "FORMATS", "score_items", "Item", "fmt_points",
           "lab_reason", "part_outcome", "part_reason", "test_counts", "test_outcome",
           "timing_summary", "EPS", "PASS", "FAIL", "SKIP", "FLAG"]
