"""Runs one process the grader does not trust (the student's code, or a compiler on it).

Each process gets its own session and process group, killed whole on timeout; a scrubbed
environment; limits on processes, file size, open files, memory (resident set, watched)
and core dumps; and, when the grader runs as root, the identity of an unprivileged user.
Where bubblewrap works, the process also runs in a jail (grader/bwrap.py: a `Jail` of the
system's programs and libraries, read-only, the GPU device nodes when the stage needs them,
a private /tmp and the few files the stage needs, bound at neutral paths under /cml, in
namespaces of its own without a network) — the checkout, solutions/, hidden test sources,
other submissions and the grader's outputs do not exist in it. Where bubblewrap is missing
or cannot run, `isolation()` says so and grading goes on with the weaker protection
(identity and limits only), visibly.

A jailed program (a test binary, the bench) also runs under a seccomp filter
(grader/seccomp.py) where libseccomp is found; `isolation()` says when it is not.

Output goes to a file (never a pipe a child could hold open) and only the tail is kept, for
the log. Results are never read from what the process prints, nor from a file it could
rewrite: each document (a test report, a bench document, a tool's log) comes through a
`Channel` (grader/channel.py), a pipe the grader holds and reads while the process runs.
Each process can get a fresh folder of its own (`fresh`), removed after. A checker and its
runner run together through grader/pairs.py. See grader/README.md, "The sandbox" and
"Threat model", and docs/architecture.md, "Trust boundaries".
"""

from __future__ import annotations

import functools
import os
import pwd
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import confine, costs, seccomp
from .bwrap import WORK_INSIDE, Jail, bwrap_path, jail_args, jail_command
from .channel import Channel
from .gate import WAIT

KEEP_ENV = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")
UNPRIVILEGED_USERS = ("nobody", "nfsnobody")
MAX_FILE_BYTES = 512 * 1024 * 1024
MAX_RSS_BYTES = 16 * 1024**3  # resident memory of all the processes of one run together
MAX_PROCESSES = 512  # per uid: applied only when the code runs as its own (unprivileged) uid
MAX_OPEN_FILES = 1024
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


# Where nothing is timed (the tests, compute-sanitizer, ncu), a process's CUDA context gets one
# hardware work queue instead of eight. Contexts that processes make at the same time are
# made about one at a time, and fewer queues make each quicker: on an H200, 16 made at once
# took 3.3 s in all with eight queues (one alone 0.22-0.34 s) and 1.2 s with one. The work of
# a process's streams keeps its order and loses only its overlap on the device, so a missing
# wait between two streams shows less in the tests; the bench, which keeps the default (a
# timed call may overlap its streams), still verifies what its calls wrote.
UNTIMED_ENV = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}


def untimed_env(env: dict[str, str]) -> dict[str, str]:
    """`env` for a process whose GPU work nothing times (UNTIMED_ENV added)."""
    return {**env, **UNTIMED_ENV}


@dataclass(frozen=True)
class Isolation:
    """Whether student code can be jailed here, and with what; recorded in result.json."""

    tool: str | None  # "bubblewrap 0.8.0", or None
    jailed: bool
    why: str = ""  # when not jailed: the reason, for doctor and result.json
    # whether jailed programs run under the system-call filter (grader/seccomp.py), and why not
    seccomp: bool = False
    seccomp_why: str = ""
    # the kernel's Landlock ABI (0: none): what walls a tool's log off from the program it
    # watches beyond closing its descriptors (grader/confine.py)
    landlock: int = 0

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"tool": self.tool, "jailed": self.jailed}
        if self.why:
            d["why"] = self.why
        if self.jailed:
            d["seccomp"] = self.seccomp
            if self.seccomp_why:
                d["seccomp_why"] = self.seccomp_why
            d["tool_logs"] = confine.what_it_walls(self.landlock)
        return d


@functools.lru_cache(maxsize=None)
def isolation() -> Isolation:
    """Finds bubblewrap and checks it can make a jail here (as the user student code runs
    as); the answer is cached for the process."""
    if os.environ.get("CML_SANDBOX", "").lower() == "off":
        return Isolation(None, False, "turned off by CML_SANDBOX=off")
    bwrap = bwrap_path()
    if not bwrap:
        return Isolation(None, False, "bubblewrap (bwrap) is not installed; student code "
                         "runs with a scrubbed environment and limits only "
                         "(Debian/Ubuntu: apt-get install bubblewrap)")
    try:
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True,
                                 timeout=10).stdout.strip() or "bubblewrap"
        probe = subprocess.run(
            [bwrap, *jail_args(Jail(), "/"), "true"], capture_output=True, text=True,
            timeout=30, preexec_fn=_preexec(unprivileged_identity(), MAX_FILE_BYTES))
    except (OSError, subprocess.SubprocessError) as err:
        return Isolation(None, False, f"bubblewrap could not be started: {err}")
    if probe.returncode != 0:
        why = (probe.stderr.strip().splitlines() or ["no message"])[-1][:200]
        return Isolation(version, False, f"bubblewrap cannot make a jail here ({why}); "
                         "unprivileged user namespaces may be turned off")
    filters = seccomp.filters()
    return Isolation(version, True, seccomp=filters.available, seccomp_why=filters.why,
                     landlock=confine.landlock_abi())


