"""What a grade depends on: the student files' hashes and the grader's fingerprint, combined
into the key that decides whether a resumed batch grades a submission again."""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import pipeline, workspace
from ..rubric import RubricError, load_rubric
from .plan import Plan, Submission


def _hash_files(paths: list[Path], root: Path, h: hashlib._Hash) -> None:
    for path in sorted(paths):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())


def grader_fingerprint(plan: Plan) -> str:
    """The grader's version and a digest of everything that decides a grade apart from the
    student's files: the grader's Python code and its static checks' allow-list, the build
    files, the common library and the graded labs' rubric, tests, interface, given code and
    reference."""
    root = Path(plan.repo)
    h = hashlib.sha256(pipeline.GRADER_VERSION.encode())
    files = grading_modules(root / "grader") + [root / "grader" / "allowlist.toml"]
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
    through the package and its subpackages (stages/), not the commands, exports, batch or
    release."""
    seen: dict[str, Path] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        path = _module_path(package, name)
        if name in seen or path is None:
            continue
        seen[name] = path
        try:
            tree = ast.parse(path.read_text())
        except (OSError, SyntaxError):
            continue
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.level < 1 \
                    or node.level - 1 > len(here):
                continue
            base = here[:len(here) - (node.level - 1)]
            if node.module:
                base = base + node.module.split(".")
                todo += [".".join(base[:i]) for i in range(1, len(base) + 1)]
            todo += [".".join(base + [alias.name]) for alias in node.names]
    return sorted(seen.values())


def _module_path(package: Path, name: str) -> Path | None:
    """grader/a/b.py or grader/a/b/__init__.py for the module `a.b`; None if neither."""
    parts = name.split(".")
    for path in (package.joinpath(*parts[:-1], f"{parts[-1]}.py"),
                 package.joinpath(*parts, "__init__.py")):
        if path.is_file():
            return path
    return None


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


def submission_key(plan: Plan, sub: Submission, fingerprint: str) -> tuple[dict[str, str], str]:
    """The submission's file hashes (or {"error": why} when they cannot be read) and its
    grading key."""
    scratch = Path(tempfile.mkdtemp(prefix="cml-batch-hash-"))
    try:
        hashes = submission_hashes(plan, sub, scratch)
    except (OSError, RuntimeError, subprocess.SubprocessError) as err:
        hashes = {"error": str(err)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return hashes, grading_key(plan, hashes, fingerprint)
