"""The student copy: this repository without what only the grader may see.

What goes in is a list of top-level entries (the labs with their skeletons, handouts, the
common library, the grader, the build files, tools, docs, the CI workflows); anything else,
new folders included, stays out unless added here. Left out besides: the reference
solutions with their hidden tests, and the grader's own tests that are made from the
solutions. Before anything is written, every file that would go in is searched for the
solutions' own lines (the code in their marked regions and the hidden tests' lines that no
public file has), so a solution pasted into a fixture or a handout stops the release.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from . import skeleton
from .paths import ROOT, discover_labs

# Top-level entries of the student copy (files or folders; folders whole unless below).
INCLUDE_TOP = ("labs", "handouts", "common", "grader", "cmake", "docs", "tools", ".ci",
               ".github/workflows", "CMakeLists.txt", "CMakePresets.json", "README.md",
               ".gitignore", "LICENSE*", ".clang-format")
# Left out although inside an included folder (glob patterns on the relative path).
EXCLUDE = (
    "solutions/*",
    "grader/tests/fixtures/*",  # submissions written as edits of the reference solution
    "grader/tests/lab_fixtures.py",  # makes those submissions from solutions/
    "grader/tests/test_e2e_lab04.py",  # grades them: needs the reference
    "grader/tests/test_fixtures.py",  # checks the recipes against the solutions
    "*/__pycache__/*", "*.pyc",
)
MIN_LINE = 16  # shorter lines ("}", "return 0;") prove nothing
TEXT_SUFFIXES = {".cu", ".cuh", ".cpp", ".hpp", ".h", ".c", ".py", ".md", ".txt", ".json",
                 ".toml", ".cmake", ".yml", ".yaml", ".svg", ".sh", ".in", ".csv", ".xml", ""}


class ReleaseError(Exception):
    """The release cannot be made (a leak, a bad output folder); the message says why."""


@dataclass
class Release:
    files: list[str]  # relative paths, in the copy
    left_out: list[str]  # candidates excluded by a rule
    leaks: list[str] = field(default_factory=list)  # "path: line" found in an included file


def candidate_files(root: Path = ROOT) -> list[str]:
    """The files of the working tree that version control would keep: tracked ones and
    untracked ones not ignored (outside a git checkout: every file but build trees)."""
    if (root / ".git").exists() and shutil.which("git"):
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, timeout=120,
                             check=True).stdout.decode()
        names = sorted({n for n in out.split("\0") if n})
        return [n for n in names if (root / n).is_file() and not (root / n).is_symlink()]
    names = []
    for dirpath, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirs[:] = [d for d in dirs if not (d.startswith("build") or d in (".git", ".deps",
                                                                         ".grader"))]
        for f in files:
            names.append(os.path.normpath(os.path.join(rel_dir, f)))
    return sorted(names)


def included(rel: str) -> bool:
    rel = rel.replace(os.sep, "/")
    if any(fnmatch.fnmatch(rel, pattern) for pattern in EXCLUDE):
        return False
    return any(rel == top or rel.startswith(top + "/") or fnmatch.fnmatch(rel, top)
               for top in INCLUDE_TOP)


def _lines(text: str) -> set[str]:
    return {ln.strip() for ln in text.splitlines() if ln.strip()}


def _public_text(root: Path) -> str:
    """What students may read anyway: the labs' files, the common library and the
    handouts (whose authors quote code on purpose), as one string."""
    parts = []
    for top in ("labs", "common", "handouts"):
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and path.suffix in TEXT_SUFFIXES:
                parts.append(path.read_text(errors="replace"))
    return "\n".join(parts)


def solution_only_lines(root: Path = ROOT) -> dict[str, str]:
    """Line -> the solution file it comes from, for every line only the solutions have:
    the code inside each reference's marked regions, and every line of the hidden tests
    (and of any other file under solutions/), that appears nowhere in labs/, common/ or
    handouts/."""
    secret: dict[str, str] = {}
    solutions = root / "solutions"
    if not solutions.is_dir():
        return secret
    public = _public_text(root)
    references = {lab.solution_file for lab in discover_labs(root)}
    for path in sorted(solutions.rglob("*")):
        if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
            continue
        text = path.read_text(errors="replace")
        lines = _region_lines(text) if path in references else _lines(text)
        for line in sorted(lines):
            if len(line) >= MIN_LINE and not line.startswith("//") and line not in public:
                secret.setdefault(line, str(path.relative_to(root)))
    return secret


def _region_lines(text: str) -> set[str]:
    """The stripped lines inside the solution parts of the marked regions."""
    out: set[str] = set()
    state = "outside"
    for line in text.splitlines():
        if state == "outside":
            if skeleton.BEGIN.match(line):
                state = "solution"
        elif skeleton.END.match(line):
            state = "outside"
        elif skeleton.STUB.match(line):
            state = "stub"
        elif state == "solution" and line.strip():
            out.add(line.strip())
    return out


def find_leaks(root: Path, files: list[str], secret: dict[str, str]) -> list[str]:
    """"path: line (from solution file)" for each solution-only line found in `files`."""
    leaks = []
    for rel in files:
        path = root / rel
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary: figures are SVG (text), so nothing to search here
        for line, source in secret.items():
            if line in text:
                leaks.append(f"{rel}: {line!r} (from {source})")
    return leaks


def plan_release(root: Path = ROOT) -> Release:
    candidates = candidate_files(root)
    files = [c for c in candidates if included(c)]
    left_out = [c for c in candidates if not included(c)]
    return Release(files, left_out, find_leaks(root, files, solution_only_lines(root)))


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=True)


def source_revision(root: Path) -> str | None:
    try:
        return _git(["rev-parse", "--short", "HEAD"], root).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def make_release(out_dir: Path, root: Path = ROOT, force: bool = False,
                 commit: bool = True) -> Release:
    """Writes the student copy into `out_dir` (a new or empty folder; with `force` an
    existing one is replaced) as a fresh git repository with one commit."""
    out_dir = Path(out_dir).resolve()
    root = Path(root).resolve()
    if out_dir == root or root in out_dir.parents:
        raise ReleaseError(f"{out_dir} is inside the repository; choose a folder outside it")
    release = plan_release(root)
    if release.leaks:
        shown = "\n  ".join(release.leaks[:20])
        raise ReleaseError(f"{len(release.leaks)} solution line(s) would be in the student "
                           f"copy; nothing was written:\n  {shown}")
    if out_dir.exists() and any(out_dir.iterdir()):
        if not force:
            raise ReleaseError(f"{out_dir} exists and is not empty (use --force to replace it)")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for rel in release.files:
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target)
    if commit:
        if not shutil.which("git"):
            raise ReleaseError("git is not installed: the copy is written but not committed")
        revision = source_revision(root)
        _git(["init", "-q"], out_dir)
        _git(["add", "-A"], out_dir)
        who = []
        try:
            _git(["config", "user.email"], out_dir)
        except subprocess.CalledProcessError:
            who = ["-c", "user.name=Course staff", "-c", "user.email=staff@localhost"]
        message = "CUDA Memory Labs: student copy" + (f" of {revision}" if revision else "")
        _git([*who, "commit", "-q", "-m", message], out_dir)
    return release


__all__ = ["Release", "ReleaseError", "make_release", "plan_release", "solution_only_lines",
           "find_leaks", "included", "candidate_files", "INCLUDE_TOP", "EXCLUDE"]
