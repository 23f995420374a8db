"""The reference cache: the grader's own executables of each lab (labNN_tests_solution,
labNN_bench_solution) and the reference's object (for the static checks), built once per
content and shared by grades, batch workers and Slurm tasks (grader/README.md, "The
reference cache").

An entry's key hashes what the reference targets are built from: the pristine tree's build
files (CMakeLists.txt, CMakePresets.json, cmake/, common/), the lab's labs/NN folder (less
the student's files: the reference never includes them) and solutions/NN folder, the
toolchain (nvcc, the host compiler, cmake) and the GPU architectures built for. A changed
solution makes a new entry; a student's file never does.

Filling is safe under concurrent use: one flock per key (a second grader waits for the
first and then finds the entry), the build runs in a temporary folder inside the cache and
the finished entry is renamed into place, so an entry is complete or absent. Entries are
only read afterwards. The cache holds the reference solutions compiled: its folders are
closed to other users (0700); the reference binaries run as the grader, never in the jail.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import linking, workspace
from .paths import LabPaths
from .rubric import RubricError, load_rubric
from .tools import _output, find_tool

KEY_FILES = ("CMakeLists.txt", "CMakePresets.json", "cmake", "common")
KINDS = ("tests_solution", "bench_solution", "checker", "hidden_checker", "bench_checker")
ENTRY_FILE = "entry.json"
SKIP_NAMES = {"__pycache__", ".pytest_cache"}


def default_dir() -> Path:
    """$XDG_CACHE_HOME/cml-grader, else ~/.cache/cml-grader."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cml-grader"


def cuda_architectures() -> str:
    """The architectures the grader builds for, as cmake/CudaArchitectures.cmake picks them
    (CUDAARCHS, else the GPUs nvidia-smi lists, else 75); passed to CMake explicitly so the
    cache and every grade agree."""
    if os.environ.get("CUDAARCHS"):
        return os.environ["CUDAARCHS"]
    smi = find_tool("nvidia-smi")
    text = _output([smi, "--query-gpu=compute_cap", "--format=csv,noheader"]) if smi else None
    archs: list[str] = []
    for line in (text or "").splitlines():
        parts = line.strip().split(".")
        if len(parts) == 2 and all(p.isdigit() for p in parts) and "".join(parts) not in archs:
            archs.append("".join(parts))
    return ";".join(archs) or "75"


_TOOLCHAIN: str | None = None


def toolchain() -> str:
    """nvcc --version, the host compiler's version and cmake --version, as one text."""
    global _TOOLCHAIN
    if _TOOLCHAIN is None:
        texts = []
        for name in ("nvcc", os.environ.get("CUDAHOSTCXX") or os.environ.get("CXX") or "c++",
                     "cmake"):
            tool = find_tool(name)
            texts.append(f"{name}: " + ((_output([tool, "--version"]) or "?") if tool else "-"))
        _TOOLCHAIN = "\n".join(texts)
    return _TOOLCHAIN


def _hash_tree(h: "hashlib._Hash", root: Path, rel: str, skip: set[str]) -> None:
    path = root / rel
    if path.is_file():
        if rel not in skip:
            h.update(f"F {rel} {path.stat().st_size}\n".encode())
            h.update(path.read_bytes())
        return
    if not path.is_dir():
        h.update(f"- {rel}\n".encode())
        return
    for entry in sorted(path.iterdir()):
        if entry.name in SKIP_NAMES or entry.name.endswith(".pyc"):
            continue
        _hash_tree(h, root, f"{rel}/{entry.name}", skip)


def student_files(lab: LabPaths) -> list[str]:
    """The lab's student files (repository paths), from its rubric; its topic.cu if the
    rubric cannot be read."""
    try:
        return list(load_rubric(lab).student_files)
    except (RubricError, OSError):
        return [f"labs/{lab.folder}/{lab.topic}.cu"]


def lab_key(root: Path, lab: LabPaths, archs: str | None = None,
            tools: str | None = None) -> str:
    """The content key of `lab`'s reference targets in the tree at `root`."""
    h = hashlib.sha256()
    h.update(f"cml-refcache/2 {lab.folder}\n".encode())
    h.update((tools if tools is not None else toolchain()).encode() + b"\n")
    h.update(f"archs {archs if archs is not None else cuda_architectures()}\n".encode())
    skip = set(student_files(lab))
    for rel in (*KEY_FILES, f"labs/{lab.folder}", f"solutions/{lab.folder}"):
        _hash_tree(h, root, rel, skip)
    return f"{lab.folder}-{h.hexdigest()[:24]}"


