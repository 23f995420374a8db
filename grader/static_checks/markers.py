"""The line markers of a preprocessed file (`# 12 "file" 1`): which lines are the student's
own, which files were entered from where, `#line`-style switches away from the student's
file, and the student's file and the project root as the compiler (maybe in a jail) saw
them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .nvcc import Preprocessed
from .results import CheckError


_MARKER = re.compile(r'^#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"((?:\s+\d+)*)\s*$')


def _unescape(s: str) -> str:
    return re.sub(r'\\([0-7]{1,3}|.)',
                  lambda m: chr(int(m.group(1), 8)) if m.group(1)[0] in "01234567" else m.group(1),
                  s)


@dataclass
class _Walk:
    own: list[tuple[int, str]]  # (line number, text) of the student's own lines
    pragmas: list[tuple[int, str]]  # (line, pragma text) on the student's lines
    entered: list[tuple[str, int, str]]  # (file, student line or 0, includer) for every file
    renamed: list[tuple[int, str]]  # #line-style switches away from the student's file


def canon(path: str) -> str:
    """A marker's or a root's path, normalised; symlinks resolved where the path exists
    here (the system's and the toolkit's folders; a jail's own paths are kept as they are)."""
    if path.startswith("<"):
        return path
    norm = os.path.normpath(path)
    return os.path.realpath(norm) if os.path.exists(norm) else norm


def walk_markers(text: str, student: str) -> _Walk:
    own, pragmas, entered, renamed = [], [], [], []
    stack: list[str] = []
    current, line = "", 0
    started = False  # the student's file has begun (its first line of text was seen)
    last_own = 0
    # Each name made canonical once per walk: a preprocessed file names a couple of hundred
    # files in thousands of markers, and canon() asks the file system every time.
    names: dict[str, str] = {}
    for raw in text.split("\n"):
        m = _MARKER.match(raw)
        if m:
            number, quoted, flags = int(m.group(1)), m.group(2), m.group(3).split()
            name = names.get(quoted)
            if name is None:
                name = names[quoted] = canon(_unescape(quoted))
            if "1" in flags:
                entered.append((name, line if current == student else 0, current))
                stack.append(current)
            elif "2" in flags:
                if stack:
                    stack.pop()
            elif name != current and current == student and started:
                renamed.append((last_own, name))
            current, line = name, number
            continue
        if current == student:
            started = started or bool(raw.strip())
            if raw.lstrip().startswith("#pragma"):
                pragmas.append((line, raw.strip()[len("#pragma"):].strip()))
            elif raw.strip():
                own.append((line, raw))
            last_own = line
        line += 1
    return _Walk(own, pragmas, entered, renamed)


def main_file(pre: Preprocessed, project: str) -> tuple[str, str]:
    """(the student's file, the project root), both as the compiler saw them."""
    ours = canon(pre.student_file)
    with open(pre.host, encoding="utf-8", errors="replace") as f:
        first = f.readline()
    m = _MARKER.match(first.rstrip("\n"))
    if not m:
        raise CheckError("the preprocessed file does not start with a line marker")
    main = canon(_unescape(m.group(2)))
    if main == ours:
        return main, project
    a, b = ours.split("/"), main.split("/")
    k = 0
    while k < min(len(a), len(b)) and a[-1 - k] == b[-1 - k]:
        k += 1
    if k == 0:
        raise CheckError(f"the preprocessed file's main file {main} is not {ours}")
    ours_root, main_root = "/".join(a[:-k]) or "/", "/".join(b[:-k]) or "/"
    proj = os.path.normpath(project)
    if proj == ours_root or proj.startswith(ours_root.rstrip("/") + "/"):
        proj = os.path.normpath(main_root + "/" + proj[len(ours_root):])
    return main, proj


def shown_path(name: str, project: str) -> str:
    project = os.path.normpath(project)
    if name.startswith(project + os.sep):
        return os.path.relpath(name, project)
    return name
