"""Grading a class: many submissions, one result folder (grader/README.md, "Grading a class").

A batch is a plan (`batch.json` in the output folder: the submissions in order, the labs,
the seed, the limits) and one task per submission. A task grades one submission with the
ordinary pipeline and writes `<student>/result.json`, the exports and `<student>/stamp.json`
(what was graded: the student files' hashes and the grader's fingerprint). The local batch
runs tasks as parallel processes; a Slurm job array runs the same task command, one array
index per submission, so the output folder looks the same either way. `collect` turns the
stamps and results into `gradebook.csv`, `summary.md` and `manifest.json`.

GPU stages (GPU tests, compute-sanitizer, the bench, ncu) of all tasks on one machine run
one at a time under an exclusive `flock` on a shared lock file, so two submissions (or two
batches) never time each other. Builds and host tests run in parallel.
"""

from __future__ import annotations

import ast
import csv
import fcntl
import hashlib
import inspect
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from . import pipeline, sandbox, workspace
from .paths import ROOT, LabPaths, find_lab
from .result import (BUILD_TIMEOUT, COMPILE_ERROR, CRASHED, ERROR, FAILED, GRADER_ERROR,
                     NO_SUBMISSION, NOT_CONFIGURED, STATIC_VIOLATION, TIMEOUT, GradeResult)
from .rubric import RubricError, load_rubric

PLAN_SCHEMA = "cml-batch/1"
PLAN_FILE = "batch.json"
STAMP_FILE = "stamp.json"
DEFAULT_LOCK = "/tmp/cml-grader-gpu.lock"
DEFAULT_TIMEOUT = 1800.0
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$")

# Stamp.status
GRADED, TIMED_OUT, INTERRUPTED, GRADER_ERROR = "graded", "timeout", "interrupted", "error"
KEEP_ON_RESUME = (GRADED, TIMED_OUT)  # the others are graded again


class BatchError(Exception):
    """A problem with the batch's input (roster, folder, plan): said to the user as is."""


@dataclass
class Submission:
    student: str
    path: str  # absolute


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
        return _write_atomic(out_dir / PLAN_FILE, self.to_json())

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


def _write_atomic(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(0o600)  # plans and stamps name the grader's folders: never for student code
    os.replace(tmp, path)
    return path


# --------------------------------------------------------------------------- submissions

def read_submissions(source: Path) -> list[Submission]:
    """A folder with one submission per student (a folder laid out like the repository,
    or a git repository), or a CSV roster with columns student,path (paths relative to the
    roster's folder)."""
    source = Path(source)
    subs: list[Submission] = []
    if source.is_file():
        with source.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            header = [h.strip().lower() for h in (reader.fieldnames or [])]
            if "student" not in header or "path" not in header:
                raise BatchError(f"{source}: a roster needs the columns student,path "
                                 f"(found: {', '.join(header) or 'none'})")
            for number, row in enumerate(reader, start=2):
                row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
                if not row.get("student") and not row.get("path"):
                    continue
                path = Path(row["path"])
                if not path.is_absolute():
                    path = source.parent / path
                subs.append(Submission(row["student"], str(path.resolve())))
                if not path.exists():
                    raise BatchError(f"{source}:{number}: {row['path']} does not exist")
    elif source.is_dir():
        for entry in sorted(source.iterdir()):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            name = entry.name[:-4] if entry.name.endswith(".git") else entry.name
            subs.append(Submission(name, str(entry.resolve())))
    else:
        raise BatchError(f"{source} is neither a folder of submissions nor a CSV roster")
    seen: set[str] = set()
    for sub in subs:
        if not NAME_RE.match(sub.student):
            raise BatchError(f"student name {sub.student!r} cannot be a folder name (use "
                             "letters, digits and . _ @ + -)")
        if sub.student in seen:
            raise BatchError(f"student {sub.student!r} appears twice")
        seen.add(sub.student)
    if not subs:
        raise BatchError(f"{source}: no submissions found")
    return subs


# --------------------------------------------------------------------------- what is graded

def _hash_files(paths: list[Path], root: Path, h) -> None:
    for path in sorted(paths):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())


