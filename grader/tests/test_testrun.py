"""Listing test cases (Catch2 2 and 3) and salvaging reports cut short by a crash."""

import unittest

from grader.testrun import Case, parse_listing, salvage_report

V2_LISTING = """\
All available test cases:
  The naive kernel loads two floats per multiply-add
      [host][lab04][model]
  A test case whose name is long enough that the console listing of Catch2 wraps
    it onto a second line
      [gpu][lab04]
      [tiled]
  Sizes that are not a multiple of the tile are refused
      [given][host][lab04]
3 test cases
"""

V3_LISTING = """\
<?xml version="1.0" encoding="UTF-8"?>
<MatchingTests>
  <TestCase>
    <Name>The naive kernel loads two floats per multiply-add</Name>
    <ClassName/>
    <Tags>[host][lab04][model]</Tags>
    <SourceInfo><File>t.cpp</File><Line>14</Line></SourceInfo>
  </TestCase>
</MatchingTests>
"""

REPORT_HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<Catch name="t">
  <Group name="t">
    <TestCase name="first" tags="[host]" filename="t.cpp" line="1">
      <OverallResult success="true"/>
    </TestCase>
    <TestCase name="second" tags="[host]" filename="t.cpp" line="9">
"""


class ListingTest(unittest.TestCase):
    def test_catch2_v2_console_listing(self):
        cases = parse_listing(V2_LISTING)
        self.assertEqual(len(cases), 3)
        self.assertEqual(cases[0], Case("The naive kernel loads two floats per multiply-add",
                                        ("host", "lab04", "model")))
        self.assertTrue(cases[1].name.endswith("wraps it onto a second line"))
        self.assertEqual(cases[1].tags, ("gpu", "lab04", "tiled"))
        self.assertTrue(cases[1].matches("[lab04][tiled]"))

    def test_catch2_v3_xml_listing(self):
        cases = parse_listing(V3_LISTING)
        self.assertEqual(cases, [Case("The naive kernel loads two floats per multiply-add",
                                      ("host", "lab04", "model"))])


class SalvageTest(unittest.TestCase):
    def test_complete_report(self):
        cases, complete = salvage_report(REPORT_HEAD + "<OverallResult success=\"false\"/>"
                                         "</TestCase></Group></Catch>")
        self.assertTrue(complete)
        self.assertEqual([c.passed for c in cases], [True, False])

    def test_report_cut_short_keeps_finished_cases(self):
        cases, complete = salvage_report(REPORT_HEAD)
        self.assertFalse(complete)
        self.assertEqual([c.name for c in cases], ["first"])

    def test_nothing_written(self):
        self.assertEqual(salvage_report(""), ([], False))


if __name__ == "__main__":
    unittest.main()
