"""Submissions as platforms hand them over, mapped onto the repository's layout.

The grader takes a student's files from a folder laid out like the repository
(`labs/04_tiled_matmul/tiled_matmul.cu`). Platforms store them otherwise:

- **flat**: the files alone, by their base names (`tiled_matmul.cu`), as Gradescope puts
  an upload in `/autograder/submission` and PrairieLearn in `/grade/student`;
- **Canvas** "Download submissions": one folder of files named
  `<login>_<user id>_<submission id>_<file name>` (`_LATE_` after the login for a late
  one; a file submitted again gets `-1`, `-2` … before its extension);
- **Moodle** "Download all submissions": one folder per student named
  `<full name>_<participant id>_assignsubmission_file_` holding the student's files;
- **folders of flat uploads** (Gradescope's or PrairieLearn's downloads): one folder per
  student holding the files by name, not laid out like the repository.

A file is mapped by its base name to the lab path of the rubric's `student_files` with
that name, so a lab's file names must differ between the labs graded together. Only
regular files are copied (links are never followed), each at most 4 MiB.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .paths import LabPaths
from .rubric import RubricError, load_rubric

MAX_FILE = 4 * 1024 * 1024
STAGED = "lms-submissions"  # the folder under a batch's --out that holds mapped downloads
INFO_FILE = "lms.json"

CANVAS_RE = re.compile(r"^(?P<login>[A-Za-z0-9]+?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<sub>\d+)_"
                       r"(?P<name>.+)$")
MOODLE_RE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")
_AGAIN_RE = re.compile(r"-(?P<n>\d+)(?=\.[^.]+$)")  # Canvas: tiled_matmul-1.cu


# The batch's own files and folders in --out: no student's folder may take one of these
# names (compared without letter case).
RESERVED = frozenset(n.casefold() for n in (
    "batch.json", "gradebook.csv", "summary.md", "manifest.json", "integrity.md",
    "overrides.csv", "canvas-import.csv", "moodle-import.csv", STAGED, "slurm", "fetched.json"))


class DownloadError(ValueError):
    """An LMS download the grader cannot map onto students for sure: one line per problem."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass
class Download:
    """One student's entry in an LMS download."""

    student: str  # the folder name the grader uses (letters, digits, . _ @ + -)
    source: str  # "canvas" or "moodle"
    name: str  # Canvas's login, Moodle's full name
    lms_id: str  # Canvas's user id, Moodle's participant id
    late: bool = False
    files: dict[str, str] = field(default_factory=dict)  # lab path -> the file as downloaded
    ignored: list[str] = field(default_factory=list)  # files that match no student file


def student_files_by_name(labs: list[LabPaths]) -> dict[str, str]:
    """Base name -> the lab path it goes to, from the labs' rubrics."""
    out: dict[str, str] = {}
    for lab in labs:
        try:
            files = load_rubric(lab).student_files
        except (RubricError, OSError):
            continue
        for rel in files:
            out.setdefault(Path(rel).name, rel)
    return out


def base_name(name: str) -> tuple[str, int]:
    """A downloaded file's original name and its resubmission number (Canvas's `-N`)."""
    m = _AGAIN_RE.search(name)
    if not m:
        return name, 0
    return name[:m.start()] + name[m.end():], int(m.group("n"))


def _copy(src: Path, dest: Path) -> bool:
    if src.is_symlink() or not src.is_file() or src.stat().st_size > MAX_FILE:
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.is_symlink():
        dest.unlink()
    dest.write_bytes(src.read_bytes())
    return True


def stage_flat(src: Path, dest: Path, by_name: dict[str, str]) -> dict[str, str]:
    """Copies the student files found in `src` into `dest` at their lab paths: at a lab
    path already (a folder laid out like the repository), else by base name at the top or
    in a folder below (an upload of a folder or an unpacked archive), the shallowest
    first. Returns lab path -> the file it came from, relative to `src`."""
    placed: dict[str, str] = {}
    for name, rel in by_name.items():
        candidates = [src / rel] + sorted(
            (p for p in src.rglob(name) if p.is_file() and not p.is_symlink()),
            key=lambda p: (len(p.relative_to(src).parts), str(p)))
        for path in candidates:
            steps = path.relative_to(src).parts
            if any((src.joinpath(*steps[:i + 1])).is_symlink() for i in range(len(steps))):
                continue  # a link on the way: never followed
            if _copy(path, dest / rel):
                placed[rel] = str(path.relative_to(src))
                break
    return placed


