"""No-GPU feedback in the terminal table and the Markdown summary: tests that were not run
read "need a GPU", never as failures; the lab says how much was gradable here and how much
needs a GPU; each part's line appears once; reported-only metrics are neutral."""

from __future__ import annotations

import unittest

from grader.exports import terminal_table, to_markdown
from grader.tests.test_exports import fixtures


class NoGpuFeedbackTest(unittest.TestCase):
    def setUp(self):
        self.result = fixtures()["no_gpu"]

    def test_terminal(self):
        text = terminal_table(self.result, color=False)
        self.assertIn("1 passed, 1 failed, 1 need a GPU", text)
        self.assertIn("15/25 gradable here, 75 need a GPU", text)
        self.assertNotIn("/3 passed", text)
        self.assertNotIn("more)", text)
        # every part named once
        for part in self.result.labs[0].parts:
            if part.max_points > 0 and part.points < part.max_points:
                self.assertEqual(text.count(part.name), 1, part.name)

    def test_a_reported_only_metric_is_not_waiting_for_a_gpu(self):
        from grader.result import PartResult
        self.result.labs[0].parts.append(PartResult(
            "metric", "Requests per naive request", "not_graded", 0.0, 0.0,
            "Not graded: no CUDA device, so this metric part was not run."))
        text = terminal_table(self.result, color=False)
        self.assertNotIn("Requests per naive request", text)

    def test_markdown(self):
        text = to_markdown(self.result)
        self.assertIn("| 1 passed, 1 failed, 1 need a GPU |", text)
        self.assertIn("15/25 gradable here, 75 need a GPU", text)
        self.assertNotIn("more)", text)
        self.assertNotIn("not run: not run", text)


class ReportedOnlyTest(unittest.TestCase):
    def test_neutral(self):
        result = fixtures()["graded"]
        table = terminal_table(result, color=True)
        line = next(ln for ln in table.splitlines() if "Global load requests" in ln)
        self.assertNotIn("\033[31m", line)  # no red
        self.assertIn("reported", line)
        md = to_markdown(result)
        row = next(ln for ln in md.splitlines() if "Global load requests" in ln)
        self.assertNotIn("❌", row)
        self.assertIn("reported, not scored", row)


if __name__ == "__main__":
    unittest.main()
