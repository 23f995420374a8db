"""Runs one process the grader does not trust (the student's code, or a compiler on it).

Each process gets its own session and process group, killed whole on timeout; a scrubbed
environment; limits on processes, file size, open files, memory (resident set, watched)
and core dumps; and, when the grader runs as root, the identity of an unprivileged user.
Where bubblewrap works, the process also runs in a jail (`Jail`): new user, PID, network,
IPC and UTS namespaces (no network at all), and a filesystem made only of the system's
programs and libraries (read-only), the GPU device nodes when the stage needs them, a
private /tmp, and the few files the stage needs, bound at neutral paths under /cml — the
checkout, solutions/, hidden test sources, other submissions and the grader's outputs do
not exist in it. Where bubblewrap is missing or cannot run, `isolation()` says so and
grading goes on with the weaker protection (identity and limits only), visibly.

A jailed program (a test binary, the bench) also runs under a seccomp filter
(grader/seccomp.py) where libseccomp is found; `isolation()` says when it is not.

Output goes to a file (never a pipe a child could hold open) and only the tail is kept, for
the log. Results are never read from what the process prints, nor from a file it could
rewrite: each document (a test report, a bench document, a tool's log) comes through a
`Channel`, a pipe the grader holds and reads while the process runs. Each process can get a
fresh folder of its own (`fresh`), removed after. See grader/README.md, "The sandbox" and
"Threat model", and docs/architecture.md, "Trust boundaries".
"""

from __future__ import annotations

import functools
import os
import pwd
import re
import resource
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import confine, costs, seccomp

KEEP_ENV = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")
UNPRIVILEGED_USERS = ("nobody", "nfsnobody")
MAX_FILE_BYTES = 512 * 1024 * 1024
MAX_RSS_BYTES = 16 * 1024**3  # resident memory of all the processes of one run together
MAX_PROCESSES = 512  # per uid: applied only when the code runs as its own (unprivileged) uid
MAX_OPEN_FILES = 1024
TAIL_BYTES = 16 * 1024
JAIL_ROOT = "/cml"  # where a jail's own files appear: /cml/src, /cml/build, /cml/work, /cml/bin
WORK_INSIDE = JAIL_ROOT + "/work"  # a run's own folder (`fresh`), as the process sees it
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # the most a Channel keeps of one document
# The system as a jail sees it: programs and libraries, read-only. /etc only in part: the
# dynamic loader's cache and the compiler alternatives, nothing about users or hosts.
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
NSIGHT_DIRS = ("/opt/nvidia/nsight-compute",)
SYSTEM_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")

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


@dataclass(frozen=True)
class Bind:
    """One path of the host shown inside a jail at `inside` (under JAIL_ROOT)."""

    outside: Path
    inside: str
    writable: bool = False


@dataclass
class Jail:
    """What a jailed process sees beyond the system's programs: `binds`, and the GPU device
    nodes when `gpu` is set. Paths of the host in a command line, in its working folder and
    in its environment are rewritten to their place inside, so callers keep using the
    host's paths; `outside()` maps a path the process printed back to the host's."""

    binds: list[Bind] = field(default_factory=list)
    gpu: bool = False

    def add(self, outside: Path, inside: str, writable: bool = False) -> "Jail":
        self.binds.append(Bind(Path(outside), inside, writable))
        return self

    def with_bind(self, outside: Path, inside: str, writable: bool = False) -> "Jail":
        """A copy of this jail with one more bind (this one, shared by runs at the same
        time, is left as it is)."""
        return Jail(list(self.binds), self.gpu).add(outside, inside, writable)

    def inside(self, text: str) -> str:
        """`text` (an argument: a path, `-I<path>`, `--flag=<path>`...) with every bound host
        path replaced by its name inside."""
        for b in sorted(self.binds, key=lambda b: -len(str(b.outside))):
            base = str(b.outside)
            text = re.sub(re.escape(base) + r"(?=[/\s'\":,;=)]|$)", b.inside.replace("\\", "\\\\"),
                          text)
        return text

    def to_host(self, text: str) -> str:
        for b in self.binds:
            text = re.sub(re.escape(b.inside) + r"(?=[/\s'\":,)]|$)",
                          str(b.outside).replace("\\", "\\\\"), text, flags=re.MULTILINE)
        return text


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

    def as_dict(self) -> dict:
        d = {"tool": self.tool, "jailed": self.jailed}
        if self.why:
            d["why"] = self.why
        if self.jailed:
            d["seccomp"] = self.seccomp
            if self.seccomp_why:
                d["seccomp_why"] = self.seccomp_why
            d["tool_logs"] = confine.what_it_walls(self.landlock)
        return d


def _bwrap_path() -> str | None:
    return os.environ.get("CML_BWRAP") or shutil.which("bwrap")