def slug(text: str) -> str:
    """A folder name from a person's name: "Smith, John" -> "Smith_John"."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.findall(r"[A-Za-z0-9]+", ascii_text)
    return "_".join(words)[:80] or "student"


def layout(folder: Path) -> str | None:
    """"canvas" or "moodle" when `folder` is such a download; None otherwise."""
    if not folder.is_dir():
        return None
    entries = [e for e in folder.iterdir() if not e.name.startswith(".")]
    if any(e.is_dir() and MOODLE_RE.match(e.name) for e in entries):
        return "moodle"
    if any(e.is_file() and CANVAS_RE.match(e.name) for e in entries):
        return "canvas"
    return None


def read_canvas(folder: Path, by_name: dict[str, str]) -> dict[str, Download]:
    """Students of a Canvas download, by user id, with the latest version of each file."""
    found: dict[str, Download] = {}
    best: dict[tuple[str, str], tuple[int, int]] = {}
    for entry in sorted(folder.iterdir()):
        m = CANVAS_RE.match(entry.name)
        if not m or not entry.is_file() or entry.is_symlink():
            continue
        user = m.group("user")
        d = found.setdefault(user, Download("", "canvas", m.group("login"), user))
        d.late = d.late or bool(m.group("late"))
        original, again = base_name(m.group("name"))
        rel = by_name.get(original)
        if rel is None:
            d.ignored.append(entry.name)
            continue
        rank = (again, int(m.group("sub")))
        if (user, rel) not in best or rank > best[(user, rel)]:
            best[(user, rel)] = rank
            d.files[rel] = entry.name
    return found


def read_moodle(folder: Path, by_name: dict[str, str]) -> dict[str, Download]:
    found: dict[str, Download] = {}
    for entry in sorted(folder.iterdir()):
        m = MOODLE_RE.match(entry.name)
        if not m or not entry.is_dir() or entry.is_symlink():
            continue
        d = found.setdefault(m.group("id"), Download("", "moodle", m.group("name"),
                                                     m.group("id")))
        for path in sorted(entry.rglob("*")):
            if path.is_file() and not path.is_symlink():
                rel_name = str(path.relative_to(folder))
                rel = by_name.get(base_name(path.name)[0])
                if rel is None:
                    d.ignored.append(rel_name)
                elif rel not in d.files or len(Path(rel_name).parts) < len(
                        Path(d.files[rel]).parts):
                    d.files[rel] = rel_name
    return found


def _name_students(found: dict[str, Download]) -> list[Download]:
    """Folder names: the login or the name (submissions.slug), with the LMS id added where
    two would be the same (letter case aside, as on a file system that ignores it) or where
    the name is one of the batch's own files. Raises DownloadError when two are still the
    same (never a folder graded for two students)."""
    downloads = list(found.values())
    names = [slug(d.name) for d in downloads]
    with_id = [False] * len(downloads)
    for _ in range(2):
        folded = [n.casefold() for n in names]
        for i, d in enumerate(downloads):
            clash = folded.count(folded[i]) > 1 or folded[i] in RESERVED
            if clash and not with_id[i]:
                names[i], with_id[i] = f"{names[i]}_{d.lms_id}", True
    folded = [n.casefold() for n in names]
    problems = []
    for i, d in enumerate(downloads):
        same = [downloads[j] for j in range(len(downloads)) if folded[j] == folded[i] and j != i]
        if same or folded[i] in RESERVED:
            who = ", ".join(f"{x.name!r} (id {x.lms_id})" for x in [d, *same])
            problems.append(f"{d.source} download: {who} would share the folder {names[i]!r}")
    if problems:
        raise DownloadError(sorted(set(problems)))
    for d, name in zip(downloads, names):
        d.student = name
    return downloads


def flat_folders(folder: Path, by_name: dict[str, str]) -> bool:
    """True when a student's folder holds a student file by name at its top, not at its
    lab path (a download of flat uploads)."""
    for entry in folder.iterdir() if folder.is_dir() else []:
        if entry.is_dir() and not entry.name.startswith(".") and not (entry / "labs").is_dir() \
                and any((entry / name).is_file() for name in by_name):
            return True
    return False


@dataclass
class Staging:
    """An LMS download or a folder of flat uploads read and named, nothing written yet."""

    source: Path
    kind: str  # "canvas", "moodle" or "folders"
    downloads: list[Download]  # "folders": one per student folder, its name as is
    ignored: list[str] = field(default_factory=list)  # entries that are no student's
    by_name: dict[str, str] = field(default_factory=dict)  # student_files_by_name

    @property
    def info(self) -> dict[str, dict[str, Any]]:
        return {d.student: asdict(d) for d in self.downloads if d.source != "folders"}


def read_download(source: Path, labs: list[LabPaths]) -> Staging | None:
    """The download at `source`, its students named (nothing written); None when it is not
    a Canvas or Moodle download nor a folder of flat uploads. Raises DownloadError where two
    students would share a folder or a student's folder is a symbolic link."""
    source = Path(source)
    by_name = student_files_by_name(labs)
    kind = layout(source) or ("folders" if flat_folders(source, by_name) else None)
    if kind is None:
        return None
    if kind == "folders":
        return _read_folders(source, by_name)
    pattern = CANVAS_RE if kind == "canvas" else MOODLE_RE
    ignored = sorted(e.name for e in source.iterdir()
                     if not e.name.startswith(".") and not pattern.match(e.name))
    found = (read_canvas if kind == "canvas" else read_moodle)(source, by_name)
    links = sorted(e.name for e in source.iterdir() if pattern.match(e.name) and e.is_symlink())
    if links:
        raise DownloadError([f"{source / name}: a symbolic link (a download holds the files "
                             "themselves; one submission is one student's)" for name in links])
    return Staging(source, kind, _name_students(found), ignored)


