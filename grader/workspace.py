"""The private tree a submission is built in: a pristine copy of the grader's repository with
only the student files taken from the submission, configured and built with CMake.

One workspace can grade several labs (configured once with every lab in CML_LABS, built
per lab so one lab's compile error does not stop the others) and can be reused between
submissions: only the student files change, so only the student's targets rebuild.
The four trees and who builds in each: docs/architecture.md, "Trust boundaries".
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from . import bwrap, sandbox
from .paths import ROOT, LabPaths
from .tools import find_tool

# What a pristine copy leaves out: version control, build trees, caches, labs not graded.
SKIP_TOP = {".git", ".deps", ".grader", "build", "labs", "solutions", "handouts"}
SKIP_ANY = ("__pycache__", "*.pyc", "build-*", ".pytest_cache")
MAX_ERRORS = 8


@dataclass
class BuildOutcome:
    ok: bool
    seconds: float
    timed_out: bool = False
    errors: list[str] = field(default_factory=list)  # the first errors, student's file first
    log_tail: str = ""


def copy_pristine(src_root: Path, dest: Path, labs: list[LabPaths]) -> None:
    """The repository at `src_root`, without build trees, with only the given labs."""
    ignore = shutil.ignore_patterns(*SKIP_ANY)
    dest.mkdir(parents=True, exist_ok=True)
    for entry in src_root.iterdir():
        if entry.name in SKIP_TOP or entry.name.startswith("build-"):
            continue
        target = dest / entry.name
        if entry.is_dir():
            shutil.copytree(entry, target, ignore=ignore, dirs_exist_ok=True, symlinks=False)
        elif entry.is_file():
            shutil.copy2(entry, target)
    for lab in labs:
        for part in ("labs", "solutions"):
            source = src_root / part / lab.folder
            if source.is_dir():
                shutil.copytree(source, dest / part / lab.folder, ignore=ignore,
                                dirs_exist_ok=True)


# What the student's build tree holds of the pristine tree: enough for CMake to configure
# and build each labNN_student library, and nothing of solutions/ or the hidden tests.
STUDENT_TREE = ("CMakeLists.txt", "cmake", "common", "docs", "grader/CMakeLists.txt")
MAX_STUDENT_FILE = 4 * 1024 * 1024  # the student README says so (docs/student/README.md.in)
MAX_STUDENT_FILE_TEXT = f"{MAX_STUDENT_FILE // 2**20} MiB"


def too_large(rel: str, size: int, where: str = "in the submission") -> str:
    """A student file over MAX_STUDENT_FILE, said as what it is: there, and too large."""
    return (f"{rel} is {where} ({size / 2**20:.1f} MiB), but it is larger than the "
            f"{MAX_STUDENT_FILE_TEXT} limit for a student file; submit the lab's source file "
            "itself")


def not_text(rel: str, data: bytes) -> str | None:
    """Why `data`, a student's source file, is not text a compiler reads as the student
    sees it, or None: a NUL byte (which compilers drop or stop at, and an editor shows as
    nothing), and the whole file saved as UTF-16 (a NUL in every other byte)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or data.count(b"\0") * 3 > len(data):
        return (f"{rel} is saved as UTF-16, which compilers do not read; save it as UTF-8 "
                "(plain text) and submit it again")
    at = data.find(b"\0")
    if at < 0:
        return None
    line = data.count(b"\n", 0, at) + 1
    return (f"{rel} holds a NUL byte (line {line}, byte {at + 1}), which a source file never "
            "has: compilers drop it or stop there, and an editor shows nothing. Remove it "
            "(save it as plain text) and submit it again")


def copy_student_tree(src_root: Path, dest: Path, labs: list[LabPaths]) -> None:
    """The part of `src_root` the student's file is compiled in: the build files, common/
    and the graded labs' folders of labs/ — no solutions/, no hidden tests, no grader."""
    ignore = shutil.ignore_patterns(*SKIP_ANY)
    dest.mkdir(parents=True, exist_ok=True)
    for rel in STUDENT_TREE:
        source, target = src_root / rel, dest / rel
        if source.is_dir():
            shutil.copytree(source, target, ignore=ignore, dirs_exist_ok=True)
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for lab in labs:
        source = src_root / "labs" / lab.folder
        if source.is_dir():
            shutil.copytree(source, dest / "labs" / lab.folder, ignore=ignore,
                            dirs_exist_ok=True)
    stray = dest / "solutions"
    if stray.exists():  # never, unless an earlier grader version made one: remove it
        shutil.rmtree(stray)