def grader_fingerprint(plan: Plan) -> str:
    """The grader's version and a digest of everything that decides a grade apart from the
    student's files: the grader's Python code, the build files, the common library and the
    graded labs' rubric, tests, interface, given code and reference."""
    root = Path(plan.repo)
    h = hashlib.sha256(pipeline.GRADER_VERSION.encode())
    files = grading_modules(root / "grader")
    files += [root / "CMakeLists.txt"] + sorted((root / "cmake").rglob("*"))
    files += sorted((root / "common").rglob("*"))
    student = set()
    for lab in plan.lab_paths():
        try:
            student |= {root / rel for rel in load_rubric(lab).student_files}
        except (RubricError, OSError):
            pass
        files += sorted(lab.lab_dir.rglob("*")) + sorted(lab.solution_dir.rglob("*"))
    files = [p for p in files if p.is_file() and p not in student and "__pycache__" not in
             p.parts]
    _hash_files(files, root, h)
    return f"{pipeline.GRADER_VERSION}+{h.hexdigest()[:16]}"


def grading_modules(package: Path, start: str = "pipeline") -> list[Path]:
    """The grader's modules that grading runs: `pipeline` and what it imports, followed
    through the package and its subpackages (grader/stages/), not the commands, exports,
    batch or release."""
    seen: set[Path] = set()
    todo = [start]  # dotted names relative to the package, e.g. "stages.lab"
    while todo:
        name = todo.pop()
        base = package.joinpath(*name.split("."))
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        try:
            tree = ast.parse(path.read_text())
        except (OSError, SyntaxError):
            continue
        here = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".")
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.level == 0:
                continue
            parent = here[:len(here) - (node.level - 1)] if node.level > 1 else here
            if node.level - 1 > len(here):
                continue  # outside the package
            prefix = ".".join(parent + ([node.module] if node.module else []))
            todo += [f"{prefix}.{alias.name}" if prefix else alias.name
                     for alias in node.names]
            if node.module:
                todo.append(prefix)
    return sorted(seen)


def student_files(plan: Plan) -> list[str]:
    out: list[str] = []
    for lab in plan.lab_paths():
        try:
            out += [rel for rel in load_rubric(lab).student_files if rel not in out]
        except (RubricError, OSError):
            pass
    return out


def submission_hashes(plan: Plan, sub: Submission, scratch: Path) -> dict[str, str]:
    """sha256 of each student file in the submission ("missing" when it is not there)."""
    tree = workspace.submission_tree(Path(sub.path), scratch)
    hashes = {}
    for rel in student_files(plan):
        path = tree / rel
        hashes[rel] = (hashlib.sha256(path.read_bytes()).hexdigest()
                       if path.is_file() and not path.is_symlink() else "missing")
    return hashes


def grading_key(plan: Plan, hashes: dict[str, str], fingerprint: str) -> str:
    data = {"grader": fingerprint, "labs": plan.labs, "seed": plan.seed,
            "no_gpu": plan.no_gpu, "files": hashes}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


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


# --------------------------------------------------------------------------- the GPU lock

GPU_STAGE = re.compile(r": (running gpu tests|compute-sanitizer|timing the bench|profiling)")
BUILD_STAGE = re.compile(r": building ")


def pipeline_announces_stages() -> bool:
    """The pipeline has no GPU-stage hook; it announces each stage through its progress
    callback, which is where the lock is taken. True when its messages are the ones the
    patterns above expect (otherwise a task holds the lock for its whole grade)."""
    from .stages import build, measure, tests
    try:
        text = "".join(inspect.getsource(m) for m in (build, measure, tests))
    except (OSError, TypeError):
        return False
    return all(s in text for s in ('running {layer} tests', ': compute-sanitizer"',
                                   ': timing the bench', ': profiling ', ': building '))