@dataclass
class Entry:
    """A filled entry: where its files are."""

    path: Path

    def binary(self, kind: str) -> Path | None:
        p = self.path / kind
        return p if p.is_file() else None

    @property
    def solution_object(self) -> Path | None:
        p = self.path / "solution.o"
        return p if p.is_file() else None

    @property
    def build_dir(self) -> Path:
        """The objects and libraries the student-linked executables are linked from, at
        their build-tree paths (grader/linking.py); the static checks' harness objects."""
        return self.path / linking.BUILD_DIR


# builder(tmp folder, source root, labs, lab folder -> where its files go)
Builder = Callable[[Path, Path, list[LabPaths], dict[str, Path]], None]


class Cache:
    """The cache at `root`: entries/<key>/, locks/<key>.lock, tmp/ (builds under way)."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root else default_dir()
        self.archs = cuda_architectures()

    def _dirs(self) -> None:
        for sub in ("", "entries", "locks", "tmp"):
            d = self.root / sub
            d.mkdir(parents=True, exist_ok=True)
            try:
                d.chmod(0o700)  # compiled solutions: the grader's only
            except OSError:
                pass

    def key(self, source_root: Path, lab: LabPaths) -> str:
        return lab_key(source_root, lab, self.archs)

    def lookup(self, key: str) -> Entry | None:
        path = self.root / "entries" / key
        return Entry(path) if (path / ENTRY_FILE).is_file() else None

    def fill(self, source_root: Path, labs: list[LabPaths],
             say: Callable[[str], None] = lambda t: None,
             builder: Builder | None = None) -> dict[str, Entry]:
        """The entries of `labs` (lab folder -> Entry), building those that are missing in
        one build. Waits for another process filling the same keys."""
        self._dirs()
        keys = {lab.folder: self.key(source_root, lab) for lab in labs}
        found = {f: e for f, k in keys.items() if (e := self.lookup(k))}
        if len(found) == len(keys):
            return found
        with ExitStack() as stack:
            for folder in sorted(keys):  # one order, so two fillers never deadlock
                if folder in found:
                    continue
                fd = os.open(self.root / "locks" / f"{keys[folder]}.lock",
                             os.O_RDWR | os.O_CREAT, 0o600)
                stack.callback(os.close, fd)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    say(f"{folder}: waiting for another grader building the reference")
                    fcntl.flock(fd, fcntl.LOCK_EX)
            missing = [lab for lab in labs if not self.lookup(keys[lab.folder])]
            if missing:
                say("building the reference (cached for later grades): "
                    + ", ".join(lab.folder for lab in missing))
                tmp = Path(tempfile.mkdtemp(prefix="fill-", dir=self.root / "tmp"))
                try:
                    outs = {lab.folder: tmp / "out" / lab.folder for lab in missing}
                    for d in outs.values():
                        d.mkdir(parents=True)
                    # a copy without solutions/ (a student's) has no reference to build
                    solved = [lab for lab in missing if (
                        source_root / "solutions" / lab.folder / f"{lab.topic}.cu").is_file()]
                    if solved:
                        (builder or self._build)(tmp, source_root, solved, outs)
                    for lab in missing:
                        meta = {"lab": lab.folder, "key": keys[lab.folder],
                                "archs": self.archs, "created": time.time(),
                                "files": sorted(p.name for p in outs[lab.folder].iterdir())}
                        (outs[lab.folder] / ENTRY_FILE).write_text(json.dumps(meta) + "\n")
                        target = self.root / "entries" / keys[lab.folder]
                        shutil.rmtree(target, ignore_errors=True)  # a half entry (no entry.json)
                        os.rename(outs[lab.folder], target)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
        return {f: e for f, k in keys.items() if (e := self.lookup(k))}

    def _build(self, tmp: Path, source_root: Path, labs: list[LabPaths],
               outs: dict[str, Path], timeout: float = 1800) -> None:
        """The reference targets of `labs`, configured and built once in `tmp`."""
        src, build = tmp / "src", tmp / "build"
        workspace.copy_pristine(source_root, src, labs)
        env = workspace.default_env(tmp / "home")
        (tmp / "home").mkdir(exist_ok=True)
        configured = workspace.cmake_configure(src, build, labs, timeout, env,
                                               [f"-DCMAKE_CUDA_ARCHITECTURES={self.archs}"])
        if not configured.ok:
            raise RuntimeError("the reference could not be configured: "
                               + " | ".join(configured.errors or [configured.log_tail[-400:]]))
        targets = [f"{lab.tag}_{kind}" for lab in labs for kind in KINDS
                   if _has_target(build, lab, kind)]
        if targets:
            built = workspace.cmake_build(build, targets, timeout, env)
            if not built.ok:
                raise RuntimeError("the reference solution did not build: "
                                   + " | ".join(workspace.compile_errors(built.log_tail, {})[:3]
                                                or [built.log_tail[-400:]]))
        # The student-linked executables, linked here with the skeleton's library: every
        # object a grade links the student's library with (grader/linking.py). Optional: an
        # entry without them still serves the references; its labs are linked in the grade.
        linked = [f"{lab.tag}_{kind}" for lab in labs for kind in linking.LINKED_KINDS
                  if _has_target(build, lab, kind)]
        harness = bool(linked) and workspace.cmake_build(build, linked, timeout, env).ok
        for lab in labs:
            for kind in KINDS:
                made = workspace.binary(build, lab, kind)
                if made:
                    shutil.copy2(made, outs[lab.folder] / kind)
            obj = workspace.object_file(build, LabPaths(lab.folder, lab.number, lab.topic, src),
                                        "solution")
            if obj:
                shutil.copy2(obj, outs[lab.folder] / "solution.o")
            if harness:
                linking.save(build, LabPaths(lab.folder, lab.number, lab.topic, src),
                             outs[lab.folder])

    # The student's tree, configured: CMake's configure of the tree the student's file is
    # compiled in depends on the grader's build files, the toolchain and the options, never
    # on the student's code, and in the jail its paths are the same in every grade (/cml/src,
    # /cml/build). A grade copies the tree configured by an earlier one in place of running
    # CMake (several seconds of every grade). Saved right after the configure, before any of
    # the student's code is compiled; only ever copied out afterwards.

    def configured_key(self, tree: Path, student_files: list[str], options: list[str]) -> str:
        """The key of `tree` (a student tree, its student files placed) configured with
        `options`: every file of the tree but the student files (which are present), the
        toolchain, ninja, CMAKE_PREFIX_PATH."""
        h = hashlib.sha256()
        h.update(b"cml-configured/1\n" + toolchain().encode() + b"\n")
        h.update(json.dumps([options, bool(find_tool("ninja")),
                             os.environ.get("CMAKE_PREFIX_PATH", "")]).encode() + b"\n")
        for rel in sorted(student_files):
            h.update(f"student {rel} {os.path.lexists(tree / rel)}\n".encode())
        for entry in sorted(tree.iterdir()):
            _hash_tree(h, tree, entry.name, set(student_files))
        return h.hexdigest()[:32]

    def restore_configured(self, key: str, dest: Path, owner: tuple[int, int] | None) -> bool:
        """Copies the configured tree `key` into `dest` (owned by `owner`, uid and gid,
        where given); False when there is none."""
        source = self.root / "configured" / key
        if not (source / "CMakeCache.txt").is_file():
            return False
        shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)
        if owner is not None:
            for path in [dest, *dest.rglob("*")]:
                os.lchown(path, *owner)
        return True

    def keep_configured(self, key: str, source: Path) -> None:
        """Keeps `source`, just configured, as the configured tree `key` (an entry made at
        the same time by another grade stands)."""
        self._dirs()
        (self.root / "configured").mkdir(mode=0o700, exist_ok=True)
        target = self.root / "configured" / key
        if target.exists():
            return
        tmp = Path(tempfile.mkdtemp(prefix="configured-", dir=self.root / "tmp"))
        try:
            shutil.copytree(source, tmp / "tree", symlinks=True)
            try:
                os.rename(tmp / "tree", target)
            except OSError:  # another grade kept it first
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def info(self) -> list[dict[str, Any]]:
        """Each entry's record (its ENTRY_FILE), with the bytes it holds."""
        out = []
        for d in sorted((self.root / "entries").glob("*")):
            try:
                meta = json.loads((d / ENTRY_FILE).read_text())
            except (OSError, ValueError):
                continue
            meta["bytes"] = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
            out.append(meta)
        return out

    def clear(self) -> int:
        entries = list((self.root / "entries").glob("*")) if self.root.is_dir() else []
        for d in entries:
            shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(self.root / "tmp", ignore_errors=True)
        shutil.rmtree(self.root / "configured", ignore_errors=True)
        return len(entries)


def _has_target(build: Path, lab: LabPaths, kind: str) -> bool:
    """Whether the configured tree has labNN_<kind> (a lab without a bench has none)."""
    for name in ("build.ninja", "Makefile"):
        f = build / name
        if f.is_file():
            text = f.read_text(errors="replace")
            return f"{lab.tag}_{kind}" in text
    f = build / "labs" / lab.folder / "Makefile"
    return f.is_file() and f"{lab.tag}_{kind}" in f.read_text(errors="replace")


__all__ = ["Cache", "Entry", "default_dir", "lab_key", "cuda_architectures", "toolchain"]
