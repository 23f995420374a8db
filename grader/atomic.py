"""Writing a file whole or not at all: a reader (a resumed batch, a CI step, a person)
never sees half of a result, a plan or a stamp."""

from __future__ import annotations

import os
import signal
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


def write_all(files: dict[Path, str | None], mode: int = 0o600) -> list[Path]:
    """Several files written (or, for None, removed) as one: every new text is first
    written aside (a temporary file beside its path); only when all of them are there are
    they renamed over their paths, one after the other with SIGINT and SIGTERM held back.
    A failure or an interruption before that leaves every file as it was."""
    tmps: dict[Path, Path] = {}
    try:
        for path, text in files.items():
            path = Path(path)
            if text is None:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
            tmp.write_text(text, encoding="utf-8")
            tmp.chmod(mode)
            tmps[path] = tmp
        held = {signal.SIGINT, signal.SIGTERM}
        old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            for path, text in files.items():
                if text is None:
                    Path(path).unlink(missing_ok=True)
                else:
                    os.replace(tmps[Path(path)], path)
                    del tmps[Path(path)]
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
    finally:
        for tmp in tmps.values():
            tmp.unlink(missing_ok=True)
    return [Path(p) for p in files]


__all__ = ["write_atomic", "write_all"]