class GpuLock:
    """An exclusive flock on a file every grader on this machine uses. `acquire` blocks
    (without counting against the wall-clock limit) and is idempotent; `release` too."""

    def __init__(self, path: str, on_wait: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.fd: int | None = None
        self.waited = 0.0
        self.on_wait = on_wait

    def acquire(self) -> None:
        if self.fd is not None:
            return
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            os.fchmod(fd, 0o666)  # another user's batch uses the same lock
        except OSError:
            pass
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if self.on_wait:
                self.on_wait(f"waiting for the GPU ({self.path})")
            left = signal.alarm(0)  # waiting is not the student's time
            start = time.monotonic()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            finally:
                waited = time.monotonic() - start
                self.waited += waited
                if left:
                    signal.alarm(max(1, left))
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
        return False


class StageGate:
    """The progress callback given to the pipeline: takes the GPU lock when a GPU stage
    starts and gives it back when the next lab's build starts (or at the end)."""

    def __init__(self, lock: GpuLock, log: Callable[[str], None]) -> None:
        self.lock = lock
        self.log = log
        self.start = time.monotonic()

    def __call__(self, text: str) -> None:
        if GPU_STAGE.search(text):
            self.lock.acquire()
        elif BUILD_STAGE.search(text):
            self.lock.release()
        self.log(f"[{time.monotonic() - self.start:7.1f} s] {text}")


# --------------------------------------------------------------------------- one task

def _on_alarm(signum, _frame) -> None:
    sandbox.kill_all()
    raise pipeline.Interrupted("the wall-clock limit per submission was reached")


def run_task(out_dir: Path, index: int, work_dir: Path | None = None, force: bool = False,
             log: Callable[[str], None] | None = None) -> Stamp | None:
    """Grades submission `index` of the plan in `out_dir`; None when it was already current.
    Writes `<student>/result.json`, the exports and `<student>/stamp.json`."""
    out_dir = Path(out_dir).resolve()
    plan = Plan.load(out_dir)
    if not 0 <= index < len(plan.submissions):
        raise BatchError(f"task {index}: the plan has {len(plan.submissions)} submissions "
                         f"(0 to {len(plan.submissions) - 1})")
    sub = plan.submissions[index]
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    student_dir = out_dir / sub.student
    scratch = Path(tempfile.mkdtemp(prefix="cml-batch-hash-"))
    try:
        hashes = submission_hashes(plan, sub, scratch)
    except (OSError, RuntimeError, subprocess.SubprocessError) as err:
        hashes = {"error": str(err)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    key = grading_key(plan, hashes, grader_fingerprint(plan))
    if not force and is_current(out_dir, sub.student, key):
        log(f"{sub.student}: unchanged since it was graded; kept")
        return None

    lock = GpuLock(plan.gpu_lock, on_wait=log)
    staged = pipeline_announces_stages()
    opts = pipeline.Options(submission=Path(sub.path), labs=plan.lab_paths(), seed=plan.seed,
                            work_dir=work_dir, source_root=Path(plan.repo),
                            build_timeout=plan.build_timeout, test_timeout=plan.test_timeout,
                            gpu=False if plan.no_gpu else None,
                            progress=StageGate(lock, log) if staged else
                            (lambda text: log(text)))
    result = pipeline.new_result(opts)
    status = GRADED
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    signal.signal(signal.SIGINT, pipeline.interrupt_handler)
    signal.signal(signal.SIGTERM, pipeline.interrupt_handler)
    signal.signal(signal.SIGALRM, _on_alarm)
    start = time.monotonic()
    try:
        signal.alarm(max(1, int(plan.timeout)))
        if staged or plan.no_gpu:
            pipeline.grade(opts, result)
        else:  # no stage hook: the whole grade holds the GPU (builds included)
            with lock:
                pipeline.grade(opts, result)
    except pipeline.Interrupted as why:
        timed_out = "wall-clock" in str(why)
        status = TIMED_OUT if timed_out else INTERRUPTED
        result.errors.append(
            f"stopped: grading took longer than the batch's limit of {plan.timeout:g} s"
            if timed_out else f"interrupted ({why}); the results are incomplete")
    except Exception as err:  # noqa: BLE001  the grader's own failure, recorded
        result.errors.append(pipeline.grader_failed(err))
        status = GRADER_ERROR
    finally:
        signal.alarm(0)
        lock.release()
        for s, handler in saved.items():
            signal.signal(s, handler)
    seconds = time.monotonic() - start
    if status == GRADED and result.errors:
        status = GRADER_ERROR
    result.submission = sub.path
    _write_atomic(student_dir / "result.json", result.to_json() + "\n")
    try:
        from .exports import write_exports
        write_exports(result, student_dir, plan.formats)
    except (ImportError, ValueError) as err:
        log(f"{sub.student}: exports not written: {err}")
    stamp = Stamp(sub.student, sub.path, key, hashes, status, result.points, result.max_points,
                  round(seconds - lock.waited, 1), round(lock.waited, 1),
                  time.strftime("%Y-%m-%dT%H:%M:%S%z"), os.uname().nodename)
    _write_atomic(student_dir / STAMP_FILE, json.dumps(asdict(stamp), indent=2) + "\n")
    return stamp


# --------------------------------------------------------------------------- the local batch

@dataclass
class Outcome:
    student: str
    status: str  # a Stamp status, or "kept" (unchanged, not regraded)
    points: float | None
    max_points: float | None
    seconds: float
    labs: dict[str, float] = field(default_factory=dict)


def task_command(out_dir: Path, index: int | str, work_dir: Path | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "grader", "batch", "--task", str(index), "--out",
           str(out_dir)]
    return cmd + (["--work-dir", str(work_dir)] if work_dir else [])


def work_root(out_dir: Path) -> Path:
    """Where the tasks' build folders go: in the output folder, unless student code would
    run as another user who cannot reach it (then a temporary folder)."""
    root = out_dir / ".work"
    if sandbox.unprivileged_identity() is not None and sandbox.reachable_by_others(out_dir):
        return Path(tempfile.mkdtemp(prefix="cml-batch-work-"))
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    return root


def run_local(out_dir: Path, jobs: int, force: bool = False, keep_work: bool = False,
              report: Callable[[Outcome, int, int], None] | None = None) -> list[Outcome]:
    """Grades every submission of the plan in `out_dir` that is not current, `jobs` at a
    time, each in its own process and build folder (a folder is reused by the next
    submission of the same worker, so the reference builds once per worker)."""
    import concurrent.futures as cf
    import queue

    out_dir = Path(out_dir).resolve()
    plan = Plan.load(out_dir)
    fingerprint = grader_fingerprint(plan)
    todo: list[int] = []
    outcomes: list[Outcome] = []
    total = len(plan.submissions)
    scratch = Path(tempfile.mkdtemp(prefix="cml-batch-hash-"))
    try:
        for i, sub in enumerate(plan.submissions):
            try:
                hashes = submission_hashes(plan, sub, scratch / str(i))
            except (OSError, RuntimeError, subprocess.SubprocessError) as err:
                hashes = {"error": str(err)}
            if not force and is_current(out_dir, sub.student,
                                        grading_key(plan, hashes, fingerprint)):
                stamp = read_stamp(out_dir, sub.student)
                outcome = Outcome(sub.student, "kept", stamp.points, stamp.max_points, 0.0,
                                  _lab_points(out_dir, sub.student))
                outcomes.append(outcome)
                if report:
                    report(outcome, len(outcomes), total)
            else:
                todo.append(i)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not todo:
        return outcomes
    root = work_root(out_dir)
    slots: "queue.Queue[Path]" = queue.Queue()
    for k in range(max(1, min(jobs, len(todo)))):
        slots.put(root / f"slot-{k}")

    live: dict[int, subprocess.Popen] = {}
    stopping = threading.Event()
    guard = threading.Lock()

    def one(i: int) -> Outcome:
        sub = plan.submissions[i]
        slot = slots.get()
        start = time.monotonic()
        started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        log = out_dir / sub.student / "grade.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        try:
            with guard:
                if stopping.is_set():
                    return Outcome(sub.student, INTERRUPTED, None, None, 0.0)
                f = log.open("w")
                cmd = task_command(out_dir, i, slot) + (["--force"] if force else [])
                proc = subprocess.Popen(cmd, cwd=plan.repo, stdout=f, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
                live[i] = proc
            with f:
                # the task stops itself at the limit; this is the backstop (GPU waits excluded
                # there, so allow for them here)
                try:
                    proc.wait(timeout=plan.timeout * 3 + 300)
                except subprocess.TimeoutExpired:
                    _stop(proc)
            with guard:
                live.pop(i, None)
        finally:
            slots.put(slot)
        stamp = read_stamp(out_dir, sub.student)
        seconds = time.monotonic() - start
        if stamp is None or stamp.finished < started:  # the task died before its stamp
            return Outcome(sub.student, GRADER_ERROR, None, None, seconds)
        return Outcome(sub.student, stamp.status, stamp.points, stamp.max_points, seconds,
                       _lab_points(out_dir, sub.student))

    def on_term(signum, _frame):
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    saved = signal.signal(signal.SIGTERM, on_term) if main else None
    try:
        with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(one, i) for i in todo]
            try:
                for future in cf.as_completed(futures):
                    outcome = future.result()
                    outcomes.append(outcome)
                    if report:
                        report(outcome, len(outcomes), total)
            except KeyboardInterrupt:
                # the tasks run in their own sessions: pass the signal on, so each one stops
                # its children and writes what it knows (graded again on the next run)
                with guard:
                    stopping.set()
                    for f in futures:
                        f.cancel()
                    for proc in live.values():
                        try:
                            os.killpg(proc.pid, signal.SIGTERM)
                        except ProcessLookupError:
                            pass
                raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, saved)
    if not keep_work:
        shutil.rmtree(root, ignore_errors=True)
    return outcomes


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM (the task then kills its children and writes what it knows), then SIGKILL."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _lab_points(out_dir: Path, student: str) -> dict[str, float]:
    result = load_result(out_dir, student)
    return {lab.lab: lab.points for lab in result.labs} if result else {}


def load_result(out_dir: Path, student: str) -> GradeResult | None:
    try:
        return GradeResult.from_json((out_dir / student / "result.json").read_text())
    except (OSError, ValueError, TypeError):
        return None


# --------------------------------------------------------------------------- collect

FAILURE_KINDS = ("grader error", "timeout", "no submission", "compile error",
                 "static violation", "crash", "wrong results")


def failure_kind(result: GradeResult, lab_name: str, stamp: Stamp | None) -> str | None:
    """Why a lab lost points, as one word group, in this order of precedence; None when
    nothing failed (a lab that lost points only to GPU parts not graded is not a failure)."""
    lab = next((x for x in result.labs if x.lab == lab_name), None)
    if stamp is not None and stamp.status == TIMED_OUT:
        return "timeout"
    if lab is None:
        return "grader error"
    if lab.failure in (GRADER_ERROR, NOT_CONFIGURED):
        return "grader error"
    if lab.failure == BUILD_TIMEOUT or any(t.status == TIMEOUT for t in lab.tests):
        return "timeout"
    kinds = {NO_SUBMISSION: "no submission", COMPILE_ERROR: "compile error",
             STATIC_VIOLATION: "static violation"}
    if lab.failure in kinds:
        return kinds[lab.failure]
    parts = {p.kind: p for p in lab.parts}  # a result.json written before `failure` existed
    if lab.failure is None and parts.get("build") is not None and parts["build"].reason:
        return "compile error"
    if lab.failure is None and parts.get("static") is not None and parts["static"].reason:
        return "static violation"
    if any(t.status in (CRASHED, ERROR) for t in lab.tests):
        return "crash"
    if any(t.status == FAILED for t in lab.tests):
        return "wrong results"
    return None


def collect(out_dir: Path) -> dict:
    """Writes gradebook.csv, summary.md and manifest.json from the tasks' results; returns
    the manifest."""
    from .exports import fmt_points

    out_dir = Path(out_dir).resolve()
    plan = Plan.load(out_dir)
    rows: list[dict[str, str]] = []
    manifest: dict = {"schema": PLAN_SCHEMA, "grader": grader_fingerprint(plan),
                      "labs": plan.labs, "seed": plan.seed, "students": {}}
    scores: dict[str, list[float]] = {lab: [] for lab in plan.labs}
    maxima: dict[str, float] = {}
    failures: dict[str, list[str]] = {kind: [] for kind in FAILURE_KINDS}
    missing: list[str] = []
    not_graded = 0
    seconds = 0.0
    for sub in plan.submissions:
        stamp = read_stamp(out_dir, sub.student)
        result = load_result(out_dir, sub.student)
        row = {"student": sub.student}
        if result is None:
            missing.append(sub.student)
            row.update({lab: "" for lab in plan.labs})
            row.update({"total": "", "max_points": "", "status": "not graded yet"})
            rows.append(row)
            manifest["students"][sub.student] = {"status": "not graded yet"}
            continue
        for lab in plan.labs:
            entry = next((x for x in result.labs if x.lab == lab), None)
            row[lab] = fmt_points(entry.points) if entry else ""
            if entry:
                scores[lab].append(entry.points)
                maxima[lab] = max(maxima.get(lab, 0.0), entry.max_points)
                if any(p.status == "not_graded" for p in entry.parts):
                    not_graded += 1
            kind = failure_kind(result, lab, stamp)
            if kind:
                failures[kind].append(f"{sub.student} ({lab[:2]})")
        status = stamp.status if stamp else "graded"
        row.update({"total": fmt_points(result.points), "max_points": fmt_points(result.max_points),
                    "status": status})
        rows.append(row)
        seconds += stamp.seconds if stamp else 0.0
        manifest["students"][sub.student] = {
            "submission": sub.path, "key": stamp.key if stamp else None,
            "files": stamp.files if stamp else {}, "status": status,
            "points": result.points, "max_points": result.max_points,
            "seconds": stamp.seconds if stamp else None,
            "gpu_wait_seconds": stamp.gpu_wait_seconds if stamp else None,
            "finished": stamp.finished if stamp else None}
    columns = ["student", *plan.labs, "total", "max_points", "status"]
    with (out_dir / "gradebook.csv.tmp").open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(out_dir / "gradebook.csv.tmp", out_dir / "gradebook.csv")
    _write_atomic(out_dir / "summary.md",
                  summary_markdown(plan, scores, maxima, failures, missing, not_graded,
                                   seconds))
    _write_atomic(out_dir / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return manifest


def histogram(values: list[float], top: float, bins: int = 10, width: int = 30) -> list[str]:
    """Text bars: `[lo, hi)` ranges of points (the last closed) and a count each."""
    if top <= 0:
        top = max(values, default=0.0) or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int(v / top * bins)))] += 1
    most = max(counts) or 1
    lines = []
    for b, count in enumerate(counts):
        lo, hi = top * b / bins, top * (b + 1) / bins
        bracket = "]" if b == bins - 1 else ")"
        bar = "#" * round(count / most * width) if count else ""
        lines.append(f"[{lo:5.1f}, {hi:5.1f}{bracket} {count:4d} {bar}")
    return lines