@functools.lru_cache(maxsize=None)
def isolation() -> Isolation:
    """Finds bubblewrap and checks it can make a jail here (as the user student code runs
    as); the answer is cached for the process."""
    if os.environ.get("CML_SANDBOX", "").lower() == "off":
        return Isolation(None, False, "turned off by CML_SANDBOX=off")
    bwrap = _bwrap_path()
    if not bwrap:
        return Isolation(None, False, "bubblewrap (bwrap) is not installed; student code "
                         "runs with a scrubbed environment and limits only "
                         "(Debian/Ubuntu: apt-get install bubblewrap)")
    try:
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True,
                                 timeout=10).stdout.strip() or "bubblewrap"
        probe = subprocess.run(
            [bwrap, *_jail_args(Jail(), "/"), "true"], capture_output=True, text=True,
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


def _gpu_nodes() -> list[str]:
    try:
        return sorted(os.path.join("/dev", n) for n in os.listdir("/dev")
                      if n.startswith("nvidia"))
    except OSError:
        return []


def _tool_dirs() -> list[str]:
    """Folders of the toolchain outside the system folders (a CUDA toolkit in /opt, a CMake
    in a virtual environment), shown read-only."""
    from .tools import find_tool  # tools imports nothing of ours; late to keep this module light
    found = []
    named = [find_tool(n) for n in ("nvcc", "cmake", "ninja", "compute-sanitizer", "ncu", "g++")]
    # Compilers the environment names (a toolchain in /opt/gcc, say) are part of the build.
    named += [os.environ.get(k) for k in ("CXX", "CC", "CUDAHOSTCXX", "CUDACXX")]
    for path in named:
        if not path or not os.path.isabs(path):
            continue
        real = Path(os.path.realpath(path)).parent.parent  # .../bin/x -> ...
        if len(real.parts) < 3 or _holds_the_grader(real):
            continue  # never "/" or "/opt", nor a folder that holds the grader's checkout
        # A toolkit's parts may live elsewhere through links (Nsight Compute in /opt/nvidia).
        try:
            for entry in os.scandir(real):
                if entry.is_symlink():
                    target = Path(os.path.realpath(entry.path))
                    if target.is_dir() and len(target.parts) >= 3 and not _in_system(target) \
                            and not _holds_the_grader(target):
                        found.append(str(target))
        except OSError:
            pass
        if not _in_system(real):
            found.append(str(real))
    # The toolkit's ncu is a launcher that also looks for Nsight Compute here.
    found += [d for d in NSIGHT_DIRS if os.path.isdir(d)]
    return sorted(set(found))


def _in_system(folder: Path) -> bool:
    return any(str(folder) == d or str(folder).startswith(d + "/") for d in SYSTEM_DIRS)


def _holds_the_grader(folder: Path) -> bool:
    here = Path(__file__).resolve().parent.parent
    return here == folder or folder in here.parents


def _jail_args(jail: Jail, cwd: str, seccomp_fd: int | None = None) -> list[str]:
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--hostname", "sandbox",
            "--clearenv", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
            "--dir", JAIL_ROOT]
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for f in SYSTEM_ETC:
        if os.path.exists(f):
            args += ["--ro-bind", f, f]
    for d in _tool_dirs():
        args += ["--ro-bind", d, d]
    if jail.gpu:
        for node in _gpu_nodes():
            args += ["--dev-bind", node, node]
    for b in jail.binds:
        args += ["--bind" if b.writable else "--ro-bind", str(b.outside), b.inside]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args += ["--chdir", cwd]
    return args


def jail_command(cmd: list[str], jail: Jail, cwd: Path, env: dict[str, str],
                 seccomp_fd: int | None = None) -> list[str]:
    """The bwrap command line that runs `cmd` in `jail` (under the system-call filter read
    from `seccomp_fd`, a descriptor the process inherits, when given)."""
    bwrap = _bwrap_path() or "bwrap"
    args = [bwrap, *_jail_args(jail, jail.inside(str(cwd)), seccomp_fd)]
    for key, value in env.items():
        args += ["--setenv", key, _rewrite_value(jail, value)]
    return args + ["--", *[jail.inside(c) for c in cmd]]


def _rewrite_value(jail: Jail, value: str) -> str:
    if os.pathsep in value:
        return os.pathsep.join(jail.inside(v) for v in value.split(os.pathsep))
    return jail.inside(value)


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


def _preexec(identity: Identity | None, file_limit: int):
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


