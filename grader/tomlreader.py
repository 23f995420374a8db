"""The TOML reader every part of the grader uses (`from .tomlreader import tomllib`): the
standard library's on Python 3.11 and newer; on 3.10 the same parser packaged as `tomli`
(Debian's and Ubuntu's python3-tomli), or a message that says where it was looked for."""

from __future__ import annotations

import sys
from typing import Sequence


def toml_missing(executable: str, version: Sequence[int], path: Sequence[str]) -> str:
    """What to do when the interpreter `executable` (Python `version`) finds no tomli on its
    module path `path`: the interpreter and the folders it looked in, named."""
    folders = [p for p in path if p] or ["(an empty module path)"]
    python = executable or "python3"
    return (f"Python {'.'.join(map(str, version[:2]))} ({python}) has no TOML reader for the "
            f"rubrics: it looked for the module tomli in {', '.join(folders)} and found none. "
            f"Install it for this interpreter (`{python} -m pip install tomli`; Debian or "
            "Ubuntu: `apt-get install python3-tomli`, for the system's Python) or run the "
            "grader with Python 3.11 or newer.")


if sys.version_info >= (3, 11):
    import tomllib as tomllib  # `as`: the grader's modules import it from here
else:  # pragma: no cover - Python 3.10
    try:
        import tomli
    except ModuleNotFoundError:
        raise ModuleNotFoundError(toml_missing(sys.executable, sys.version_info[:2], sys.path),
                                  name="tomli") from None
    tomllib = tomli  # a name of this module, so the grader can import it from here