def summary_markdown(plan: Plan, scores: dict[str, list[float]], maxima: dict[str, float],
                     failures: dict[str, list[str]], missing: list[str], not_graded: int,
                     seconds: float) -> str:
    from .exports import fmt_points

    out = [f"# Batch summary", "",
           f"{len(plan.submissions)} submission(s), labs {', '.join(plan.labs)}, seed "
           f"{plan.seed}; grading time {seconds:.0f} s in all (GPU waits excluded).", ""]
    if missing:
        out += [f"Not graded yet: {', '.join(missing)}.", ""]
    if not_graded:
        out += [f"{not_graded} lab result(s) have GPU parts that were **not graded** (no "
                "CUDA device): their points count in the maximum and earn nothing.", ""]
    out += ["## Scores per lab", "", "| Lab | Graded | Min | Median | Max | Out of |",
            "|---|---:|---:|---:|---:|---:|"]
    for lab in plan.labs:
        v = scores[lab]
        if v:
            out.append(f"| {lab} | {len(v)} | {fmt_points(min(v))} | "
                       f"{fmt_points(statistics.median(v))} | {fmt_points(max(v))} | "
                       f"{fmt_points(maxima.get(lab, 0))} |")
        else:
            out.append(f"| {lab} | 0 | | | | |")
    for lab in plan.labs:
        if scores[lab]:
            out += ["", f"### {lab}", "", "```",
                    *histogram(scores[lab], maxima.get(lab, 0.0)), "```"]
    out += ["", "## Failures by kind", "",
            "One kind per student and lab, the first that applies in this order.", "",
            "| Kind | Count | Students |", "|---|---:|---|"]
    for kind in FAILURE_KINDS:
        who = failures[kind]
        out.append(f"| {kind} | {len(who)} | {', '.join(who)} |")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- Slurm

