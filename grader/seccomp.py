"""The system calls a jailed process may not make: a seccomp filter, compiled to the BPF
program bubblewrap loads (`bwrap --seccomp FD`) just before it starts the command.

The filter is built with libseccomp (libseccomp.so.2, which apt itself needs, so every
Debian and Ubuntu system has it) through ctypes. Everything is allowed but:

- ptrace, process_vm_readv/writev (reading or writing another process's memory);
- mount, umount2, pivot_root, unshare, setns, kexec_load, kexec_file_load, bpf,
  userfaultfd, keyctl, add_key, request_key, personality (nothing a lab needs);
- for a program (a test binary, the bench; profile PROGRAM): socket() of any family but
  AF_UNIX, and new processes — fork, vfork, clone without CLONE_THREAD (threads are fine);
  clone3, whose flags a filter cannot see, answers ENOSYS so that the C library falls back
  to clone. compute-sanitizer and ncu (profile TOOL) start the program themselves and talk
  to it over a loopback socket, so their filter has neither rule; the jail's network
  namespace, which has no way out, is the wall there.

A refused call fails with EPERM (clone3: ENOSYS); the process is not killed, so a test
that tries one fails as the code's own error. System calls of another architecture (a 32-bit
call from a 64-bit process) kill the process: libseccomp's default for a foreign ABI.
execve cannot be refused here: bubblewrap starts the command after loading the filter.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import socket
from dataclasses import dataclass

PROGRAM, TOOL = "program", "tool"
PROFILES = (PROGRAM, TOOL)

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_NE, SCMP_CMP_MASKED_EQ = 1, 7
CLONE_THREAD = 0x00010000

REFUSED_ALWAYS = ("ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2",
                  "pivot_root", "unshare", "setns", "kexec_load", "kexec_file_load", "bpf",
                  "userfaultfd", "keyctl", "add_key", "request_key", "personality")
NEW_PROCESSES = ("fork", "vfork")


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)  # SCMP_ACT_ERRNO(code)


class _ArgCmp(ctypes.Structure):
    """struct scmp_arg_cmp."""

    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


@dataclass(frozen=True)
class Filters:
    """The compiled programs, one per profile, or why there are none."""

    programs: dict[str, bytes]
    why: str = ""  # when there are none: the reason, for doctor and result.json

    @property
    def available(self) -> bool:
        return bool(self.programs)


def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    lib = ctypes.CDLL(name, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def _rule(lib: ctypes.CDLL, ctx: int, action: int, name: str, *cmps: _ArgCmp) -> None:
    number = lib.seccomp_syscall_resolve_name(name.encode())
    if number < 0:
        return  # not a system call of this architecture (e.g. fork on arm64): nothing to refuse
    array = (_ArgCmp * len(cmps))(*cmps) if cmps else None
    rc = lib.seccomp_rule_add_array(ctx, action, number, len(cmps), array)
    if rc < 0:
        raise OSError(-rc, f"seccomp_rule_add({name}): {os.strerror(-rc)}")


def compile_filter(profile: str) -> bytes:
    """The BPF program of `profile` (PROGRAM or TOOL). Raises OSError when libseccomp cannot
    be loaded or refuses a rule."""
    if profile not in PROFILES:
        raise ValueError(f"no seccomp profile {profile!r}")
    lib = _library()
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")
    try:
        eperm = _errno_action(errno.EPERM)
        for name in REFUSED_ALWAYS:
            _rule(lib, ctx, eperm, name)
        if profile == PROGRAM:
            _rule(lib, ctx, eperm, "socket", _ArgCmp(0, SCMP_CMP_NE, socket.AF_UNIX, 0))
            for name in NEW_PROCESSES:
                _rule(lib, ctx, eperm, name)
            _rule(lib, ctx, eperm, "clone", _ArgCmp(0, SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0))
            _rule(lib, ctx, _errno_action(errno.ENOSYS), "clone3")
        fd = os.memfd_create("cml-seccomp-export", os.MFD_CLOEXEC)
        try:
            rc = lib.seccomp_export_bpf(ctx, fd)
            if rc < 0:
                raise OSError(-rc, f"seccomp_export_bpf: {os.strerror(-rc)}")
            size = os.lseek(fd, 0, os.SEEK_END)
            program = os.pread(fd, size, 0)
        finally:
            os.close(fd)
        if not program or len(program) % 8:
            raise OSError("libseccomp exported no BPF program")
        return program
    finally:
        lib.seccomp_release(ctx)


@functools.lru_cache(maxsize=None)
def filters() -> Filters:
    """Both profiles compiled, cached for the process; none (and why) where libseccomp
    cannot be loaded here."""
    try:
        return Filters({p: compile_filter(p) for p in PROFILES})
    except OSError as err:
        return Filters({}, f"libseccomp cannot be used here ({err}); jailed processes run "
                       "without a system-call filter (Debian/Ubuntu: apt-get install "
                       "libseccomp2)")


def program_fd(profile: str) -> int | None:
    """A new file descriptor (close-on-exec; the caller passes it on and closes it) holding
    the program of `profile` from its start, or None where there is no filter."""
    program = filters().programs.get(profile)
    if program is None:
        return None
    fd = os.memfd_create("cml-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
