"""Writing a file whole or not at all: a reader (a resumed batch, a CI step, a person)
never sees half of a result, a plan or a stamp."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, text: str, mode: int = 0o600) -> Path:
    """Writes `text` to `path` through a temporary file beside it, renamed over it. The
    file is the grader's alone by default (0600): student code never reads a grade."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


__all__ = ["write_atomic"]
