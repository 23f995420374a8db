"""The wall between a tool's log and the program the tool watches (grader/confine.py).

A stand-in for compute-sanitizer or ncu holds its log (a pipe the grader reads), opens it a
second time as a tool does for `--log-file /dev/fd/N`, starts the program and, once that has
ended, writes its own summary. The program tries what a submission tried: write into the
inherited descriptors, reopen the tool's through /proc, signal the tool. Without the wall
each succeeds (the first test shows the stand-in can tell); through grader/confine.py none
does, and the log holds the tool's words alone. Where Linux has no Landlock, the /proc and
signal doors are checked as open, as confine.what_it_walls says."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

from grader import bwrap, channel, confine, sandbox

ABI = confine.landlock_abi()

# The tool stand-in: argv = [log fd, program...]; "{M}" in the program's arguments becomes the
# descriptor it opened itself, "{TOOL}" its pid.
TOOL = textwrap.dedent("""\
    import os, subprocess, sys
    log = int(sys.argv[1])
    mine = os.open(f"/dev/fd/{log}", os.O_WRONLY)
    os.set_inheritable(mine, True)  # as a careless tool might leave it
    program = [a.replace("{M}", str(mine)).replace("{TOOL}", str(os.getpid()))
               for a in sys.argv[2:]]
    code = subprocess.run(program, close_fds=False).returncode
    os.write(mine, f"TOOL SUMMARY: program exited {code}\\n".encode())
""")

# The program: tries each door, says which opened, on its own stdout.
PROGRAM = textwrap.dedent("""\
    import os, signal, sys
    log, mine, tool = (int(a) for a in sys.argv[1:4])
    def attempt(name, door):
        try:
            door()
            print(name, "open", sep="\t")
        except OSError as err:
            print(name, f"shut ({err.strerror})", sep="\t")
    attempt("inherited", lambda: os.write(log, b"FORGED SUMMARY\\n"))
    attempt("tool's copy", lambda: os.write(mine, b"FORGED SUMMARY\\n"))
    def through_proc():
        fd = os.open(f"/proc/{tool}/fd/{mine}", os.O_WRONLY)
        os.write(fd, b"FORGED SUMMARY\\n")
    attempt("through /proc", through_proc)
    attempt("signal", lambda: os.kill(tool, 0))
""")


def doors(output: str) -> dict[str, bool]:
    """What the program said: door -> whether it opened."""
    said = dict(line.split("\t", 1) for line in output.splitlines() if "\t" in line)
    return {door: state == "open" for door, state in said.items()}


class WallTest(unittest.TestCase):
    """The doors, with the tool and the program run as the grader's own processes."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.dir.chmod(0o755)
        (self.dir / "tool.py").write_text(TOOL)
        (self.dir / "program.py").write_text(PROGRAM)

    def tearDown(self):
        self.tmp.cleanup()

    def run_tool(self, walled: bool) -> tuple[dict[str, bool], str]:
        """(door -> opened, the log as the grader read it)."""
        with channel.Channel() as log:
            program = [sys.executable, str(self.dir / "program.py"), str(log.write_fd), "{M}",
                       "{TOOL}"]
            if walled:
                program = confine.command(program, (log.write_fd,))
            proc = subprocess.run([sys.executable, str(self.dir / "tool.py"),
                                   str(log.write_fd), *program], pass_fds=[log.write_fd],
                                  capture_output=True, text=True, timeout=60)
            log.close_write()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return doors(proc.stdout), log.text()

    def test_without_the_wall_every_door_opens(self):
        doors, text = self.run_tool(walled=False)
        self.assertEqual(doors, {"inherited": True, "tool's copy": True, "through /proc": True,
                                 "signal": True})
        self.assertIn("FORGED SUMMARY", text)

    def test_through_the_wall_the_log_is_the_tools_alone(self):
        doors, text = self.run_tool(walled=True)
        self.assertFalse(doors["inherited"])
        self.assertFalse(doors["tool's copy"])
        self.assertEqual(doors["through /proc"], ABI == 0)
        self.assertEqual(doors["signal"], ABI < 6)
        self.assertNotIn("FORGED", text)
        self.assertEqual(text, "TOOL SUMMARY: program exited 0\n")

class LauncherTest(unittest.TestCase):
    """confine.py as a launcher: the program gets what it was given."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_program_keeps_its_own_descriptors_and_arguments(self):
        with channel.Channel() as log, tempfile.TemporaryFile() as other:
            os.set_inheritable(other.fileno(), True)
            out = subprocess.run(
                confine.command([sys.executable, "-c", "import os, sys; "
                                 "os.write(int(sys.argv[1]), b'kept'); print(sys.argv[2])",
                                 str(other.fileno()), "two words"], (log.write_fd,)),
                pass_fds=[log.write_fd, other.fileno()], capture_output=True, text=True)
            log.close_write()
            other.seek(0)
            self.assertEqual(other.read(), b"kept")
        self.assertEqual((out.returncode, out.stdout), (0, "two words\n"))

    def test_a_program_that_cannot_start_is_named(self):
        out = subprocess.run(confine.command([str(self.dir / "missing")], ()),
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 127)
        self.assertIn("could not start", out.stderr)

    @unittest.skipUnless(ABI, "no Landlock in this kernel: the /proc and signal doors stay "
                              "open here (confine.what_it_walls)")
    def test_the_record_names_the_abi(self):
        self.assertIn(f"Landlock ABI {ABI}", confine.what_it_walls(ABI))


@unittest.skipUnless(sandbox.isolation().jailed,
                     f"no jail on this machine: {sandbox.isolation().why}")
class JailedWallTest(WallTest):
    """The same doors, with the tool and the program in the run jail as the unprivileged
    user, under the tools' system-call filter, as the grader runs them."""

    def run_tool(self, walled: bool) -> tuple[dict[str, bool], str]:
        who = sandbox.unprivileged_identity()
        run_dir = sandbox.make_shared_dir(self.dir / "run", who)
        jail = bwrap.Jail().add(self.dir / "tool.py", "/cml/bin/tool.py") \
            .add(self.dir / "program.py", "/cml/bin/program.py") \
            .add(confine.SCRIPT, confine.INSIDE)
        python = confine.python()
        with channel.Channel() as log:
            program = [python, str(self.dir / "program.py"), str(log.write_fd), "{M}",
                       "{TOOL}"]
            if walled:
                program = confine.command(program, (log.write_fd,))
            out = sandbox.run([python, str(self.dir / "tool.py"), str(log.write_fd), *program],
                              cwd=run_dir, timeout=60, env=sandbox.scrubbed_env(run_dir),
                              identity=who, jail=jail, fresh=True, channels=[log],
                              syscalls="tool")
        self.assertEqual(out.returncode, 0, out.output_tail)
        return doors(out.output_tail), log.text()


if __name__ == "__main__":
    unittest.main()