def not_submitted(rel: str) -> str:
    """What every command says of a student file the submission lacks."""
    return f"{rel} is not in the submission"


def missing_student_files(submission: Path, rels: list[str]) -> list[str]:
    """not_submitted(rel) for each of `rels` that the submission has nothing at (a
    dangling link is there: place_student_file refuses it by name)."""
    return [not_submitted(rel) for rel in rels if not os.path.lexists(submission / rel)]


def place_student_file(submission: Path, rel: str, dest_root: Path) -> str | None:
    """Copies one student file from the submission as a regular file; returns a problem, or
    None. Whatever the submission holds at that path (a folder, a fifo, a device, a file
    that cannot be read, a symbolic link anywhere on the way: the file, its lab folder,
    labs/, which could point into the grader's own tree) is refused with a message naming
    the path and what to submit instead; nothing there raises."""
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        return f"{rel} is not a path inside the submission"
    wanted = f"submit {rel} as a regular file (the lab's source file itself)"
    here = submission
    for i, part in enumerate(parts):
        here = here / part
        if here.is_symlink():
            shown = "/".join(parts[:i + 1])
            return (f"{shown} is a symbolic link in the submission; submit the file itself "
                    "(links are never followed)")
    try:
        # O_NONBLOCK: opening a fifo must not wait for a writer
        fd = os.open(submission / rel, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return not_submitted(rel)
    except OSError as err:
        return f"{rel} cannot be read ({err.strerror}); {wanted}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return f"{rel} is {_shape(info.st_mode)} in the submission, not a file; {wanted}"
        if info.st_size > MAX_STUDENT_FILE:
            return too_large(rel, info.st_size)
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_STUDENT_FILE + 1)
    except OSError as err:
        return f"{rel} cannot be read ({err.strerror}); {wanted}"
    finally:
        os.close(fd)
    if len(data) > MAX_STUDENT_FILE:  # grew after the size was read
        return too_large(rel, len(data))
    problem = not_text(rel, data)
    if problem:
        return problem
    target = dest_root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    target.write_bytes(data)
    os.utime(target)  # a newer time stamp, so the build always sees the change
    return None


def _shape(mode: int) -> str:
    """What a path that is not a regular file is, in words."""
    for test, words in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (fifo)"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def cmake_configure(src: Path, build: Path, labs: list[LabPaths], timeout: float,
                    env: dict[str, str], extra: list[str] | None = None,
                    identity: sandbox.Identity | None = None,
                    jail: bwrap.Jail | None = None) -> BuildOutcome:
    cmake = find_tool("cmake")
    if not cmake:
        return BuildOutcome(False, 0.0, errors=["cmake not found"])
    cmd = [cmake, "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
           "-DCML_LABS=" + ";".join(lab.folder for lab in labs), *(extra or [])]
    if find_tool("ninja") and not (build / "CMakeCache.txt").exists():
        cmd += ["-G", "Ninja"]
    prefix = os.environ.get("CMAKE_PREFIX_PATH")
    if prefix:
        cmd.append("-DCMAKE_PREFIX_PATH=" + prefix.replace(os.pathsep, ";"))
    nvcc = find_tool("nvcc")
    if nvcc and not shutil.which("nvcc"):
        cmd.append("-DCMAKE_CUDA_COMPILER=" + nvcc)
    out = sandbox.run(cmd, cwd=src, timeout=timeout, env=env, identity=identity, jail=jail)
    ok = out.returncode == 0 and not out.timed_out
    errors = [] if ok else _cmake_errors(out.output_tail)
    return BuildOutcome(ok, out.seconds, out.timed_out, errors, out.output_tail)


