"""Running untrusted processes: timeouts kill the group, the environment is scrubbed,
root drops to an unprivileged user, documents come through pipes the grader holds, each
process has a fresh folder of its own, and the jail refuses the system calls no lab needs."""

import errno
import os
import sys
import tempfile
import time
import unittest
from pathlib import Path

from grader import bwrap, channel, sandbox, seccomp

# A Python the unprivileged user and the jail can run (the system's; one in root's home is
# closed to them).
SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/bin/python3") if os.path.exists(p)),
                     None)
PYTHON = SYSTEM_PYTHON or sys.executable


class SandboxTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.env = sandbox.scrubbed_env(self.dir)

    def tearDown(self):
        self.tmp.cleanup()

    def test_timeout_kills_the_whole_process_group(self):
        marker = self.dir / "child-alive"
        # The child leaves the process group, as ninja's compile jobs do.
        script = f"(sleep 3; touch {marker}) & sleep 60"
        start = time.monotonic()
        out = sandbox.run(["/bin/sh", "-c", script], cwd=self.dir, timeout=1, env=self.env)
        self.assertTrue(out.timed_out)
        self.assertIsNone(out.returncode)
        self.assertLess(time.monotonic() - start, 10)
        time.sleep(3.5)
        self.assertFalse(marker.exists(), "a child outlived the timeout")
        self.assertIn("timed out", out.describe())

    def test_environment_is_scrubbed(self):
        os.environ["CML_SECRET_TOKEN"] = "x"
        try:
            env = sandbox.scrubbed_env(self.dir)
        finally:
            del os.environ["CML_SECRET_TOKEN"]
        self.assertNotIn("CML_SECRET_TOKEN", env)
        self.assertEqual(env["HOME"], str(self.dir))
        self.assertIn("PATH", env)

    def test_crash_is_reported_with_its_signal(self):
        out = sandbox.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), "
                           "signal.SIGSEGV)"], cwd=self.dir, timeout=30, env=self.env)
        self.assertEqual(out.describe(), "crashed (SIGSEGV)")

    def test_output_is_kept_as_a_tail_only(self):
        out = sandbox.run([sys.executable, "-c", "print('x' * 100000); print('end')"],
                          cwd=self.dir, timeout=30, env=self.env)
        self.assertLessEqual(len(out.output_tail), sandbox.TAIL_BYTES)
        self.assertTrue(out.output_tail.rstrip().endswith("end"))

    @unittest.skipUnless(os.geteuid() == 0, "only root drops privileges")
    def test_root_runs_student_code_as_an_unprivileged_user(self):
        who = sandbox.unprivileged_identity()
        self.assertIsNotNone(who)
        secret = self.dir / "secret"
        secret.write_text("reference")
        secret.chmod(0o600)
        run_dir = sandbox.make_shared_dir(self.dir / "run", who)
        self.dir.chmod(0o755)
        out = sandbox.run(["/bin/sh", "-c", f"id -u; cat {secret}"], cwd=run_dir, timeout=30,
                          env=sandbox.scrubbed_env(run_dir), identity=who)
        self.assertIn(str(who.uid), out.output_tail)
        self.assertIn("Permission denied", out.output_tail)
        self.assertNotIn("reference", out.output_tail)


    def test_a_document_comes_through_the_grader_pipe_and_nothing_is_left_on_disk(self):
        self.dir.chmod(0o711)  # the unprivileged user's folder is made in it
        with channel.Channel() as doc:
            out = sandbox.run([PYTHON, "-c", "import sys; open(sys.argv[1], 'w')"
                               ".write('<doc/>')", doc.path], cwd=self.dir, timeout=30,
                              env=self.env, identity=sandbox.unprivileged_identity(),
                              fresh=True, channels=[doc])
        self.assertEqual(out.returncode, 0, out.output_tail)
        self.assertEqual(doc.text(), "<doc/>")
        self.assertFalse(doc.oversized)
        self.assertEqual(list(self.dir.iterdir()), [])

    @unittest.skipUnless(os.geteuid() == 0, "only root drops privileges")
    def test_the_process_cannot_reopen_the_pipe_to_read_back_and_drain_its_document(self):
        self.dir.chmod(0o711)
        code = ("import os, sys\n"
                "open(sys.argv[1], 'w').write('<doc/>')\n"
                "for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_RDWR | os.O_NONBLOCK):\n"
                "    try:\n"
                "        os.read(os.open(sys.argv[1], flags), 100); print('drained')\n"
                "    except OSError as err:\n"
                "        print('refused', err.errno)\n")
        with channel.Channel() as doc:
            out = sandbox.run([PYTHON, "-c", code, doc.path], cwd=self.dir, timeout=30,
                              env=self.env, identity=sandbox.unprivileged_identity(),
                              fresh=True, channels=[doc])
        self.assertEqual(out.returncode, 0, out.output_tail)
        self.assertNotIn("drained", out.output_tail)
        self.assertEqual(out.output_tail.count("refused 13"), 2, out.output_tail)  # EACCES
        self.assertEqual(doc.text(), "<doc/>")

    def test_a_document_larger_than_the_cap_is_said_and_never_blocks_the_writer(self):
        with channel.Channel(limit=1000) as doc:
            out = sandbox.run([sys.executable, "-c", "import sys; f = open(sys.argv[1], 'w'); "
                               "f.write('x' * (4 << 20)); f.close(); print('wrote')",
                               doc.path], cwd=self.dir, timeout=30, env=self.env,
                              channels=[doc])
        self.assertFalse(out.timed_out)
        self.assertIn("wrote", out.output_tail)
        self.assertTrue(doc.oversized)
        self.assertEqual(len(doc.data), 1000)

    def test_each_process_gets_a_fresh_folder_as_cwd_and_home(self):
        code = ("import os; print(sorted(os.listdir('.')), os.getcwd() == os.environ['HOME']); "
                "open('marker', 'w').write('x'); "
                "open(os.path.join(os.environ['HOME'], 'home-marker'), 'w').write('x')")
        seen = []
        self.dir.chmod(0o711)
        for _ in range(2):
            out = sandbox.run([PYTHON, "-c", code], cwd=self.dir, timeout=30,
                              env=self.env, identity=sandbox.unprivileged_identity(),
                              fresh=True)
            self.assertEqual(out.returncode, 0, out.output_tail)
            seen.append(out.output_tail.strip())
        self.assertEqual(seen, ["[] True", "[] True"])  # the second saw no marker
        self.assertEqual(list(self.dir.iterdir()), [])  # each folder was removed after