def write_staging(staging: Staging, out_dir: Path) -> Path:
    """The students' files copied to their lab paths, one folder each, under
    `out_dir`/lms-submissions, with lms.json saying who is who and which files of the
    download were ignored; returns that folder."""
    dest = Path(out_dir) / STAGED
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    if staging.kind == "folders":
        for d in staging.downloads:
            (dest / d.student).mkdir()
            stage_flat(staging.source / d.student, dest / d.student, staging.by_name)
        return dest
    for d in staging.downloads:
        folder = dest / d.student
        folder.mkdir()
        for rel, downloaded in list(d.files.items()):
            if not _copy(staging.source / downloaded, folder / rel):
                d.ignored.append(downloaded)
                del d.files[rel]
    info = {"students": staging.info, "ignored": staging.ignored}
    (dest / INFO_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return dest


def _read_folders(source: Path, by_name: dict[str, str]) -> Staging:
    downloads, problems = [], []
    for entry in sorted(source.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_symlink() and entry.is_dir():
            problems.append(f"{entry}: a symbolic link to {entry.resolve()} (one submission "
                            "is one student's folder)")
        elif entry.is_dir():
            downloads.append(Download(entry.name, "folders", entry.name, ""))
    if problems:
        raise DownloadError(problems)
    return Staging(source, "folders", downloads, by_name=by_name)


def read_info(out_dir: Path) -> dict[str, dict[str, Any]]:
    """The students of a staged download (`lms.json`), {} when the batch had none."""
    try:
        data = json.loads((Path(out_dir) / STAGED / INFO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    students: dict[str, dict[str, Any]] = (data.get("students", {}) if "students" in data
                                           else data)
    return students


__all__ = ["Download", "student_files_by_name", "stage_flat", "layout",
           "read_canvas", "read_moodle", "read_info", "base_name", "slug", "STAGED",
           "read_download", "write_staging", "Staging", "DownloadError", "RESERVED"]
