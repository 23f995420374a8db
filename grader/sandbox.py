"""Runs one process the grader does not trust (the student's code, or a compiler on it).

Each process gets its own process group, killed whole on timeout; a scrubbed environment;
limits on file size and core dumps; and, when the grader runs as root, the identity of an
unprivileged user. Its output goes to a file (never a pipe a child could hold open) and
only the tail is kept, for the log: results are read from files the grader asks for,
never from what the process prints.
"""

from __future__ import annotations

import os
import pwd
import resource
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

KEEP_ENV = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")
UNPRIVILEGED_USERS = ("nobody", "nfsnobody")
MAX_FILE_BYTES = 512 * 1024 * 1024
TAIL_BYTES = 16 * 1024

_live: set[int] = set()  # process groups running now, killed by kill_all()
_live_lock = threading.Lock()


class StartError(OSError):
    """The process could not be started at all: a problem of the grader's, not the code's."""


def reachable_by_others(path: Path) -> Path | None:
    """The first folder above `path` (or itself) that other users cannot enter, or None."""
    for folder in [path, *path.parents]:
        try:
            if not os.stat(folder).st_mode & 0o001:
                return folder
        except OSError:
            return folder
    return None


@dataclass(frozen=True)
class Identity:
    uid: int
    gid: int
    name: str


def unprivileged_identity() -> Identity | None:
    """Whom student code runs as: None unless the grader is root (then 'nobody')."""
    if os.geteuid() != 0:
        return None
    for name in UNPRIVILEGED_USERS:
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return Identity(pw.pw_uid, pw.pw_gid, name)
    return Identity(65534, 65534, "uid 65534")


def scrubbed_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in KEEP_ENV if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["HOME"] = str(home)
    env["TMPDIR"] = str(home)
    if extra:
        env.update(extra)
    return env


@dataclass
class Outcome:
    cmd: list[str]
    returncode: int | None  # None when killed on timeout
    timed_out: bool
    seconds: float
    output_tail: str

    @property
    def signal(self) -> int | None:
        """The signal that ended the process, if one did."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s (the whole process group was killed)"
        if self.signal:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"crashed ({name})"
        return f"exit status {self.returncode}"


def _preexec(identity: Identity | None, file_limit: int):
    def setup() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
        if identity is not None:
            os.setgroups([])
            os.setgid(identity.gid)
            os.setuid(identity.uid)
    return setup


def _session_members(sid: int) -> list[int]:
    """Processes of session `sid` (Linux /proc). Ninja gives each compile its own process
    group, so killing the group alone would leave the compilers running."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 3 and int(fields[3]) == sid:
            members.append(int(entry))
    return members


def kill_group(pgid: int) -> None:
    """Kills the process group `pgid` and everything else in the session it leads."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in _session_members(pgid):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_all() -> None:
    """Kills every process group still running (used by the interrupt handler)."""
    with _live_lock:
        groups = list(_live)
    for pgid in groups:
        kill_group(pgid)


def run(cmd: list[str], *, cwd: Path, timeout: float, env: dict[str, str],
        identity: Identity | None = None, file_limit: int = MAX_FILE_BYTES) -> Outcome:
    """Runs `cmd` in its own session; kills its process group after `timeout` seconds."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True,
                                    preexec_fn=_preexec(identity, file_limit))
        except OSError as err:
            raise StartError(f"could not start {cmd[0]}: {err}") from err
        with _live_lock:
            _live.add(proc.pid)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # Children left behind (or the whole group on timeout) go too.
            kill_group(proc.pid)
            proc.wait()
            with _live_lock:
                _live.discard(proc.pid)
        seconds = time.monotonic() - start
        size = out.seek(0, os.SEEK_END)
        out.seek(max(0, size - TAIL_BYTES))
        tail = out.read().decode(errors="replace")
    return Outcome(cmd, None if timed_out else proc.returncode, timed_out, seconds, tail)


def make_shared_dir(path: Path, identity: Identity | None) -> Path:
    """A folder the unprivileged user may write (reports, HOME)."""
    path.mkdir(parents=True, exist_ok=True)
    if identity is not None:
        os.chown(path, identity.uid, identity.gid)
        path.chmod(0o700)
    return path