@dataclass
class Outcome:
    cmd: list[str]
    returncode: int | None  # None when killed on timeout
    timed_out: bool
    seconds: float
    output_tail: str
    killed_for: str | None = None  # a limit other than time that ended it

    @property
    def signal(self) -> int | None:
        """The signal that ended the process, if one did."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s (all its processes were killed)"
        if self.killed_for:
            return f"was stopped: it {self.killed_for}"
        if self.signal:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"crashed ({name})"
        return f"exit status {self.returncode}"


def _preexec(identity: Identity | None, file_limit: int) -> Callable[[], None]:
    def setup() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
        resource.setrlimit(resource.RLIMIT_NOFILE, (MAX_OPEN_FILES, MAX_OPEN_FILES))
        if identity is not None:
            # Counted per uid, so only meaningful when the code has a uid of its own.
            resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))
            os.setgroups([])
            os.setgid(identity.gid)
            os.setuid(identity.uid)
    return setup


def _session_members(sid: int, table: dict[int, tuple[int, int, int]]) -> list[int]:
    """Processes of session `sid`. Ninja gives each compile its own process group, so
    killing the group alone would leave the compilers running."""
    return [pid for pid, (_ppid, session, _rss) in table.items() if session == sid]


def kill_group(pgid: int) -> None:
    """Kills the process group `pgid`, everything else in the session it leads and every
    process below it (found before anything is killed, while the parents still say so)."""
    table = _process_table()
    doomed = set(_session_members(pgid, table)) | set(_tree(pgid, table))
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Stopping(Exception):
    """A process was to start after stop_starting(): the grade is being interrupted."""


_stop = threading.Event()


def stop_starting(on: bool = True) -> None:
    """From now on (until called with False) run() starts nothing and raises Stopping: the
    interrupted grade's other threads end at their next process."""
    if on:
        _stop.set()
    else:
        _stop.clear()


def stopping() -> bool:
    """Whether stop_starting() is in force."""
    return _stop.is_set()


def kill_all() -> None:
    """Kills every process group still running (used by the interrupt handler)."""
    with _live_lock:
        groups = list(_live)
    for pgid in groups:
        kill_group(pgid)


def _process_table() -> dict[int, tuple[int, int, int]]:
    """pid -> (parent pid, session id, resident pages) of every process (Linux /proc)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            table[int(entry)] = (int(fields[1]), int(fields[3]), int(fields[21]))
        except (OSError, IndexError, ValueError):
            continue
    return table


def _tree(root: int, table: dict[int, tuple[int, int, int]]) -> list[int]:
    """`root` and every process below it, also those that started sessions of their own."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _sid, _rss) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def resident_bytes(root: int) -> int:
    """Resident memory of `root` and all its descendants together."""
    table = _process_table()
    page = os.sysconf("SC_PAGE_SIZE")
    return sum(table[p][2] for p in _tree(root, table) if p in table) * page


def _own_folder(parent: Path, identity: Identity | None) -> Path:
    """A new empty folder under `parent` that only the process's user may enter."""
    folder = Path(tempfile.mkdtemp(prefix="p-", dir=parent))  # mode 0700
    if identity is not None:
        os.chown(folder, identity.uid, identity.gid)
    return folder


def _remove(folder: Path) -> None:
    """Removes `folder` whatever the process left in it (folders it closed included)."""
    def opened(func: Callable[[str], object], path: str, _exc: object) -> None:
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass
    shutil.rmtree(folder, onerror=opened)


