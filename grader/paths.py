"""Where things are in the repository; the lab list is the folders themselves
(docs/architecture.md, "How a lab plugs in")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAB_DIR_RE = re.compile(r"^(\d\d)_([a-z0-9_]+)$")


def lab_name_parts(folder: str) -> tuple[str, str]:
    """(number, topic) of a lab folder's name: "04_tiled_matmul" -> ("04", "tiled_matmul");
    a ValueError for a name that is not NN_topic."""
    m = LAB_DIR_RE.match(folder)
    if m is None:
        raise ValueError(f"'{folder}' is not a lab folder name (NN_topic)")
    return m.group(1), m.group(2)


@dataclass(frozen=True)
class LabPaths:
    """The folders and files of one lab."""

    folder: str  # e.g. "04_tiled_matmul"
    number: str  # e.g. "04"
    topic: str  # e.g. "tiled_matmul"
    root: Path

    @property
    def lab_dir(self) -> Path:
        return self.root / "labs" / self.folder

    @property
    def solution_dir(self) -> Path:
        return self.root / "solutions" / self.folder

    @property
    def student_file(self) -> Path:
        return self.lab_dir / f"{self.topic}.cu"

    @property
    def solution_file(self) -> Path:
        return self.solution_dir / f"{self.topic}.cu"

    @property
    def tag(self) -> str:
        return f"lab{self.number}"


def discover_labs(root: Path = ROOT) -> list[LabPaths]:
    """Every labs/NN_topic folder, in order."""
    labs_root = root / "labs"
    if not labs_root.is_dir():
        return []
    found = []
    for entry in sorted(labs_root.iterdir()):
        m = LAB_DIR_RE.match(entry.name)
        if entry.is_dir() and m:
            found.append(LabPaths(entry.name, m.group(1), m.group(2), root))
    return found


def find_lab(key: str, root: Path = ROOT) -> LabPaths:
    """A lab by number ("4", "04") or folder name; raises KeyError with the choices."""
    labs = discover_labs(root)
    for lab in labs:
        if key in (lab.folder, lab.number, lab.number.lstrip("0"), lab.tag):
            return lab
    choices = ", ".join(lab.folder for lab in labs) or "none"
    raise KeyError(f"no lab '{key}' (labs here: {choices})")
