"""HEAD's files as a release reads them (releases.py): the committed tree (`read_head`: every
regular file's mode and content, from `git ls-tree` and `git cat-file`, nothing from the
working tree) and what differs from it (`uncommitted`), so that a release holds only what
is committed. `ReleaseError` is every release problem's, with the message that says why."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..paths import LAB_DIR_RE, ROOT


class ReleaseError(Exception):
    """The release cannot be made (a leak, uncommitted files, a bad output folder); the
    message says why."""


@dataclass
class Tree:
    """The files of HEAD: path -> (git mode, content)."""

    root: Path
    revision: str
    modes: dict[str, str]
    blobs: dict[str, bytes]

    def text(self, rel: str) -> str | None:
        """The file's text, or None for a binary (or absent) file."""
        data = self.blobs.get(rel)
        if data is None or b"\0" in data:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def labs(self) -> list[str]:
        """The lab folders (labs/NN_topic) of the tree, in order."""
        found = {rel.split("/")[1] for rel in self.modes
                 if rel.startswith("labs/") and rel.count("/") >= 2}
        return sorted(f for f in found if LAB_DIR_RE.match(f))

    def under(self, prefix: str) -> list[str]:
        return sorted(rel for rel in self.modes if rel.startswith(prefix))


def git(args: list[str], cwd: Path, data: bytes | None = None) -> bytes:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True,
                              timeout=300)
    except (OSError, subprocess.SubprocessError) as err:
        raise ReleaseError(f"git {args[0]} failed: {err}") from err
    if proc.returncode != 0:
        raise ReleaseError(f"git {' '.join(args[:2])} failed: "
                           f"{proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def read_head(root: Path = ROOT) -> Tree:
    """HEAD's files (symbolic links and submodules are left out)."""
    root = Path(root).resolve()
    if not shutil.which("git"):
        raise ReleaseError("git is not installed: the release is made from the committed tree")
    top = git(["rev-parse", "--show-toplevel"], root).decode().strip()
    if Path(top).resolve() != root:
        raise ReleaseError(f"{root} is not the top of a git checkout (that is {top})")
    revision = git(["rev-parse", "--verify", "HEAD^{commit}"], root).decode().strip()
    listing = git(["ls-tree", "-r", "-z", "--full-tree", "HEAD"], root).decode()
    modes, oids = {}, {}
    for entry in filter(None, listing.split("\0")):
        meta, rel = entry.split("\t", 1)
        mode, kind, oid = meta.split()
        if kind == "blob" and mode in ("100644", "100755"):
            modes[rel], oids[rel] = mode, oid
    blobs: dict[str, bytes] = {}
    if oids:
        order = sorted(oids)
        out = git(["cat-file", "--batch"], root, "".join(f"{oids[r]}\n" for r in order).encode())
        pos = 0
        for rel in order:
            header_end = out.index(b"\n", pos)
            size = int(out[pos:header_end].split()[2])
            blobs[rel] = out[header_end + 1:header_end + 1 + size]
            pos = header_end + 1 + size + 1
    return Tree(root, revision, modes, blobs)


def uncommitted(root: Path = ROOT) -> list[tuple[str, str]]:
    """(what, path) for every file that differs from HEAD: modified, staged, deleted,
    untracked (not ignored)."""
    out = git(["status", "--porcelain=v1", "-z", "--untracked-files=all"], Path(root)).decode()
    entries = out.split("\0")
    found, i = [], 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        code, rel = entry[:2], entry[3:]
        if code[0] in "RC":
            i += 1  # the original path follows
        what = ("untracked" if code == "??" else "deleted" if "D" in code
                else "added" if "A" in code else "modified")
        found.append((what, rel))
    return found
