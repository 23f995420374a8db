"""The integrity report: identical submissions after normalising, copies of the reference or
the skeleton, and the similarity ranking from similarity-tester (skipped without it)."""

from __future__ import annotations

import shutil
import tempfile
import unittest
import unittest.mock
from pathlib import Path

from grader.batch import integrity
from grader.paths import ROOT

REL = "labs/01_warp_sizing/warp_sizing.cu"
SKELETON = (ROOT / REL).read_text()
SOLUTION_PATH = ROOT / "solutions" / "01_warp_sizing" / "warp_sizing.cu"
OWN = """#include <cstdio>
// my own code
static int helper(int a, int b) { int s = 0; for (int i = a; i < b; ++i) s += i * i; return s; }
int main() { printf("%d\\n", helper(1, 10)); return 0; }
"""


def _subs(**texts):
    return {student: {REL: text} for student, text in texts.items()}


class CompareTest(unittest.TestCase):
    def test_lab_sources(self):
        reference, skeleton = integrity.lab_sources(ROOT, "01_warp_sizing", [REL])
        self.assertEqual(skeleton, {REL: SKELETON})
        self.assertEqual(reference[REL] is None, not SOLUTION_PATH.is_file())

    def test_normalise_ignores_comments_layout_and_line_ends(self):
        a = "int x = 1; // one\n\n/* block\n comment */  int   y = \"//not a comment\";\n"
        b = "int x = 1;\r\n    int y = \"//not a comment\";   \r\n"
        self.assertEqual(integrity.normalise(a), integrity.normalise(b))
        self.assertIn("//not a comment", integrity.normalise(a))
        self.assertNotEqual(integrity.normalise("int x = 1;"), integrity.normalise("int x=2;"))

    def test_groups_reference_and_skeleton(self):
        ref = {REL: "int solved = 42; // the reference\n"}
        skel = {REL: SKELETON}
        subs = _subs(ann=OWN, ben=OWN.replace("// my own code", "// copied"), cat=SKELETON,
                     dan="int solved = 42;\n", eve=None, fay="int other;\n")
        r = integrity.compare("01_warp_sizing", subs, ref, skel)
        self.assertEqual(r.identical, [["ann", "ben"]])
        self.assertEqual(r.reference, ["dan"])
        self.assertEqual(r.skeleton, ["cat"])
        self.assertEqual(r.missing, ["eve"])
        text = integrity.markdown([r])
        self.assertIn("- Identical submissions: ann, ben", text)
        self.assertIn("- Equal to the reference solution: dan", text)
        self.assertIn("- Equal to the untouched skeleton: cat", text)

    def test_read_files(self):
        tmp = Path(tempfile.mkdtemp(prefix="cml-integrity-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        (tmp / REL).parent.mkdir(parents=True)
        (tmp / REL).write_text("x")
        self.assertEqual(integrity.read_files(tmp, [REL, "labs/nope.cu"]),
                         {REL: "x", "labs/nope.cu": None})

    def test_without_the_tool_the_report_says_so(self):
        with unittest.mock.patch.object(integrity, "sim_tool", return_value=None):
            r = integrity.lab_report("01", _subs(ann=OWN, ben=SKELETON))
        self.assertIn("similarity-tester is not installed", r.sim_note)
        self.assertIn("no similarity ranking", integrity.markdown([r]))


@unittest.skipUnless(integrity.sim_tool(), "similarity-tester (sim_c++) is not installed: "
                                           "apt-get install similarity-tester")
class SimTest(unittest.TestCase):
    def test_a_renamed_copy_ranks_first(self):
        if not SOLUTION_PATH.is_file():
            self.skipTest("solutions/ is not here (a student copy)")
        solution = SOLUTION_PATH.read_text()
        renamed = solution.replace("threads", "nthr").replace("warp", "wp")
        subs = _subs(ann=solution, ben=renamed, cat=OWN, dan=SKELETON)
        ranking = integrity.sim_ranking({s: f[REL] for s, f in subs.items()}, min_percent=1)
        self.assertEqual(ranking[0][:2], ("ann", "ben"))
        self.assertGreaterEqual(ranking[0][2], 90)
        self.assertFalse(any({"cat"} & {a, b} and p > 50 for a, b, p in ranking), ranking)
        r = integrity.lab_report("01_warp_sizing", subs, {REL: solution}, {REL: SKELETON})
        self.assertEqual(r.sim_note, "")
        pairs = {(a, b) for a, b, _ in r.ranking}
        self.assertIn(("_reference", "ann"), pairs)
        self.assertIn("| ann – ben |", integrity.markdown([r]))


if __name__ == "__main__":
    unittest.main()
