"""Running untrusted processes: timeouts kill the group, the environment is scrubbed,
root drops to an unprivileged user."""

import os
import sys
import tempfile
import time
import unittest
from pathlib import Path

from grader import sandbox


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


if __name__ == "__main__":
    unittest.main()
