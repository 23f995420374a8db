"""The batch's inputs and records: the plan (`batch.json`: submissions, labs, seed, limits),
the roster that makes it, and each task's stamp (`<student>/stamp.json`)."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..atomic import write_atomic
from ..gpu import DEFAULT_LOCK
from ..paths import LabPaths, find_lab
from ..result import GradeResult
from ..submissions import RESERVED

PLAN_SCHEMA = "cml-batch/1"
PLAN_FILE = "batch.json"
STAMP_FILE = "stamp.json"
DEFAULT_TIMEOUT = 1800.0
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$")

# Stamp.status
GRADED, TIMED_OUT, INTERRUPTED, GRADER_ERROR = "graded", "timeout", "interrupted", "error"
KEEP_ON_RESUME = (GRADED, TIMED_OUT)  # the others are graded again


class BatchError(Exception):
    """A problem with the batch's input (roster, folder, plan): said to the user as is."""


class BatchProblems(BatchError):
    """Every problem found in a batch's inputs before anything was written: one line each
    (the file, the row where there is one, what is wrong)."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = list(problems)


@dataclass
class Submission:
    student: str
    path: str  # absolute: what is graded (for a git submission, its pinned commit's tree)
    source: str | None = None  # a git submission: the repository the commit was taken from
    sha: str | None = None  # the commit graded
    commit_time: str | None = None  # its committer date (ISO 8601)
    deadline: str | None = None  # the student's deadline (an extension, else the batch's)
    late: str = ""  # the gradebook's `late` column
    late_factor: float = 1.0  # what the late policy multiplies the points by
    late_days: float = 0.0  # how late the graded commit was (0: on time, or not a git submission)
    fetched_at: str | None = None  # when the staff fetched the repository (--fetched-at)


@dataclass
class Plan:
    """Everything a task needs to grade submission i; written once per batch as batch.json."""

    repo: str
    labs: list[str]  # lab folders
    seed: int
    timeout: float  # wall-clock seconds per submission (time waiting for the GPU excluded)
    submissions: list[Submission]
    formats: list[str] = field(default_factory=lambda: ["gradescope", "prairielearn",
                                                        "junit", "markdown"])
    gpu_lock: str = DEFAULT_LOCK
    no_gpu: bool = False
    build_timeout: float | None = None
    test_timeout: float | None = None
    cache: str | None = None  # the reference cache (grader/refcache.py); None: none
    require_tools: list[str] = field(default_factory=list)  # refused on a node without them
    deadline: str | None = None
    late_policy: str = "cutoff"
    schema: str = PLAN_SCHEMA

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @staticmethod
    def load(out_dir: Path) -> "Plan":
        path = Path(out_dir) / PLAN_FILE
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise BatchError(f"{path}: cannot read the batch plan ({err})") from None
        if data.get("schema") != PLAN_SCHEMA:
            raise BatchError(f"{path}: not a batch plan (schema {data.get('schema')!r})")
        data["submissions"] = [Submission(**s) for s in data["submissions"]]
        return Plan(**data)

    def save(self, out_dir: Path) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        return write_atomic(out_dir / PLAN_FILE, self.to_json())

    def lab_paths(self) -> list[LabPaths]:
        root = Path(self.repo)
        return [find_lab(folder, root) for folder in self.labs]


@dataclass
class Stamp:
    """What one task graded and how it ended (`<student>/stamp.json`)."""

    student: str
    submission: str
    key: str  # hash of the student files, the grader's fingerprint, labs, seed, GPU use
    files: dict[str, str]  # student file -> sha256 ("missing" when absent)
    status: str  # GRADED, TIMED_OUT, INTERRUPTED, GRADER_ERROR
    points: float
    max_points: float
    seconds: float
    gpu_wait_seconds: float
    finished: str
    host: str
    sha: str | None = None  # a git submission: the commit graded
    commit_time: str | None = None


def read_submissions(source: Path) -> list[Submission]:
    """A folder with one submission per student (a folder laid out like the repository,
    or a git repository), or a CSV roster with columns student,path (paths relative to the
    roster's folder). Raises BatchProblems with every problem found: a name that cannot be
    a folder or is one of the batch's own files, a student twice, a
    path that does not exist, a student folder that is a symbolic link, two students with
    one folder."""
    source = Path(source)
    subs: list[Submission] = []
    where: list[str] = []  # where each submission is named (for the messages)
    links: dict[str, str] = {}  # student -> the folder a link of theirs points to
    problems: list[str] = []
    if source.is_file():
        with source.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            header = [h.strip().lower() for h in (reader.fieldnames or [])]
            if "student" not in header or "path" not in header:
                raise BatchProblems([f"{source}: a roster needs the columns student,path "
                                     f"(found: {', '.join(header) or 'none'})"])
            for number, row in enumerate(reader, start=2):
                row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
                if not row.get("student") and not row.get("path"):
                    continue
                path = Path(row["path"])
                if not path.is_absolute():
                    path = source.parent / path
                if not path.exists():
                    problems.append(f"{source}:{number}: {row['path']} does not exist")
                    continue
                if path.is_symlink():
                    links[row["student"]] = str(path.resolve())
                subs.append(Submission(row["student"], str(path.resolve())))
                where.append(f"{source}:{number}")
    elif source.is_dir():
        for entry in sorted(source.iterdir()):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            name = entry.name[:-4] if entry.name.endswith(".git") else entry.name
            if entry.is_symlink():
                links[name] = str(entry.resolve())
            subs.append(Submission(name, str(entry.resolve())))
            where.append(str(entry))
    else:
        raise BatchProblems([f"{source} is neither a folder of submissions nor a CSV roster"])
    seen: dict[str, str] = {}
    folders: dict[str, str] = {}
    for sub, here in zip(subs, where):
        if not NAME_RE.match(sub.student):
            problems.append(f"{here}: student name {sub.student!r} cannot be a folder name "
                            "(use letters, digits and . _ @ + -)")
        elif sub.student.casefold() in RESERVED:
            problems.append(f"{here}: student name {sub.student!r} is one of the batch's own "
                            "files (name the student otherwise)")
        if sub.student in seen:
            problems.append(f"{here}: student {sub.student!r} appears twice (also at "
                            f"{seen[sub.student]})")
        seen.setdefault(sub.student, here)
        if sub.student in links:
            problems.append(f"{here}: {sub.student}'s submission is a symbolic link to "
                            f"{links[sub.student]} (refused: one submission is one "
                            "student's folder)")
        if sub.path in folders:
            problems.append(f"{here}: {folders[sub.path]} and {sub.student} are the same "
                            f"folder {sub.path} (one submission is one student's)")
        folders.setdefault(sub.path, sub.student)
    if not subs and not problems:
        problems.append(f"{source}: no submissions found")
    if problems:
        raise BatchProblems(problems)
    return subs


def read_stamp(out_dir: Path, student: str) -> Stamp | None:
    try:
        return Stamp(**json.loads((out_dir / student / STAMP_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def is_current(out_dir: Path, student: str, key: str) -> bool:
    """True when this exact submission was already graded by this grader (not regraded)."""
    stamp = read_stamp(out_dir, student)
    return (stamp is not None and stamp.key == key and stamp.status in KEEP_ON_RESUME
            and (out_dir / student / "result.json").is_file())


def load_result(out_dir: Path, student: str) -> GradeResult | None:
    try:
        return GradeResult.from_json((out_dir / student / "result.json").read_text())
    except (OSError, ValueError, TypeError):
        return None