def cache_value(build: Path, key: str) -> str | None:
    """A variable of a configured build tree's CMakeCache.txt."""
    try:
        text = (build / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return None
    m = re.search(rf"^{re.escape(key)}:[A-Z]+=(.*)$", text, re.MULTILINE)
    return m.group(1).strip() if m else None


def student_jail(student_src: Path, student_build: Path) -> bwrap.Jail:
    """What the student's compile sees: its own source tree and build tree, nothing else."""
    return (bwrap.Jail()
            .add(student_src, bwrap.JAIL_ROOT + "/src")
            .add(student_build, bwrap.JAIL_ROOT + "/build", writable=True))


def _cmake_errors(text: str) -> list[str]:
    lines = text.splitlines()
    found = [ln.strip() for i, ln in enumerate(lines) if "CMake Error" in ln]
    return found[:MAX_ERRORS] or lines[-10:]


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity (a container, a cgroup, taskset), and
    no more than the Slurm allocation's SLURM_CPUS_PER_TASK when that is set."""
    try:
        cpus = max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 2
    slurm = os.environ.get("SLURM_CPUS_PER_TASK", "").strip()
    if slurm.isdigit() and int(slurm) > 0:
        cpus = min(cpus, int(slurm))
    return cpus


def cmake_build(build: Path, targets: list[str], timeout: float, env: dict[str, str],
                jobs: int | None = None, identity: sandbox.Identity | None = None,
                jail: bwrap.Jail | None = None) -> BuildOutcome:
    cmake = find_tool("cmake")
    cmd = [cmake or "cmake", "--build", str(build), "--target", *targets]
    cmd += ["-j", str(jobs or usable_cpus())]
    out = sandbox.run(cmd, cwd=build, timeout=timeout, env=env, identity=identity, jail=jail)
    return BuildOutcome(out.returncode == 0 and not out.timed_out, out.seconds, out.timed_out,
                        [], out.output_tail)


# nvcc: "path(12): error: ..."; gcc/clang: "path:12:5: error: ..."; the linker: "... undefined
# reference to ...".
_ERROR_RE = re.compile(r"^(?P<path>[^\s:()][^:()]*?)(?:\((?P<l1>\d+)\)|:(?P<l2>\d+)(?::\d+)?):"
                       r"\s*(?:fatal )?error\b[:\s]*(?P<msg>.*)$")


# A function the linker found no definition of, in GNU ld's, lld's and nvlink's words.
_UNDEFINED_RES = (re.compile(r"undefined reference to [`\u2018'](?P<name>.+?)['\u2019]\s*$"),
                  re.compile(r"undefined symbol: (?P<name>.+?)\s*$"),
                  re.compile(r"Undefined reference to '(?P<name>[^']+)'"))
_INTERFACE_RE = re.compile(r"^lab\d+::")  # a name of a lab's interface (its namespace)


def undefined_functions(log: str) -> list[str]:
    """The names a build log's linker found no definition of, demangled, once each and in
    their order."""
    names: list[str] = []
    for line in log.splitlines():
        for pattern in _UNDEFINED_RES:
            m = pattern.search(line)
            if m:
                if m.group("name").strip() not in names:
                    names.append(m.group("name").strip())
                break
    mangled = [n for n in names if n.startswith("_Z")]
    if mangled:
        from .static_checks import CheckError, demangle
        try:
            plain = dict(zip(mangled, demangle(mangled)))
        except (CheckError, OSError, subprocess.SubprocessError):
            plain = {}
        names = list(dict.fromkeys(plain.get(n, n) for n in names))
    return names


def link_problem(log: str) -> str | None:
    """What a build that compiled but did not link lacks, in the student's terms: the
    functions nothing defines, by their plain names (an empty or stub file leaves the lab's
    interface undefined); None when the log names none."""
    names = undefined_functions(log)
    if not names:
        return None
    interface = [n for n in names if _INTERFACE_RE.match(n)]
    other = [n for n in names if n not in interface]
    said = []
    if interface:
        said.append(f"{len(interface)} function(s) of the lab's interface (its header declares "
                    "them, its tests call them) are not defined in your file: "
                    + "; ".join(interface) + ". Write each one (a stub that returns is "
                    "enough for the lab to build; its tests then say what is left).")
    if other:
        said.append("Called but defined nowhere: " + "; ".join(other) + ".")
    return " ".join(said)


def compile_errors(log: str, student_files: dict[str, str]) -> list[str]:
    """The first errors in a build log, as "file:line: error: message", those in the
    student's files first. `student_files` maps a path in the work tree to the name the
    student knows (e.g. labs/04_tiled_matmul/tiled_matmul.cu). Functions the linker found no
    definition of are one sentence naming them (link_problem), not the linker's lines."""
    mine, other = [], []
    missing = link_problem(log)
    if missing:
        other.append(missing)
    for line in log.splitlines():
        line = line.strip()
        m = _ERROR_RE.match(line)
        if not m:
            if missing is None and ("undefined reference" in line or "ld returned" in line):
                other.append(_shorten(line, student_files))
            continue
        path, number = m.group("path"), m.group("l1") or m.group("l2")
        entry = f"{path}:{number}: error: {m.group('msg').strip()}"
        shown = _student_name(path, student_files)
        if shown is not None:
            entry = f"{shown}:{number}: error: {m.group('msg').strip()}"
            if entry not in mine:
                mine.append(entry)
        else:
            other.append(_shorten(entry, student_files))
    errors = mine[:MAX_ERRORS]
    return errors + other[:MAX_ERRORS - len(errors)]


def _student_name(path: str, student_files: dict[str, str]) -> str | None:
    norm = os.path.normpath(path)
    for full, short in student_files.items():
        if norm in (os.path.normpath(full), short) or norm.endswith(os.sep + short):
            return short
    return None


def _shorten(text: str, student_files: dict[str, str]) -> str:
    """Work-tree paths in a message, made relative to the repository."""
    for full, short in student_files.items():
        if full.endswith(short) and len(full) > len(short):
            text = text.replace(full[: -len(short)], "")
    return text


def lock_down(src: Path, build: Path, labs: list[LabPaths]) -> None:
    """After the build, before any student code runs: the reference solutions, hidden tests
    and everything built from them become readable by the grader (root) only."""
    solutions = src / "solutions"
    if solutions.is_dir():
        solutions.chmod(0o700)
    for lab in labs:
        lab_build = build / "labs" / lab.folder
        if not lab_build.is_dir():
            continue
        for entry in lab_build.rglob("*"):
            private = "solution" in entry.name or (entry.is_dir() and "hidden" in entry.name)
            if private and not entry.is_symlink():
                entry.chmod(0o700 if entry.is_dir() or os.access(entry, os.X_OK) else 0o600)


def object_file(build: Path, lab: LabPaths, variant: str = "student") -> Path | None:
    """The compiled object of labNN_<variant> (student or solution) under the build tree."""
    folder = build / "labs" / lab.folder / "CMakeFiles" / f"{lab.tag}_{variant}.dir"
    if not folder.is_dir():
        return None
    found = sorted(folder.rglob(f"{lab.topic}.cu.o")) or sorted(folder.rglob("*.o"))
    return found[0] if found else None


def binary_path(build: Path, lab: LabPaths, kind: str) -> Path:
    """Where the build tree `build` puts labNN_<kind> (e.g. tests_student, bench_solution)."""
    return build / "labs" / lab.folder / f"{lab.tag}_{kind}"


def binary(build: Path, lab: LabPaths, kind: str) -> Path | None:
    """labNN_<kind> if it was built."""
    path = binary_path(build, lab, kind)
    return path if path.is_file() else None


def submission_tree(path: Path, scratch: Path) -> Path:
    """The folder to take student files from: a directory laid out like the repository (a
    git clone included: its checked-out files), or a bare git repository (its HEAD tree,
    extracted into `scratch`)."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    if path.is_dir() and (path / "HEAD").is_file() and (path / "objects").is_dir():
        git = shutil.which("git")
        if not git:
            raise RuntimeError(f"{path} is a bare git repository and git is not installed")
        scratch.mkdir(parents=True, exist_ok=True)
        archive = scratch / "head.tar"
        with archive.open("wb") as out:
            subprocess.run([git, "--git-dir", str(path), "archive", "--format=tar", "HEAD"],
                           stdout=out, check=True, timeout=300)
        tree = scratch / "tree"
        tree.mkdir(exist_ok=True)
        with tarfile.open(archive) as tar:
            safe = [m for m in tar.getmembers() if (m.isreg() or m.isdir())
                    and not m.name.startswith("/") and ".." not in Path(m.name).parts]
            tar.extractall(tree, members=safe)  # regular files and folders only
        return tree
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is not a directory")
    return path


def default_env(home: Path) -> dict[str, str]:
    """The environment of the build: scrubbed, plus what CMake and nvcc need to be found."""
    env = sandbox.scrubbed_env(home)
    for key in ("CMAKE_PREFIX_PATH", "CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDAHOSTCXX", "CXX",
                "CC"):
        if key in os.environ:
            env[key] = os.environ[key]
    cuda_bin = os.path.dirname(find_tool("nvcc") or "")
    if cuda_bin and cuda_bin not in env["PATH"].split(os.pathsep):
        env["PATH"] = env["PATH"] + os.pathsep + cuda_bin
    return env


__all__ = ["BuildOutcome", "copy_pristine", "copy_student_tree", "student_jail",
           "cache_value", "usable_cpus", "place_student_file", "not_submitted",
           "missing_student_files", "too_large", "not_text", "MAX_STUDENT_FILE_TEXT",
           "cmake_configure",
           "cmake_build", "compile_errors", "link_problem", "undefined_functions", "lock_down",
           "object_file", "binary",
           "default_env", "submission_tree", "ROOT"]
