"""tools/pr_latency.py, the latency from a student's push to the course's comment, run as a
course would run it on a machine without a GPU: `--labs 01 --no-gpu` (lab 01 is the
cheapest to grade). Its table has every row, in order, with figures labelled "host parts
only"; the comment it read back from the fake API is the course's one comment on the
pull request it pushed, naming that pull request's head commit and no folder of this
machine; without a GPU the grade job as written fails with --require-gpu's status."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from grader.course import student_prs
from grader.paths import ROOT
from grader.tests import local_actions, needs
from grader.tests.fake_github import git

LAB = "01_warp_sizing"
TOOL = ROOT / "tools" / "pr_latency.py"
WORKFLOW = ROOT / ".github" / "workflows" / "grade-student-prs.yml"
WHY = needs.missing(needs.BUILD_TOOLS + ("bwrap", "git"), solutions_of=LAB)
SECONDS = re.compile(r"^(\d+\.\d), host parts only$")


@unittest.skipIf(WHY, f"the tool grades lab 01's reference; missing here: {WHY}")
@unittest.skipUnless(WORKFLOW.is_file(), "the course's workflow (a student copy has none)")
class HostPartsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = Path(tempfile.mkdtemp(prefix="cml-pr-latency-test-"))
        argv = [sys.executable, str(TOOL), "--labs", "01", "--no-gpu", "--out", str(cls.out)]
        if needs.shared_cache():  # the suite's reference cache: lab 01's built once a run
            argv.append("--warm-cache")
        cls.proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900,
                                  stdin=subprocess.DEVNULL)
        facts = cls.out / "latency.json"
        cls.facts = json.loads(facts.read_text()) if facts.is_file() else {}
        comments = cls.out / "comments.json"
        cls.comments = json.loads(comments.read_text()) if comments.is_file() else []
        cls.doc = local_actions.load_workflow(WORKFLOW)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.proc.returncode, 0,
                         self.proc.stdout[-4000:] + self.proc.stderr[-4000:])

    def rows(self) -> dict[str, str]:
        return dict(self.facts["rows"])

    def seconds(self, key: str) -> float:
        match = SECONDS.match(self.rows()[key])
        assert match is not None, f"{key}: {self.rows()[key]}"
        return float(match[1])

    def test_the_table(self):
        keys = [key for key, _ in self.facts["rows"]]
        expected = ["fetch job, ubuntu-latest (s)", "grade job, [self-hosted, linux, gpu] (s)",
                    "  of which the grade step (s)", "comment job, ubuntu-latest (s)",
                    "push to comment (s)", "comment", "headline", "device", "schedule"]
        if self.facts["device"] == "no GPU":
            expected.append("grade job as written")
        self.assertEqual(keys, expected)
        width = max(map(len, keys))
        printed = self.proc.stdout.split("\n\n", 1)[1]  # the table, after the progress
        for key, value in self.facts["rows"]:
            self.assertIn(f"  {key:<{width}}  {value}\n", printed)
        rows = self.rows()
        self.assertRegex(rows["fetch job, ubuntu-latest (s)"], r"^\d+\.\d$")
        grade_job, grade_step, total = (self.seconds(key) for key in (
            expected[1], expected[2], "push to comment (s)"))
        jobs = sum(job["seconds"] for job in self.facts["jobs"].values())
        self.assertLessEqual(grade_step, grade_job)
        self.assertGreater(grade_step, 1.0)  # a build and the host tests ran
        self.assertTrue(grade_job <= total <= jobs + 10, (grade_job, total, jobs))
        self.assertEqual(self.facts["device"], rows["device"])
        cron = self.doc["on"]["schedule"][0]["cron"]  # the workflow's own
        self.assertTrue(rows["schedule"].startswith(f"cron {cron!r}: up to "), rows["schedule"])
        if "grade job as written" in rows:
            self.assertTrue(rows["grade job as written"].startswith(
                "FAILS (exit status 3): no usable GPU here"), rows["grade job as written"])

    def test_the_comment_went_to_the_pull_request_and_names_its_head(self):
        settings = self.doc["env"]
        repo = f"{settings['STUDENT_ORG']}/{settings['STUDENT_PREFIX']}alice"
        head = git(self.out / "student" / "bare.git", "rev-parse", "refs/pull/1/head").strip()
        self.assertEqual((self.facts["pull_request"], self.facts["head_sha"]), (f"{repo}#1", head))
        self.assertEqual([c["user"]["login"] for c in self.comments], [settings["COMMENTER"]])
        body = self.comments[0]["body"]
        self.assertIn(student_prs.HEAD_MARKER.format(sha=head), body)
        self.assertIn(f"https://github.com/{repo}/pull/1 at {head[:12]}", body)
        self.assertNotIn(str(self.out), body)
        headline = self.rows()["headline"]
        self.assertEqual(headline, self.facts["headline"])
        self.assertIn(f"\n{headline}\n", body)
        self.assertRegex(headline, r"^## CUDA Memory Labs: [\d.]+ / 100 points, host parts only")
        self.assertEqual(self.rows()["comment"],
                         f"on {repo}#1 by {settings['COMMENTER']}, names head {head[:12]}")


if __name__ == "__main__":
    unittest.main()
