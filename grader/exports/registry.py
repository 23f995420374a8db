"""The export formats by name, and writing the chosen ones beside a result.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from ..atomic import write_atomic
from ..result import GradeResult
from .gradescope import to_gradescope
from .html import to_html
from .junit import to_junit
from .markdown import to_markdown
from .prairielearn import to_prairielearn

def _json(make: Callable[[GradeResult], dict[str, Any]]) -> Callable[[GradeResult], str]:
    return lambda result: json.dumps(make(result), indent=2) + "\n"


# name -> (file under the output folder, the text of that file)
WRITERS: dict[str, tuple[Path, Callable[[GradeResult], str]]] = {
    "gradescope": (Path("gradescope") / "results.json", _json(to_gradescope)),
    "prairielearn": (Path("prairielearn") / "results.json", _json(to_prairielearn)),
    "junit": (Path("junit.xml"), to_junit),
    "markdown": (Path("summary.md"), to_markdown),
    "html": (Path("report.html"), to_html),
}
FORMATS = {name: path for name, (path, _) in WRITERS.items()}


def write_exports(result: GradeResult, out_dir: Path, formats: list[str]) -> list[Path]:
    """Writes each format in `formats` under `out_dir`; returns the paths written.
    Unknown formats raise ValueError before anything is written."""
    unknown = [f for f in formats if f not in WRITERS]
    if unknown:
        raise ValueError(f"unknown export format(s): {', '.join(unknown)} "
                         f"(choose from {', '.join(WRITERS)})")
    written = []
    for fmt in dict.fromkeys(formats):
        path, make = WRITERS[fmt]
        written.append(write_atomic(Path(out_dir) / path, make(result)))
    return written


__all__ = ["FORMATS", "WRITERS", "write_exports"]
