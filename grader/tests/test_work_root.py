"""The local batch's work folder when the grader is root and --out is closed to others:
student code runs as 'nobody', which must still reach the build folders."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from pathlib import Path

from grader import batch, sandbox


@unittest.skipUnless(os.geteuid() == 0, "only root runs student code as another user")
class WorkRootTest(unittest.TestCase):
    def test_a_closed_out_folder_gets_a_work_folder_nobody_can_reach(self):
        closed = Path(tempfile.mkdtemp(prefix="cml-closed-"))  # 0700, as mktemp -d makes
        self.addCleanup(shutil.rmtree, closed, True)
        out = closed / "out"
        out.mkdir()
        root = batch.work_root(out)
        self.addCleanup(shutil.rmtree, root, True)
        self.assertFalse(root.is_relative_to(closed))
        self.assertIsNone(sandbox.reachable_by_others(root),
                          f"{root} is closed to the user that runs student code")

    def test_an_open_out_folder_keeps_its_work_inside(self):
        open_ = Path(tempfile.mkdtemp(prefix="cml-open-"))
        open_.chmod(0o755)
        self.addCleanup(shutil.rmtree, open_, True)
        (open_ / "out").mkdir()  # the plan is saved there first
        self.assertEqual(batch.work_root(open_ / "out"), open_ / "out" / ".work")


if __name__ == "__main__":
    unittest.main()
