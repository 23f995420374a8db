"""The wall between a tool's log and the program the tool watches.

compute-sanitizer and ncu write their logs to a pipe the grader holds (channel.Channel),
and start the program they watch themselves: that program would inherit the pipe, could
write a summary or a table of its own into it, find the tool among its processes and write
through the tool's own descriptor, or kill the tool. So the tool starts this file instead,
and this file becomes the program (`execv`) once, before any code of the student's runs:

1. every descriptor of this process that is one of the tool's logs is closed (`--log N`:
   the descriptor named; any other that is the same pipe, such as one the tool opened and
   left inheritable, is found by its device and inode);
2. the process enters a Landlock domain of its own (Linux 5.13 and later, where the kernel
   has Landlock enabled). A process in a domain may not inspect a process outside it
   (ptrace access, which /proc/PID/fd, /proc/PID/mem and process_vm_writev all need), so the
   tool's own descriptors and memory are out of reach; from Linux 6.12 (Landlock ABI 6) it
   may not signal one either, so it cannot kill the tool. Nothing else is restricted: the
   domain handles only the making of block devices, which no lab does.

Where the kernel has no Landlock, step 1 still holds and the grader's checks of the log
stand alone (grader/README.md, "Untrusted code"): `landlock_abi()` says which, and the
isolation record in result.json carries it.

Used as  TOOL [tool options] python3 -I -S confine.py --log N [--log M] -- PROGRAM ARGS...
(`command()` makes that list). Inside the jail this file is all there is of the grader: it
imports the standard library only.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve()
INSIDE = "/cml/bin/cml-confine.py"  # where the run jail shows this file (bwrap.JAIL_ROOT)

# Linux's Landlock interface (include/uapi/linux/landlock.h); the system-call numbers are the
# same on every architecture.
_SYS_CREATE_RULESET, _SYS_RESTRICT_SELF = 444, 446
_CREATE_RULESET_VERSION = 1
_ACCESS_FS_MAKE_BLOCK = 1 << 11
_SCOPE_SIGNAL = 1 << 1  # ABI 6
_PR_SET_NO_NEW_PRIVS = 38
EXIT_NOT_CONFINED = 75  # Landlock is there but refused: the program is not started


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (1 for Linux 5.13; 6 adds signal scoping), 0 where
    the kernel has none or has it turned off."""
    try:
        version = _libc().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                                  ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def what_it_walls(abi: int) -> str:
    """In words, what the wall holds on a kernel of Landlock ABI `abi`."""
    if abi <= 0:
        return ("the log's descriptors closed in the program (no Landlock here: the tool's "
                "own descriptors are not walled off)")
    if abi < 6:
        return (f"the log's descriptors closed, the tool's process out of reach (Landlock ABI "
                f"{abi}); killing the tool fails its part")
    return (f"the log's descriptors closed, the tool out of reach and of signals (Landlock "
            f"ABI {abi})")


def python() -> str:
    """The interpreter that runs this file inside the jail: the system's, which the jail
    shows (a grader run from a virtual environment has its own python3 outside it)."""
    return shutil.which("python3", path="/usr/bin:/bin") or sys.executable


def command(program: list[str], logs: list[int] | tuple[int, ...]) -> list[str]:
    """`program` started through this file, the tool's log descriptors `logs` closed first."""
    return [python(), "-I", "-S", str(SCRIPT), *[f"--log={fd}" for fd in logs], "--", *program]


def _close_logs(logs: list[int]) -> None:
    pipes = set()
    for fd in logs:
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        pipes.add((st.st_dev, st.st_ino))
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            st = os.fstat(fd)
        except OSError:  # the listing's own descriptor, gone by now
            continue
        if (st.st_dev, st.st_ino) in pipes:
            os.close(fd)


def _restrict(abi: int) -> None:
    libc = _libc()
    scoped = _SCOPE_SIGNAL if abi >= 6 else 0
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8  # struct landlock_ruleset_attr grew
    attr = ctypes.create_string_buffer(
        struct.pack("=QQQ", _ACCESS_FS_MAKE_BLOCK, 0, scoped)[:size], size)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    ruleset = libc.syscall(_SYS_CREATE_RULESET, attr, ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: confine.py --log N [--log M] -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    split = argv.index("--")
    logs = [int(a.split("=", 1)[1]) for a in argv[:split] if a.startswith("--log=")]
    program = argv[split + 1:]
    _close_logs(logs)
    abi = landlock_abi()
    if abi > 0:
        try:
            _restrict(abi)
        except OSError as err:
            print(f"cml-confine: Landlock is there but refused ({err}): the program is not "
                  "started", file=sys.stderr)
            return EXIT_NOT_CONFINED
    try:
        os.execv(program[0], program)
    except OSError as err:
        print(f"cml-confine: could not start {program[0]}: {err.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
