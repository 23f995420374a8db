"""The jail a process of student code runs in where bubblewrap works (grader/sandbox.py runs
it): what the process sees beyond the system's programs and libraries (`Jail`, its `Bind`s
at neutral paths under /cml, the GPU device nodes when the stage needs them) and the
bubblewrap command line that makes it (`jail_command`): new user, PID, network, IPC and UTS
namespaces (no network at all), the system read-only, the toolchain's folders outside it
read-only, a private /tmp, the host's paths in the command, its working folder and its
environment rewritten to their places inside. See grader/README.md, "The sandbox"."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

JAIL_ROOT = "/cml"  # where a jail's own files appear: /cml/src, /cml/build, /cml/work, /cml/bin
WORK_INSIDE = JAIL_ROOT + "/work"  # a run's own folder (`fresh`), as the process sees it
# The system as a jail sees it: programs and libraries, read-only. /etc only in part: the
# dynamic loader's cache and the compiler alternatives, nothing about users or hosts.
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
NSIGHT_DIRS = ("/opt/nvidia/nsight-compute",)
SYSTEM_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")


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


def bwrap_path() -> str | None:
    return os.environ.get("CML_BWRAP") or shutil.which("bwrap")


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


def jail_args(jail: Jail, cwd: str, seccomp_fd: int | None = None) -> list[str]:
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
    bwrap = bwrap_path() or "bwrap"
    args = [bwrap, *jail_args(jail, jail.inside(str(cwd)), seccomp_fd)]
    for key, value in env.items():
        args += ["--setenv", key, _rewrite_value(jail, value)]
    return args + ["--", *[jail.inside(c) for c in cmd]]


def _rewrite_value(jail: Jail, value: str) -> str:
    if os.pathsep in value:
        return os.pathsep.join(jail.inside(v) for v in value.split(os.pathsep))
    return jail.inside(value)
