"""Deadlines: extensions, the last commit before the deadline graded from `git archive`
(never the working tree), the late policies, on temporary git repositories."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import unittest
from datetime import datetime, timedelta, timezone
from pathlib import Path

from grader.batch import deadlines as dl

REL = "labs/01_warp_sizing/warp_sizing.cu"
UTC = timezone.utc


def _commit(repo: Path, text: str, when: str) -> None:
    (repo / REL).parent.mkdir(parents=True, exist_ok=True)
    (repo / REL).write_text(text)
    env = dict(os.environ, GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when,
               GIT_AUTHOR_NAME="s", GIT_AUTHOR_EMAIL="s@x", GIT_COMMITTER_NAME="s",
               GIT_COMMITTER_EMAIL="s@x")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", text], check=True, env=env)


@unittest.skipUnless(shutil.which("git"), "git is not installed")
class GitTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-deadline-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.repo = self.tmp / "ann"
        self.repo.mkdir()
        subprocess.run(["git", "init", "-q", str(self.repo)], check=True)
        _commit(self.repo, "v1", "2026-03-01T10:00:00+00:00")
        _commit(self.repo, "v2", "2026-03-01T22:00:00+00:00")
        _commit(self.repo, "v3 late", "2026-03-03T01:00:00+00:00")
        (self.repo / REL).write_text("uncommitted edit")
        self.deadline = dl.parse_time("2026-03-01T23:59:00+00:00")

    def test_the_last_commit_before_the_deadline_is_graded_not_the_working_tree(self):
        pinned = dl.pin_submission(self.repo, self.tmp / "graded", self.deadline)
        self.assertEqual((self.tmp / "graded" / REL).read_text(), "v2")
        self.assertEqual(pinned.path, self.tmp / "graded")
        v2 = subprocess.run(["git", "-C", str(self.repo), "rev-parse", "HEAD~1"],
                            capture_output=True, text=True).stdout.strip()
        self.assertEqual(pinned.sha, v2)
        self.assertEqual(pinned.commit_time, "2026-03-01T22:00:00+00:00")
        self.assertEqual(pinned.late.label, "on time (1 later commit(s) ignored)")
        self.assertEqual(pinned.late.factor, 1.0)

    def test_no_deadline_grades_the_newest_commit_without_the_uncommitted_edit(self):
        pinned = dl.pin_submission(self.repo, self.tmp / "g", None)
        self.assertEqual((self.tmp / "g" / REL).read_text(), "v3 late")
        self.assertEqual(pinned.late.label, "")

    def test_a_policy_that_accepts_late_work_grades_the_newest_with_its_penalty(self):
        pinned = dl.pin_submission(self.repo, self.tmp / "g", self.deadline,
                                   dl.LatePolicy.parse("per-day:10"))
        self.assertEqual((self.tmp / "g" / REL).read_text(), "v3 late")
        self.assertEqual(pinned.late.factor, 0.8)  # 1.04 days late: two started days
        self.assertIn("late 1.04 days (-20%)", pinned.late.label)
        zero = dl.pin_submission(self.repo, self.tmp / "z", self.deadline,
                                 dl.LatePolicy.parse("zero"))
        self.assertEqual(zero.late.factor, 0.0)

    def test_an_extension_moves_the_deadline(self):
        when = dl.deadline_for("ann", self.deadline, {"ann": "2026-03-04"})
        pinned = dl.pin_submission(self.repo, self.tmp / "g", when)
        self.assertEqual((self.tmp / "g" / REL).read_text(), "v3 late")
        self.assertEqual(pinned.commit_time, "2026-03-03T01:00:00+00:00")
        self.assertEqual(pinned.late.factor, 1.0)  # on time by the extended deadline
        self.assertEqual(dl.deadline_for("ben", self.deadline, {"ann": "2026-03-04"}),
                         self.deadline)
        self.assertIsNone(dl.deadline_for("ben", None))

    def test_nothing_before_the_deadline(self):
        pinned = dl.pin_submission(self.repo, self.tmp / "g", dl.parse_time("2026-02-01"))
        self.assertIsNone(pinned.sha)
        self.assertIn("no commit before the deadline", pinned.error)
        self.assertEqual(pinned.late.factor, 0.0)
        self.assertFalse((self.tmp / "g").exists())

    def test_a_folder_is_graded_as_it_is(self):
        folder = self.tmp / "plain"
        (folder / "labs").mkdir(parents=True)
        pinned = dl.pin_submission(folder, self.tmp / "g", self.deadline)
        self.assertEqual((pinned.path, pinned.sha, pinned.late.label),
                         (folder, None, "no commit time"))


class PolicyTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(dl.LatePolicy.parse(None).kind, "cutoff")
        self.assertEqual(dl.LatePolicy.parse("per-day:5:3"), dl.LatePolicy("per-day", 5, 3))
        for bad in ("weekly", "per-day:200", "per-day:x"):
            with self.assertRaises(dl.DeadlineError):
                dl.LatePolicy.parse(bad)
        with self.assertRaises(dl.DeadlineError):
            dl.parse_time("next tuesday")
        self.assertEqual(dl.parse_time("2026-03-01").hour, 23)
        self.assertIsNotNone(dl.parse_time("2026-03-01T10:00").tzinfo)

    def test_lateness(self):
        deadline = datetime(2026, 3, 1, 12, tzinfo=UTC)
        policy = dl.LatePolicy.parse("per-day:25:2")
        self.assertEqual(dl.lateness(deadline, deadline, policy).label, "on time")
        half = dl.lateness(deadline + timedelta(hours=12), deadline, policy)
        self.assertEqual((half.factor, half.label), (0.75, "late 0.50 days (-25%)"))
        over = dl.lateness(deadline + timedelta(days=2, hours=1), deadline, policy)
        self.assertEqual(over.factor, 0.0)
        self.assertIn("more than 2", over.label)
        self.assertEqual(dl.lateness(deadline + timedelta(days=9), deadline,
                                     dl.LatePolicy("accept")).factor, 1.0)
        self.assertEqual(dl.lateness(None, None, policy).label, "")


class ResultLatenessTest(unittest.TestCase):
    """A result records lateness from the commit's days late and the factor, never from the
    label's words."""

    def result(self):
        from grader.result import GradeResult
        r = GradeResult("sub", 7, "2026-01-01T00:00:00+00:00", "0", None, {})
        r.points = 50.0
        return r

    def test_an_accepted_late_commit_is_recorded_without_a_penalty(self):
        r = self.result()
        r.set_late(1.0, "1.20 days after the deadline (accepted)", days=1.2)
        self.assertEqual(r.late["factor"], 1.0)
        self.assertEqual(r.late["points"], 50.0)

    def test_on_time_is_not_recorded_whatever_the_label_says(self):
        r = self.result()
        r.set_late(1.0, "late-night commit, on time", days=0.0)
        self.assertEqual(r.late, {})

    def test_a_penalty_is_recorded(self):
        r = self.result()
        r.set_late(0.8, "late 1.20 days (-20%)", days=1.2)
        self.assertEqual(r.late["points"], 40.0)


if __name__ == "__main__":
    unittest.main()