def run(cmd: list[str], *, cwd: Path, timeout: float, env: dict[str, str],
        identity: Identity | None = None, file_limit: int = MAX_FILE_BYTES,
        jail: Jail | None = None, max_rss: int = MAX_RSS_BYTES, fresh: bool = False,
        channels: list[Channel] | tuple[Channel, ...] = (),
        syscalls: str | None = None, extra_fds: tuple[int, ...] = (),
        done: threading.Event | None = None,
        starts: threading.Event | None = None) -> Outcome:
    """Runs `cmd` in its own session (in `jail` when given and bubblewrap works here); kills
    all its processes after `timeout` seconds or once together they hold more than
    `max_rss` bytes of memory.

    `fresh`: the process gets a new empty folder of its own, made under `cwd` and removed
    after, as its working folder, HOME and TMPDIR (in a jail, at /cml/work): nothing one
    process writes is seen by the next. `channels`: pipes the process writes its documents
    to (their write ends are passed on; the grader's copies are closed once it started,
    and each is read to its end after it ended). `syscalls`: the seccomp profile of a
    jailed process (grader/seccomp.py: PROGRAM or TOOL; None: no filter, as for a build).
    `extra_fds`: other descriptors the process inherits (a runner's socket). `done`: once
    set, the process is stopped after a short grace (the checker it served has ended).
    `starts`: the time limit counts from when it is set (a program at its start gate,
    grader/gate.py, may wait gate.WAIT seconds)."""
    if _stop.is_set():
        raise Stopping(f"not started, the grade is being interrupted: {cmd[0]}")
    start = time.monotonic()
    own = _own_folder(cwd, identity) if fresh else None
    if own is not None:
        cwd = own
        env = {**env, "HOME": str(own), "TMPDIR": str(own)}
        if jail is not None:
            jail = jail.with_bind(own, WORK_INSIDE, writable=True)
    popen_env, popen_cwd, argv = env, cwd, cmd
    passed = [ch.write_fd for ch in channels] + list(extra_fds)
    filter_fd = None
    try:
        for ch in channels:
            if identity is not None:
                # /dev/fd/N reopens the pipe itself, checked against its mode: the process
                # (not its owner) may open it for writing only. Readable, its code could
                # drain the harness's document before the grader reads it and write another.
                os.fchmod(ch.write_fd, 0o222)
        if jail is not None and isolation().jailed:
            filter_fd = seccomp.program_fd(syscalls) if syscalls else None
            argv = jail_command(cmd, jail, cwd, env, filter_fd)
            popen_env = {"PATH": env.get("PATH", "/usr/bin:/bin")}
            popen_cwd = Path("/")
            if filter_fd is not None:
                passed.append(filter_fd)
        return _run(cmd, argv, popen_cwd, popen_env, timeout, identity, file_limit, jail,
                    max_rss, start, passed, channels, filter_fd, done, starts)
    finally:
        if own is not None:
            _remove(own)


def _run(cmd: list[str], argv: list[str], popen_cwd: Path, popen_env: dict[str, str],
         timeout: float, identity: Identity | None, file_limit: int, jail: Jail | None,
         max_rss: int, start: float, passed: list[int],
         channels: list[Channel] | tuple[Channel, ...], filter_fd: int | None,
         done: threading.Event | None, starts: threading.Event | None) -> Outcome:
    with tempfile.TemporaryFile() as out:
        costs.started(cmd)
        try:
            proc = subprocess.Popen(argv, cwd=popen_cwd, env=popen_env,
                                    stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    pass_fds=passed, preexec_fn=_preexec(identity, file_limit))
        except OSError as err:
            raise StartError(f"could not start {argv[0]}: {err}") from err
        finally:
            # The process has its copies now: when it (and whatever it started) is gone,
            # the channels see their end.
            for ch in channels:
                ch.close_write()
            if filter_fd is not None:
                os.close(filter_fd)
        with _live_lock:
            _live.add(proc.pid)
        timed_out, killed_for, done_at = False, None, None
        timed_from = None if starts is not None else start  # at a gate: from the go
        try:
            while True:
                try:
                    proc.wait(timeout=0.25)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if done is not None and done.is_set():
                    done_at = done_at or time.monotonic()
                    if time.monotonic() - done_at > PAIR_GRACE:
                        break
                if timed_from is None and starts and starts.is_set():
                    timed_from = time.monotonic()
                if time.monotonic() - (timed_from or start) > (timeout if timed_from else WAIT):
                    timed_out = True
                    break
                if resident_bytes(proc.pid) > max_rss:
                    killed_for = f"used more than {max_rss / 1024**3:.0f} GiB of memory"
                    break
        finally:
            # Children left behind (or everything, on timeout) go too.
            kill_group(proc.pid)
            proc.wait()
            with _live_lock:
                _live.discard(proc.pid)
            for ch in channels:
                ch.finish()
        seconds = time.monotonic() - start
        size = out.seek(0, os.SEEK_END)
        out.seek(max(0, size - TAIL_BYTES))
        tail = out.read().decode(errors="replace")
    if jail is not None:
        tail = jail.to_host(tail)
    returncode = None if timed_out else proc.returncode
    return Outcome(cmd, returncode, timed_out, seconds, tail, killed_for)


# Seconds a runner may take to end after its checker has (it ends at once when the socket
# closes, unless its code is still busy).
PAIR_GRACE = 2.0


def make_shared_dir(path: Path, identity: Identity | None) -> Path:
    """A folder the unprivileged user may write (reports, HOME)."""
    path.mkdir(parents=True, exist_ok=True)
    if identity is not None:
        os.chown(path, identity.uid, identity.gid)
        path.chmod(0o700)
    return path