JAILED = sandbox.isolation().jailed


@unittest.skipUnless(JAILED, f"no jail on this machine: {sandbox.isolation().why}")
class JailTest(unittest.TestCase):
    """What jailed code can see and do. Each test names a door a submission tried."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.dir.chmod(0o755)
        self.who = sandbox.unprivileged_identity()
        self.run_dir = sandbox.make_shared_dir(self.dir / "run", self.who)
        self.secret = self.dir / "solutions" / "answer.cu"
        self.secret.parent.mkdir()
        self.secret.write_text("the reference")
        self.jail = bwrap.Jail().add(self.run_dir, "/cml/run", writable=True)
        self.env = sandbox.scrubbed_env(self.run_dir)

    def tearDown(self):
        self.tmp.cleanup()

    def sh(self, script, **kw):
        return sandbox.run(["/bin/sh", "-c", script], cwd=self.run_dir, timeout=30,
                           env=self.env, identity=self.who, jail=self.jail, **kw)

    def test_the_checkout_and_the_grader_folders_do_not_exist(self):
        here = Path(__file__).resolve().parents[2]  # the grader's own checkout
        out = self.sh(f"ls {here} {self.secret} {self.dir} /root /home /work 2>&1; "
                      "cat /etc/passwd 2>&1; echo done")
        self.assertIn("done", out.output_tail)
        self.assertNotIn("the reference", out.output_tail)
        for name in ("grader", "answer.cu"):
            self.assertNotIn(name + "\n", out.output_tail)
        self.assertIn("No such file", out.output_tail)

    def test_paths_are_rewritten_both_ways(self):
        # Arguments and the working folder name host paths; the process sees /cml/run, and
        # what it prints comes back with the host's paths.
        out = sandbox.run(["/bin/sh", "-c", 'pwd; echo x > "$1"; cat /cml/run/y', "sh",
                           str(self.run_dir / "y")], cwd=self.run_dir, timeout=30,
                          env=self.env, identity=self.who, jail=self.jail)
        self.assertEqual(out.returncode, 0, out.output_tail)
        self.assertIn(str(self.run_dir), out.output_tail)
        self.assertNotIn("/cml/run", out.output_tail)
        self.assertEqual((self.run_dir / "y").read_text(), "x\n")

    def test_the_system_is_read_only_and_tmp_is_private(self):
        out = self.sh("touch /usr/x 2>&1; touch /cml/x 2>&1; echo hi > /tmp/t && cat /tmp/t")
        self.assertIn("Read-only", out.output_tail)
        self.assertIn("hi", out.output_tail)
        self.assertFalse(Path("/tmp/t").exists() and Path("/tmp/t").read_text() == "hi\n")

    def test_there_is_no_network(self):
        code = ("import socket\ns = socket.socket()\ntry:\n s.connect(('127.0.0.1', 22))\n"
                "except OSError as e:\n print('refused', e.errno)\n"
                "print([n for n in socket.if_nameindex()])")
        if not SYSTEM_PYTHON:
            self.skipTest("no system Python to run inside the jail")
        out = sandbox.run([SYSTEM_PYTHON, "-c", code], cwd=self.run_dir, timeout=30,
                          env=self.env, identity=self.who, jail=self.jail)
        self.assertIn("refused", out.output_tail)
        self.assertNotIn("eth", out.output_tail)

    def test_environment_holds_no_secret_of_the_grader(self):
        os.environ["GITHUB_TOKEN"] = "ghs_secret"
        try:
            out = self.sh("env")
        finally:
            del os.environ["GITHUB_TOKEN"]
        self.assertNotIn("ghs_secret", out.output_tail)

    def test_memory_hog_is_stopped(self):
        if not SYSTEM_PYTHON:
            self.skipTest("no system Python to run inside the jail")
        out = sandbox.run([SYSTEM_PYTHON, "-c", "x = bytearray(1 << 30); import time; "
                           "time.sleep(30)"], cwd=self.run_dir, timeout=60, env=self.env,
                          identity=self.who, jail=self.jail, max_rss=256 << 20)
        self.assertIsNotNone(out.killed_for)
        self.assertLess(out.seconds, 20)
        self.assertIn("memory", out.describe())

    def test_a_process_in_a_new_session_dies_with_the_run(self):
        marker = self.run_dir / "alive"
        # The parent returns at once; its child, in a session of its own, would write later.
        out = self.sh(f"setsid sh -c 'sleep 3; touch {marker}' & echo started")
        self.assertEqual(out.returncode, 0, out.output_tail)
        self.assertLess(out.seconds, 3)
        time.sleep(4)
        self.assertFalse(marker.exists(), "a process outlived its jail")

    def test_documents_pass_through_the_jail_and_each_process_has_its_own_folder(self):
        if not SYSTEM_PYTHON:
            self.skipTest("no system Python to run inside the jail")
        code = ("import os, sys; open(sys.argv[1], 'w').write(os.getcwd() + ' ' + "
                "os.environ['HOME'] + ' ' + str(os.listdir('.'))); open('marker', 'w')")
        docs = []
        for _ in range(2):
            with channel.Channel() as doc:
                out = sandbox.run([SYSTEM_PYTHON, "-c", code, doc.path], cwd=self.run_dir,
                                  timeout=30, env=self.env, identity=self.who,
                                  jail=bwrap.Jail(), fresh=True, channels=[doc],
                                  syscalls=seccomp.PROGRAM)
            self.assertEqual(out.returncode, 0, out.output_tail)
            docs.append(doc.text())
        self.assertEqual(docs, [f"{bwrap.WORK_INSIDE} {bwrap.WORK_INSIDE} []"] * 2)
        self.assertEqual(list(self.run_dir.iterdir()), [])

    @unittest.skipUnless(seccomp.filters().available, seccomp.filters().why)
    def test_the_filter_refuses_new_processes_and_network_sockets(self):
        if not SYSTEM_PYTHON:
            self.skipTest("no system Python to run inside the jail")
        code = ("import os, socket, threading\n"
                "def tried(what, call):\n"
                "    try:\n        call()\n        print(what, 'ok')\n"
                "    except OSError as e:\n        print(what, e.errno)\n"
                "def fork():\n    if os.fork() == 0:\n        os._exit(0)\n    os.wait()\n"
                "tried('fork', fork)\n"
                "tried('inet', lambda: socket.socket(socket.AF_INET))\n"
                "tried('unix', lambda: socket.socket(socket.AF_UNIX))\n"
                "t = threading.Thread(target=print, args=('thread ok',)); t.start(); t.join()\n")
        for profile, fork in ((seccomp.PROGRAM, f"fork {errno.EPERM}"), (seccomp.TOOL, "fork ok")):
            out = sandbox.run([SYSTEM_PYTHON, "-c", code], cwd=self.run_dir, timeout=30,
                              env=self.env, identity=self.who, jail=self.jail, fresh=True,
                              syscalls=profile)
            self.assertIn(fork, out.output_tail, profile)
            self.assertIn("unix ok", out.output_tail)
            self.assertIn("thread ok", out.output_tail)
            self.assertIn(f"inet {errno.EPERM}" if profile == seccomp.PROGRAM else "inet ok",
                          out.output_tail)
        self.assertTrue(sandbox.isolation().as_dict()["seccomp"])

    def test_when_bubblewrap_is_off_the_grader_says_so(self):
        sandbox.isolation.cache_clear()
        os.environ["CML_SANDBOX"] = "off"
        try:
            iso = sandbox.isolation()
        finally:
            del os.environ["CML_SANDBOX"]
            sandbox.isolation.cache_clear()
        self.assertFalse(iso.jailed)
        self.assertIn("CML_SANDBOX", iso.why)
        self.assertTrue(sandbox.isolation().jailed)


if __name__ == "__main__":
    unittest.main()