class Channel:
    """A pipe the grader holds, through which one process hands over one document (a Catch2
    report, a bench document, a tool's log): the process is told to write to `path`
    (/dev/fd/N: the write end, which only that process inherits) while a thread of the
    grader reads the other end as it runs, so a full pipe never blocks the writer and,
    once the process has ended, what was read is the grader's: no file is left that code
    could rewrite later. At most `limit` bytes are kept (`oversized` then says so).

        with sandbox.Channel() as report:
            out = sandbox.run([..., "-o", report.path], ..., channels=[report])
        text = report.text()
    """

    def __init__(self, limit: int = MAX_DOCUMENT_BYTES) -> None:
        self.limit = limit
        self.data = b""
        self.oversized = False
        self.held_open = False  # something still held the write end when reading stopped
        self._chunks: list[bytes] = []
        self._kept = 0
        self._stop = threading.Event()
        self._read_fd, self.write_fd = os.pipe()  # both close-on-exec
        self._thread = threading.Thread(target=self._drain, daemon=True,
                                        name="cml-channel")
        self._thread.start()

    @property
    def path(self) -> str:
        return f"/dev/fd/{self.write_fd}"

    def _drain(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._read_fd], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(self._read_fd, 1 << 16)
            if not chunk:
                return
            room = self.limit - self._kept
            if len(chunk) > room:
                self.oversized = True
                chunk = chunk[:max(0, room)]
            if chunk:
                self._chunks.append(chunk)
                self._kept += len(chunk)
        self.held_open = True

    def close_write(self) -> None:
        """The grader's own copy of the write end (once the process has its copy)."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def finish(self, grace: float = 2.0) -> bytes:
        """Stops reading once every writer has closed the pipe, or `grace` seconds after
        this call; the document as read."""
        self.close_write()
        self._thread.join(grace)
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()
        self.data = b"".join(self._chunks)
        return self.data

    def text(self) -> str:
        return self.data.decode(errors="replace")

    def close(self) -> None:
        if self._read_fd >= 0:
            self.finish()
            os.close(self._read_fd)
            self._read_fd = -1

    def __enter__(self) -> "Channel":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _own_folder(parent: Path, identity: Identity | None) -> Path:
    """A new empty folder under `parent` that only the process's user may enter."""
    folder = Path(tempfile.mkdtemp(prefix="p-", dir=parent))  # mode 0700
    if identity is not None:
        os.chown(folder, identity.uid, identity.gid)
    return folder


def _remove(folder: Path) -> None:
    """Removes `folder` whatever the process left in it (folders it closed included)."""
    def opened(func, path, _exc):
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
        done: threading.Event | None = None) -> Outcome:
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
    set, the process is stopped after a short grace (the checker it served has ended)."""
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
                    max_rss, start, passed, channels, filter_fd, done)
    finally:
        if own is not None:
            _remove(own)


def _run(cmd: list[str], argv: list[str], popen_cwd: Path, popen_env: dict[str, str],
         timeout: float, identity: Identity | None, file_limit: int, jail: Jail | None,
         max_rss: int, start: float, passed: list[int],
         channels: list[Channel] | tuple[Channel, ...], filter_fd: int | None,
         done: threading.Event | None = None) -> Outcome:
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
        timed_out, killed_for = False, None
        done_at = None
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
                if time.monotonic() - start > timeout:
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


@dataclass
class PairOutcome:
    """A checker and its runner: the checker's outcome decides the report; the runner's says
    what became of the student's code."""

    checker: Outcome
    runner: Outcome


def run_pair(checker: list[str], runner: list[str], *, cwd: Path, timeout: float,
             env: dict[str, str], identity: Identity | None = None, jail: Jail | None = None,
             channels: list[Channel] | tuple[Channel, ...] = (),
             runner_channels: list[Channel] | tuple[Channel, ...] = (),
             syscalls: str | None = None) -> PairOutcome:
    """Runs a checker (the grader's tests, Catch2 and the proxies of a lab's interface:
    trusted, outside the jail, as the grader) and the runner that carries out its calls (the
    student's object: in `jail`, as `identity`, under `syscalls`), joined by a socket pair
    made here: the runner gets one end as `--fd N`, the checker the other as CML_RUNNER_FD.
    `channels` go to the checker (its report), `runner_channels` to the runner's command (a
    tool's log). Each gets a fresh folder of its own; both share `timeout`. The runner is
    stopped once the checker has ended (common/include/cml/remote.hpp)."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    done = threading.Event()
    result: dict[str, Outcome] = {}
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            result["runner"] = run([*runner, "--fd", str(theirs.fileno())], cwd=cwd,
                                   timeout=timeout, env=env, identity=identity, jail=jail,
                                   fresh=True, channels=runner_channels, syscalls=syscalls,
                                   extra_fds=(theirs.fileno(),), done=done)
        except BaseException as err:  # raised again in the caller's thread
            errors.append(err)
        finally:
            theirs.close()

    thread = threading.Thread(target=costs.carry(serve), name="cml-runner", daemon=True)
    try:
        os.set_inheritable(mine.fileno(), False)
        thread.start()
        checker_env = {**env, "CML_RUNNER_FD": str(mine.fileno())}
        outcome = run(checker, cwd=cwd, timeout=timeout, env=checker_env, fresh=True,
                      channels=channels, extra_fds=(mine.fileno(),))
    finally:
        mine.close()
        done.set()
        thread.join()
    if errors:
        raise errors[0]
    return PairOutcome(outcome, result["runner"])


def make_shared_dir(path: Path, identity: Identity | None) -> Path:
    """A folder the unprivileged user may write (reports, HOME)."""
    path.mkdir(parents=True, exist_ok=True)
    if identity is not None:
        os.chown(path, identity.uid, identity.gid)
        path.chmod(0o700)
    return path
