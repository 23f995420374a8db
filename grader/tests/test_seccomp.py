"""The seccomp filter of the jail (grader/seccomp.py), loaded into a child process the way
bubblewrap loads it before it starts a command: a program may not start processes, open a
network socket or trace another process; threads and AF_UNIX sockets still work. The
profile of compute-sanitizer and ncu starts processes and opens sockets."""

import errno
import json
import subprocess
import sys
import unittest
import unittest.mock
from pathlib import Path

from grader import seccomp

REPO = Path(__file__).resolve().parents[2]
FILTERS = seccomp.filters()

# Loads the profile's program, tries each call, prints {call: "ok" or the errno's name}.
CHILD = r'''
import ctypes, errno, json, os, socket, sys, threading
sys.path.insert(0, sys.argv[1])
from grader import seccomp
class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
def load_here(program):  # what bubblewrap does with --seccomp before it starts the command
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(program, len(program))
    prog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
load_here(seccomp.filters().programs[sys.argv[2]])
def tried(call):
    try:
        call()
        return "ok"
    except OSError as err:
        return errno.errorcode.get(err.errno, str(err.errno))
def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
def ptrace():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, os.getppid(), 0, 0) != 0:  # PTRACE_ATTACH to the parent
        raise OSError(ctypes.get_errno(), "ptrace")
def thread():
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
def unshare():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        raise OSError(ctypes.get_errno(), "unshare")
print(json.dumps({"fork": tried(fork), "inet": tried(lambda: socket.socket(socket.AF_INET)),
                  "inet6": tried(lambda: socket.socket(socket.AF_INET6)),
                  "unix": tried(lambda: socket.socket(socket.AF_UNIX)),
                  "ptrace": tried(ptrace), "thread": tried(thread),
                  "unshare": tried(unshare)}))
'''


@unittest.skipUnless(FILTERS.available, FILTERS.why)
class FilterTest(unittest.TestCase):
    def calls(self, profile: str) -> dict[str, str]:
        out = subprocess.run([sys.executable, "-c", CHILD, str(REPO), profile],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def test_a_program_starts_no_process_opens_no_network_socket_traces_nothing(self):
        calls = self.calls(seccomp.PROGRAM)
        self.assertEqual(calls, {"fork": "EPERM", "inet": "EPERM", "inet6": "EPERM",
                                 "unix": "ok", "ptrace": "EPERM", "thread": "ok",
                                 "unshare": "EPERM"})

    def test_a_tool_starts_its_program_and_talks_to_it_but_traces_nothing(self):
        calls = self.calls(seccomp.TOOL)
        self.assertEqual(calls, {"fork": "ok", "inet": "ok", "inet6": "ok", "unix": "ok",
                                 "ptrace": "EPERM", "thread": "ok", "unshare": "EPERM"})

    def test_the_programs_are_bpf(self):
        for profile in seccomp.PROFILES:
            program = FILTERS.programs[profile]
            self.assertEqual(len(program) % 8, 0)  # struct sock_filter: 8 bytes each
            self.assertGreater(len(program), 8 * len(seccomp.REFUSED_ALWAYS))
        self.assertGreater(len(FILTERS.programs[seccomp.PROGRAM]),
                           len(FILTERS.programs[seccomp.TOOL]))

    def test_an_unknown_profile_is_an_error(self):
        with self.assertRaises(ValueError):
            seccomp.compile_filter("everything")


class MissingLibraryTest(unittest.TestCase):
    def test_without_libseccomp_there_is_no_filter_and_the_reason_says_so(self):
        seccomp.filters.cache_clear()
        try:
            with unittest.mock.patch.object(seccomp, "_library",
                                            side_effect=OSError(errno.ENOENT, "not found")):
                found = seccomp.filters()
            self.assertFalse(found.available)
            self.assertIn("without a system-call filter", found.why)
            self.assertIsNone(found.programs.get(seccomp.PROGRAM))
        finally:
            seccomp.filters.cache_clear()


if __name__ == "__main__":
    unittest.main()
