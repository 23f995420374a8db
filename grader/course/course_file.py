"""The course file, `grader/course.toml`, which the student copy carries: which way to GPU
feedback this copy is set up for (`[feedback] gpu_path`) and the defaults of `check --slurm`
(`[slurm]`). A missing file or key means the defaults below."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..paths import ROOT
from ..tomlreader import tomllib

COURSE_FILE = Path("grader") / "course.toml"
GPU_PATHS = {
    "slurm": "the course's Slurm cluster: python3 -m grader check NN --slurm on its login node",
    "pr-runners": "pull requests graded by the course's repository on its GPU runners "
                  "(grade-student-prs.yml)",
    "none": "neither the course's cluster nor its GPU runners",
}


class CourseError(ValueError):
    """The course file cannot be read, or says something the grader does not know."""


@dataclass
class SlurmDefaults:
    partition: str | None = None
    account: str | None = None
    gres: str = "gpu:1"
    cpus: int = 4
    mem: str | None = None
    time_minutes: int = 30
    setup: list[str] = field(default_factory=list)
    python: str = "python3"
    sbatch: list[str] = field(default_factory=list)


@dataclass
class Course:
    gpu_path: str = "none"
    slurm: SlurmDefaults = field(default_factory=SlurmDefaults)
    path: Path | None = None  # the file read; None when there is none


def load(root: Path = ROOT) -> Course:
    """The course file of the checkout at `root` (the defaults where it has none)."""
    path = Path(root) / COURSE_FILE
    if not path.is_file():
        return Course()
    try:
        text = path.read_text()
    except OSError as err:
        raise CourseError(f"{COURSE_FILE}: {err}") from err
    course = parse(text)
    course.path = path
    return course


def parse(text: str) -> Course:
    """The course file's text read (the release reads it from the committed tree)."""
    try:
        doc = tomllib.loads(text)
    except ValueError as err:
        raise CourseError(f"{COURSE_FILE}: {err}") from err
    feedback = doc.get("feedback", {})
    gpu_path = str(feedback.get("gpu_path", "none"))
    if gpu_path not in GPU_PATHS:
        raise CourseError(f"{COURSE_FILE}: [feedback] gpu_path = {gpu_path!r}; use one of "
                          f"{', '.join(GPU_PATHS)}")
    table = doc.get("slurm", {})
    base = SlurmDefaults()
    unknown = sorted(set(table) - set(base.__dict__))
    if unknown:
        raise CourseError(f"{COURSE_FILE}: [slurm] has unknown key(s) {', '.join(unknown)}")

    def setting(key: str) -> str | None:
        value = str(table.get(key, getattr(base, key)) or "").strip()
        return value or None

    def strings(key: str) -> list[str]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CourseError(f"{COURSE_FILE}: [slurm] {key} must be a list of strings")
        return list(value)

    try:
        slurm = SlurmDefaults(partition=setting("partition"), account=setting("account"),
                              gres=setting("gres") or "none",
                              cpus=int(table.get("cpus", base.cpus)), mem=setting("mem"),
                              time_minutes=int(table.get("time_minutes", base.time_minutes)),
                              setup=strings("setup"), python=setting("python") or base.python,
                              sbatch=strings("sbatch"))
    except (TypeError, ValueError) as err:
        raise CourseError(f"{COURSE_FILE}: [slurm]: {err}") from err
    return Course(gpu_path=gpu_path, slurm=slurm)