def slurm_script(plan: Plan, out_dir: Path, time_limit: float, cpus: int,
                 extra: list[str], max_parallel: int | None = None) -> str:
    """A job array with one task per submission; each runs the same task command as the
    local batch, so the output folder is laid out the same."""
    out_dir = Path(out_dir).resolve()
    n = len(plan.submissions)
    minutes = max(1, int(-(-time_limit // 60)))
    array = f"0-{n - 1}" + (f"%{max_parallel}" if max_parallel else "")
    lines = ["#!/bin/bash",
             "# Grades one submission of the batch in " + str(out_dir) + " per array task:",
             "# task i grades submissions[i] of batch.json (listed in submissions.txt).",
             "# Submit: sbatch " + str(out_dir / "slurm" / "grade.sbatch"),
             "# Then:   python3 -m grader batch --collect " + str(out_dir),
             "#SBATCH --job-name=cml-grade",
             f"#SBATCH --array={array}",
             "#SBATCH --gres=gpu:1",
             f"#SBATCH --cpus-per-task={cpus}",
             f"#SBATCH --time={minutes // 60:d}:{minutes % 60:02d}:00",
             f"#SBATCH --output={out_dir / 'slurm' / 'logs' / '%A_%a.out'}",
             *[f"#SBATCH {arg}" for arg in extra],
             "set -euo pipefail",
             f"cd {_sh_quote(plan.repo)}",
             # a build folder on the node, removed when the task ends
             'work="$(mktemp -d "${TMPDIR:-/tmp}/cml-grade-${SLURM_ARRAY_JOB_ID:-0}-'
             '${SLURM_ARRAY_TASK_ID}-XXXXXX")"',
             'chmod 755 "$work"',
             "trap 'rm -rf \"$work\"' EXIT",
             f"{_sh_quote(sys.executable)} -m grader batch --task \"$SLURM_ARRAY_TASK_ID\" "
             f"--out {_sh_quote(str(out_dir))} --work-dir \"$work/build\""]
    return "\n".join(lines) + "\n"


def _sh_quote(text: str) -> str:
    import shlex
    return shlex.quote(str(text))


def write_slurm(plan: Plan, out_dir: Path, time_limit: float, cpus: int, extra: list[str],
                max_parallel: int | None = None) -> Path:
    out_dir = Path(out_dir).resolve()
    (out_dir / "slurm" / "logs").mkdir(parents=True, exist_ok=True)
    _write_atomic(out_dir / "slurm" / "submissions.txt",
                  "".join(f"{i}\t{s.student}\t{s.path}\n"
                          for i, s in enumerate(plan.submissions)))
    path = _write_atomic(out_dir / "slurm" / "grade.sbatch",
                         slurm_script(plan, out_dir, time_limit, cpus, extra, max_parallel))
    path.chmod(0o755)
    return path


def new_seed() -> int:
    return random.randrange(1, 2**31)


__all__ = ["Plan", "Submission", "Stamp", "BatchError", "read_submissions", "run_task",
           "run_local", "collect", "write_slurm", "slurm_script", "GpuLock", "StageGate",
           "failure_kind", "grader_fingerprint", "ROOT"]
