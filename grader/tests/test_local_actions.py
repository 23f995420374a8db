"""The workflow runner that tools/pr_latency.py stands on (grader/tests/local_actions.py): its
YAML reader reads the shipped workflows as PyYAML does; `if:` and `${{ }}` are decided as
GitHub decides them; a small workflow run on this machine passes step and job outputs,
GITHUB_ENV and artifacts on, skips what its needs and conditions say, and keeps going past a
step that may fail; what it does not simulate it refuses; the schedule's wait is read from
the cron lines."""

from __future__ import annotations

import shutil
import tempfile
import unittest
from pathlib import Path

from grader.paths import ROOT
from grader.tests import local_actions
from grader.tests.local_actions import Unsupported, condition, evaluate, substitute

WORKFLOW_FOLDERS = (".github/workflows", "docs/student/workflows", "grader/tests/data/workflows")
OK = {"success": True, "failure": False, "always": True, "cancelled": False}
FAILED = {"success": False, "failure": True, "always": True, "cancelled": False}


class YamlReaderTest(unittest.TestCase):
    @unittest.skipIf(local_actions.yaml is None, "PyYAML is not installed (Debian: python3-yaml)")
    def test_reads_the_shipped_workflows_as_pyyaml_does(self):
        files = [p for folder in WORKFLOW_FOLDERS for p in sorted((ROOT / folder).glob("*.yml"))]
        self.assertTrue(files)
        for path in files:
            text = path.read_text(encoding="utf-8")
            expected = local_actions.yaml.safe_load(text)
            if True in expected:  # YAML 1.1's `on`
                expected["on"] = expected.pop(True)
            self.assertEqual(local_actions.read_yaml(text), expected, path)

    def test_the_subset(self):
        text = ("# a comment\nname: x  # trailing\non:\n  push:\n  schedule:\n"
                "    - cron: \"*/5 * * * *\"\njobs:\n  a:\n    runs-on: [self-hosted, gpu]\n"
                "    needs:\n    - b\n    steps:\n      - run: |\n          echo 'a # b'\n\n"
                "          echo c\n        continue-on-error: true\n      - uses: x@v1\n"
                "    timeout-minutes: 5\n    permissions: {}\n")
        self.assertEqual(local_actions.read_yaml(text), {
            "name": "x", "on": {"push": None, "schedule": [{"cron": "*/5 * * * *"}]},
            "jobs": {"a": {"runs-on": ["self-hosted", "gpu"], "needs": ["b"],
                           "steps": [{"run": "echo 'a # b'\n\necho c\n",
                                      "continue-on-error": True}, {"uses": "x@v1"}],
                           "timeout-minutes": 5, "permissions": {}}}})
        for text in ("a: &anchor 1\n", "a: {b: 1}\n", "a: 1\n  b: 2\n", "- a\nb: 1\n"):
            with self.assertRaises(ValueError, msg=text):
                local_actions.read_yaml(text)


class ExpressionTest(unittest.TestCase):
    contexts = {"needs": {"fetch": {"outputs": {"jobs": "0"}, "result": "success"}},
                "steps": {"my-step": {"outputs": {"n": "2"}}}, "secrets": {"T": "s3cret"},
                "env": {"A": "x"}}

    def test_conditions(self):
        c = self.contexts
        self.assertFalse(condition("needs.fetch.outputs.jobs != '0'", c, OK))
        self.assertTrue(condition("${{ needs.fetch.outputs.jobs == 0 }}", c, OK))
        self.assertFalse(condition("steps.my-step.outputs.n == '2'", c, FAILED))  # success()
        self.assertTrue(condition("${{ !cancelled() && steps.my-step.outputs.n == '2' }}",
                                  c, FAILED))
        self.assertTrue(condition("always()", c, FAILED))
        self.assertTrue(condition("failure()", c, FAILED))
        self.assertTrue(condition(None, c, OK))
        self.assertFalse(condition(None, c, FAILED))

    def test_values(self):
        c = self.contexts
        self.assertEqual(substitute("t=${{ secrets.T }} ${{ env.a }}${{ secrets.NONE }}.", c),
                         "t=s3cret x.")
        self.assertIs(evaluate("null != '0'", c), False)  # both numbers: 0 and 0
        self.assertIs(evaluate("'ABC' == 'abc'", c), True)
        self.assertEqual(evaluate("'' || 'b'", c), "b")
        self.assertEqual(evaluate("format('{0}/{1}', 'a', 2)", c), "a/2")
        self.assertIs(evaluate("contains('Hello', 'ELL')", c), True)

    def test_what_is_not_simulated_is_refused(self):
        for text in ("hashFiles('x')", "vars_x.y", "needs.*.result", "env.a ==", "1 + 2"):
            with self.assertRaises(Unsupported, msg=text):
                evaluate(text, self.contexts)


class WorkflowRunTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-actions-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.said: list[str] = []

    def run_workflow(self, doc: dict) -> dict[str, local_actions.JobRun]:
        flow = local_actions.Workflow(doc, ROOT, self.tmp, "workflow_dispatch", {},
                                      {"TOKEN": "t0ken"}, {"repository": "o/r",
                                                            "api_url": "http://127.0.0.1:9"},
                                      base_env={"PATH": "/usr/bin:/bin"}, say=self.said.append)
        return flow.run()

    def test_outputs_env_artifacts_and_conditions(self):
        doc = local_actions.read_yaml("""
env:
  WHO: course
jobs:
  first:
    runs-on: ubuntu-latest
    outputs:
      n: ${{ steps.count.outputs.n }}
    steps:
      - id: count
        run: |
          echo "n=3" >> "$GITHUB_OUTPUT"
          echo "LATER=from-env" >> "$GITHUB_ENV"
          mkdir -p out/deep && echo "$WHO ${{ secrets.TOKEN }} $GITHUB_API_URL" > out/deep/f
          touch out/.hidden
      - run: test "$LATER" = from-env && test "$GITHUB_EVENT_NAME" = workflow_dispatch
      - uses: actions/upload-artifact@v4
        with:
          name: folder
          path: out
      - uses: actions/upload-artifact@v4
        with:
          name: one-file
          path: out/deep/f
      - run: exit 4
        continue-on-error: true
      - if: failure()
        run: exit 1
  second:
    needs: first
    if: needs.first.outputs.n == 3
    runs-on: ubuntu-latest
    steps:
      - uses: actions/download-artifact@v4
        with:
          name: folder
          path: ${{ runner.temp }}/got
      - uses: actions/download-artifact@v4
        with:
          name: one-file
      - run: test ! -e "$RUNNER_TEMP/got/.hidden" && test ! -e .hidden
      - run: cat "$RUNNER_TEMP/got/deep/f" f > both && false
      - run: echo never
      - if: always()
        run: echo "${{ job.status }}" > status
  third:
    needs: second
    runs-on: ubuntu-latest
    steps:
      - run: echo never
  fourth:
    needs: [first, second]
    if: ${{ !cancelled() }}
    runs-on: ubuntu-latest
    steps:
      - run: echo "${{ needs.second.result }}" > r
""")
        runs = self.run_workflow(doc)
        self.assertEqual({n: r.result for n, r in runs.items()}, {
            "first": "success", "second": "failure", "third": "skipped", "fourth": "success"})
        first = runs["first"]
        self.assertEqual(first.outputs, {"n": "3"})
        self.assertEqual([(s.outcome, s.conclusion) for s in first.steps][-2:],
                         [("failure", "success"), ("skipped", "skipped")])
        second = runs["second"]
        assert second.folder is not None
        both = (second.folder / "workspace" / "both").read_text()
        self.assertEqual(both, "course t0ken http://127.0.0.1:9\n" * 2)
        self.assertEqual([s.outcome for s in second.steps],
                         ["success", "success", "success", "failure", "skipped", "success"])
        self.assertEqual((second.folder / "workspace" / "status").read_text(), "failure\n")
        assert runs["fourth"].folder is not None
        self.assertEqual((runs["fourth"].folder / "workspace" / "r").read_text(), "failure\n")

    def test_the_checkout_is_this_checkouts_files(self):
        if shutil.which("git") is None or not (ROOT / ".git").exists():
            self.skipTest("needs a git checkout")
        runs = self.run_workflow(local_actions.read_yaml(
            "jobs:\n  a:\n    runs-on: x\n    steps:\n      - uses: actions/checkout@v4\n"
            "      - run: python3 -c 'import grader.paths' && test -f grader/README.md\n"))
        self.assertEqual(runs["a"].result, "success", self.said)

    def test_unknown_actions_are_refused(self):
        with self.assertRaises(Unsupported):
            self.run_workflow(local_actions.read_yaml(
                "jobs:\n  a:\n    runs-on: x\n    steps:\n      - uses: actions/cache@v4\n"))
        with self.assertRaises(Unsupported):
            self.run_workflow(local_actions.read_yaml(
                "jobs:\n  a:\n    runs-on: x\n    strategy:\n      matrix:\n        n: [1]\n"))


class ScheduleTest(unittest.TestCase):
    def wait(self, *crons: str) -> str:
        return local_actions.schedule_wait(
            {"on": {"schedule": [{"cron": c} for c in crons], "workflow_dispatch": None}},
            "the fetch job")

    def test_from_the_cron_lines(self):
        self.assertTrue(self.wait("*/10 * * * *").startswith(
            "cron '*/10 * * * *': up to 10 min wait before the fetch job (5 on average), "))
        self.assertIn("none when started by hand", self.wait("*/10 * * * *"))
        self.assertIn("up to 50 min wait", self.wait("0,50 * * * *"))
        self.assertIn("up to 720 min wait", self.wait("0 0,12 * * *"))
        self.assertIn("up to 30 min wait", self.wait("0 * * * *", "30 * * * *"))
        self.assertIn("on the days it names", self.wait("15 3 * * 1-5"))
        self.assertEqual(local_actions.schedule_wait({"on": "workflow_dispatch"}),
                         "no schedule: started by hand only")


if __name__ == "__main__":
    unittest.main()
