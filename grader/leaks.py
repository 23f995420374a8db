"""Keeps what a student must not see out of what they are shown.

Everything a student sees (test messages, reasons, build errors; so result.json and every
export made from it) passes through `Secrets.scrub` before it is written: a line of a hidden
test's source or of the reference solution that the student's own copy does not contain is
replaced by a notice, and the grader's folders are cut out of paths. The jail already keeps
these files out of the student's reach; this is the second wall, for text that leaves by
another door (an exception message, a compiler's echo of an included line).
(docs/architecture.md, "Trust boundaries")
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .result import LabResult

# The temporary tree the reference cache builds in (grader/refcache.py: <cache>/tmp/fill-XXXX/
# src/labs/...): a path into it reads from the repository's root, as `labs/...`.
_CACHE_BUILD = re.compile(r"(?:/[^/\s'\"():,;=]+)*/fill-[A-Za-z0-9_]+/(?:src|build)/")
MIN_SECRET = 16  # shorter lines ("}", "return out;") say nothing and are everywhere
NOTICE = "[withheld: text from the grader's hidden tests or reference]"


def _lines(text: str) -> set[str]:
    return {" ".join(line.split()) for line in text.splitlines()}


@dataclass
class Secrets:
    """Lines of the hidden tests and the reference not found in the public files, and the
    folders of the grader's own trees."""

    lines: set[str] = field(default_factory=set)
    folders: list[str] = field(default_factory=list)

    @staticmethod
    def of_lab(src: Path, lab_folder: str, folders: list[Path]) -> "Secrets":
        solution = src / "solutions" / lab_folder
        public_dir = src / "labs" / lab_folder
        public: set[str] = set()
        for path in sorted(public_dir.rglob("*")):
            if path.is_file() and path.suffix in (".cu", ".cuh", ".cpp", ".hpp", ".h", ".md"):
                public |= _lines(path.read_text(errors="replace"))
        for path in sorted((src / "common").rglob("*")):
            if path.is_file():
                public |= _lines(path.read_text(errors="replace"))
        secret: set[str] = set()
        if solution.is_dir():
            for path in sorted(solution.rglob("*")):
                if path.is_file():
                    secret |= _lines(path.read_text(errors="replace"))
        secret = {s for s in secret - public if len(s) >= MIN_SECRET}
        return Secrets(secret, sorted({str(f) for f in folders}, key=len, reverse=True))

    def scrub(self, text: str) -> str:
        for folder in self.folders:
            text = text.replace(folder + os.sep, "").replace(folder, "<grader>")
        text = _CACHE_BUILD.sub("", text)
        if not self.lines:
            return text
        out = []
        for line in text.splitlines(keepends=True):
            squeezed = " ".join(line.split())
            if any(s in squeezed for s in self.lines if len(s) <= len(squeezed)):
                out.append(NOTICE + ("\n" if line.endswith("\n") else ""))
            else:
                out.append(line)
        return "".join(out)

    def scrub_lab(self, lab: LabResult) -> None:
        """Scrubs every text of a lab's result that a student is shown."""
        for test in lab.tests:
            test.messages = [self.scrub(m) for m in test.messages]
        for part in lab.parts:
            part.reason = self.scrub(part.reason)
            part.details = _scrub_value(part.details, self)
        if lab.build is not None:
            lab.build.errors = _scrub_value(lab.build.errors, self)
            lab.build.test_runs = _scrub_value(lab.build.test_runs, self)
            lab.build.output = self.scrub(lab.build.output)


def _scrub_value(value: Any, secrets: Secrets) -> Any:
    """`value` (a record's JSON: texts, and lists and tables of them) with every text
    scrubbed."""
    if isinstance(value, str):
        return secrets.scrub(value)
    if isinstance(value, list):
        return [_scrub_value(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_value(v, secrets) for k, v in value.items()}
    return value
