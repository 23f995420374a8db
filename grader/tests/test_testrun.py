"""Listing test cases (Catch2 2 and 3) and salvaging reports cut short by a crash or hang.

The lab 06 fixtures in fixtures/catch2/: lab06_list_v2.txt is what the reference's test binary
(built against Catch2 2.13) prints for `--list-tests --list-test-names-only`;
lab06_report_v2.xml is its `[host] -r xml -d yes --rng-seed 1` report, source paths made
relative. lab06_list_v3.xml and lab06_report_v3.xml are the same cases written as Catch2 3's
XmlReporter writes them (`<MatchingTests>`; `<Catch2TestRun>` with no Group).
"""

import os
import stat
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path
from unittest import mock

from grader.catch2 import testrun
from grader.catch2.report import (ALTERED, ALTERED_MESSAGE, COMPLETE, CUT, close_cut_report,
                                  parse_catch_xml, report_state)
from grader.sandbox import Outcome
from grader.catch2.testrun import Case, Runner, list_cases, parse_listing, salvage_report

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "catch2"

# What a Catch2 2.13 binary prints for `--list-tests --list-test-names-only` (real output).
# The console listing breaks a long name at a space (dropped), after a hyphen (kept),
# before a bracket (kept), and splits a word too long for a line with a "-" of its own; it
# wraps tags too. Names-only prints each name raw, quoting one that starts with "#".
V2_LISTING = """\
All available test cases:
  The naive kernel loads two floats per multiply-add
      [host][lab04][model]
  A test case whose name is long enough that the console listing of Catch2
    wraps it onto a second line
      [gpu][lab04][tiled]
  Sizes that are not a multiple of the tile are refused, ever, for any non-
    square shape
      [given][host][lab04]
  Xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-
    xxxxx
      [host]
  #7 is a name that starts with a hash
      [host]
  A name broken before a bracket: checks_that_the_console_listing_keeps
    (both_halves)
      [host]
  Two  spaces   inside, and a tab\tand a name with lots of tags
      [a-rather-long-tag][another-rather-long-tag][fourth-tag][host][third-
      rather-long-tag]
7 test cases

The naive kernel loads two floats per multiply-add
A test case whose name is long enough that the console listing of Catch2 wraps it onto a second line
Sizes that are not a multiple of the tile are refused, ever, for any non-square shape
Xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
"#7 is a name that starts with a hash"
A name broken before a bracket: checks_that_the_console_listing_keeps(both_halves)
Two  spaces   inside, and a tab\tand a name with lots of tags
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

COLUMN_CASE = "A column of an unpadded 32-wide tile is 32-way; of a padded one, conflict-free"


# The lab 06 fixtures name the hidden test cases, so a release copy of the grader leaves
# them out; the tests that read them are skipped there.
needs_lab06 = unittest.skipUnless(FIXTURES.is_dir(), "the lab 06 fixtures are not here")


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


class ListingTest(unittest.TestCase):
    def test_each_case_runs_in_one_test_executable(self):
        public, hidden = Case("a", ("host",)), Case("b", ("gpu", "hidden"))
        self.assertEqual([public.runs_in(k) for k in ("tests_student", "hidden_student")],
                         [True, False])
        self.assertEqual([hidden.runs_in(k) for k in ("tests_student", "hidden_student")],
                         [False, True])

    def test_catch2_v2_listing_takes_the_raw_names(self):
        cases = parse_listing(V2_LISTING)
        self.assertEqual(len(cases), 7)
        self.assertEqual(cases[0], Case("The naive kernel loads two floats per multiply-add",
                                        ("host", "lab04", "model")))
        self.assertEqual(cases[1].name, "A test case whose name is long enough that the "
                         "console listing of Catch2 wraps it onto a second line")
        self.assertEqual(cases[1].tags, ("gpu", "lab04", "tiled"))
        self.assertTrue(cases[1].matches("[lab04][tiled]"))
        self.assertEqual(cases[2], Case("Sizes that are not a multiple of the tile are "
                                        "refused, ever, for any non-square shape",
                                        ("given", "host", "lab04")))
        self.assertEqual(cases[3], Case("X" + "x" * 80, ("host",)))
        self.assertEqual(cases[4], Case("#7 is a name that starts with a hash", ("host",)))
        self.assertEqual(cases[5].name, "A name broken before a bracket: "
                         "checks_that_the_console_listing_keeps(both_halves)")
        self.assertEqual(cases[5].tags, ("host",))
        self.assertEqual(cases[6].name, "Two  spaces   inside, and a tab\tand a name with "
                         "lots of tags")
        self.assertEqual(cases[6].tags, ("a-rather-long-tag", "another-rather-long-tag",
                                         "fourth-tag", "host", "third-rather-long-tag"))

    @needs_lab06
    def test_lab06_wrapped_after_a_hyphen(self):
        # The real listing wraps this name after "conflict-"; glued with a space it would be
        # "conflict- free", a name no report carries.
        text = fixture("lab06_list_v2.txt")
        self.assertIn("conflict-\n    free\n", text)
        cases = parse_listing(text)
        self.assertEqual(len(cases), 24)
        column = [c for c in cases if c.name.startswith("A column of")]
        self.assertEqual(column, [Case(COLUMN_CASE, ("host", "lab06", "model"))])
        self.assertEqual(sum(c.hidden for c in cases), 7)
        self.assertEqual(sum(c.matches("[gpu]") for c in cases), 11)

    @needs_lab06
    def test_lab06_names_are_the_names_its_report_uses(self):
        listed = {c.name: c.tags for c in parse_listing(fixture("lab06_list_v2.txt"))}
        cases, complete = salvage_report(fixture("lab06_report_v2.xml"))
        self.assertTrue(complete)
        self.assertEqual(len(cases), 13)
        for case in cases:
            self.assertIn(case.name, listed)
            self.assertEqual(tuple(case.tags), listed[case.name])

    @needs_lab06
    def test_lab06_v3_xml_listing_lists_the_same_cases(self):
        self.assertEqual(parse_listing(fixture("lab06_list_v3.xml")),
                         parse_listing(fixture("lab06_list_v2.txt")))

    def test_catch2_v3_xml_listing(self):
        cases = parse_listing(V3_LISTING)
        self.assertEqual(cases, [Case("The naive kernel loads two floats per multiply-add",
                                      ("host", "lab04", "model"))])

    @needs_lab06
    def test_console_listing_alone_is_refused_rather_than_guessed(self):
        console = fixture("lab06_list_v2.txt").split("24 test cases")[0] + "24 test cases\n\n"
        with self.assertRaisesRegex(ValueError, "no raw name"):
            parse_listing(console)

    def test_a_raw_name_not_in_the_console_listing_is_refused(self):
        with self.assertRaisesRegex(ValueError, "not in the console listing"):
            parse_listing(V2_LISTING + "Some other case\n")

    def test_no_listing(self):
        with self.assertRaises(ValueError):
            parse_listing("error: unknown option\n")
        self.assertEqual(parse_listing("All available test cases:\n0 test cases\n\n"), [])


FAKE_BINARY = """\
#!{python}
# Answers the listing flags the way a Catch2 {major} test binary does.
import sys
from pathlib import Path
fixtures = Path({fixtures!r})
args = sys.argv[1:]
if {major} == 3:
    if "--list-test-names-only" in args:
        print("Error(s) in input:\\n  Unrecognised token: --list-test-names-only")
        sys.exit(255)
    print((fixtures / "lab06_list_v3.xml").read_text(), end="")
    sys.exit(0)
text = (fixtures / "lab06_list_v2.txt").read_text()
console, names = text.split("24 test cases\\n\\n")
out = ""
if "--list-tests" in args:
    out += console + "24 test cases\\n\\n"
if "--list-test-names-only" in args:
    out += names
print(out, end="")
sys.exit(24 * (("--list-tests" in args) + ("--list-test-names-only" in args)))  # the count
"""


class ListCasesTest(unittest.TestCase):
    def fake(self, tmp: str, major: int) -> Path:
        path = Path(tmp) / f"tests_v{major}"
        path.write_text(FAKE_BINARY.format(python=sys.executable, major=major,
                                           fixtures=str(FIXTURES)))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return path

    @needs_lab06
    def test_both_versions_list_the_same_cases(self):
        with tempfile.TemporaryDirectory() as tmp:
            v2 = list_cases(self.fake(tmp, 2), dict(os.environ))
            v3 = list_cases(self.fake(tmp, 3), dict(os.environ))
        self.assertEqual(len(v2), 24)
        self.assertEqual(v2, v3)
        self.assertIn(Case(COLUMN_CASE, ("host", "lab06", "model")), v2)

    def test_a_binary_that_lists_nothing_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "broken"
            path.write_text("#!/bin/sh\necho 'cannot start' >&2\nexit 1\n")
            path.chmod(0o755)
            with self.assertRaisesRegex(RuntimeError, "cannot start"):
                list_cases(path, dict(os.environ))
            with self.assertRaisesRegex(RuntimeError, "could not list"):
                list_cases(Path(tmp) / "absent", dict(os.environ))


class ReportTest(unittest.TestCase):
    @needs_lab06
    def test_both_versions_read_alike(self):
        v2 = parse_catch_xml(fixture("lab06_report_v2.xml"))
        v3 = parse_catch_xml(fixture("lab06_report_v3.xml"))
        self.assertEqual(len(v2), 13)
        self.assertEqual(v2, v3)
        self.assertEqual(v3[7].name, COLUMN_CASE)
        self.assertEqual(v3[7].tags, ["host", "lab06", "model"])
        self.assertEqual(v3[7].seconds, 1.4e-05)

    def test_other_xml_is_not_a_report(self):
        with self.assertRaisesRegex(ValueError, "root element is <testsuites>"):
            parse_catch_xml('<testsuites><TestCase name="x"/></testsuites>')

    def test_a_cut_report_is_closed_by_what_it_opened(self):
        head = '<?xml version="1.0"?>\n<Catch2TestRun name="t">\n  <TestCase name="a"/>\n' \
               '  <TestCase name="b">\n    <OverallResult success="true"/>\n  </TestCase>\n'
        self.assertEqual(close_cut_report(head + '  <TestCase name="c">\n    <Sect'),
                         head.rstrip() + "</Catch2TestRun>")
        self.assertIsNone(close_cut_report('<Catch><Group><TestCase name="a">'))


def cut_inside_ninth_case(report: str):
    """Every cut of `report` that ends inside its ninth test case (as a crash or a kill
    leaves it), from just after the eighth case's end to just before the ninth's."""
    ends = [i + len("</TestCase>") for i in range(len(report))
            if report.startswith("</TestCase>", i)]
    for at in range(ends[7] + 1, ends[8]):
        yield report[:at]


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

    def check_cut_report(self, report: str):
        cases, complete = salvage_report(report)
        self.assertTrue(complete)
        first_eight = [c.name for c in cases[:8]]
        self.assertEqual(first_eight[-1], COLUMN_CASE)
        cuts = 0
        for cut in cut_inside_ninth_case(report):
            cases, complete = salvage_report(cut)
            self.assertFalse(complete)
            self.assertEqual([c.name for c in cases], first_eight, cut[-80:])
            self.assertTrue(all(c.passed for c in cases))
            cuts += 1
        self.assertGreater(cuts, 200)

    @needs_lab06
    def test_catch2_v2_report_cut_mid_test_case(self):
        self.check_cut_report(fixture("lab06_report_v2.xml"))

    @needs_lab06
    def test_catch2_v3_report_cut_mid_test_case(self):
        report = fixture("lab06_report_v3.xml")
        self.assertIn("<Catch2TestRun ", report)
        self.assertNotIn("<Group", report)
        self.check_cut_report(report)

    @needs_lab06
    def test_catch2_v3_report_cut_inside_a_section(self):
        head = fixture("lab06_report_v3.xml").split('  <TestCase name="Empty shapes')[0]
        cut = head + textwrap.dedent("""\
              <TestCase name="Empty shapes are refused" tags="[given][host][lab06]" filename="t.cpp" line="99">
                <Section name="zero rows" filename="t.cpp" line="101">
                  <Expression success="false" type="REQUIRE" filename="t.cpp" line="102">
                    <Original>
                      rc == cudaErrorInvalidValue""")
        cases, complete = salvage_report(cut)
        self.assertFalse(complete)
        self.assertEqual(len(cases), 8)

    def test_not_a_catch2_report(self):
        self.assertEqual(salvage_report("<html><TestCase name='x'></TestCase>"), ([], False))
        self.assertEqual(salvage_report('<?xml version="1.0"?>\n<testsuites><TestCase '
                                        'name="x"></TestCase></testsuites>'), ([], False))

    def test_nothing_written(self):
        self.assertEqual(salvage_report(""), ([], False))


@needs_lab06
class HangTest(unittest.TestCase):
    """After a hang, only the cases that did not finish are run again, one per process."""

    def run_hang(self, report_name: str) -> list[str]:
        report = fixture(report_name)
        cut = next(cut_inside_ninth_case(report))
        opening, closing = (("<Catch2TestRun>", "</Catch2TestRun>") if "v3" in report_name
                            else ("<Catch><Group>", "</Group></Catch>"))
        expected = [c for c in parse_listing(fixture("lab06_list_v2.txt"))
                    if c.matches("[host]") and not c.hidden]
        specs = []

        def fake_run(cmd, *, cwd, timeout, env, identity=None, **_):
            spec, out = cmd[1], Path(cmd[cmd.index("-o") + 1])
            specs.append(spec)
            if spec == "[host]":  # hangs in the ninth case and is killed
                out.write_text(cut)
                return Outcome(cmd, None, True, timeout, "")
            case = f'<TestCase name="{spec.replace(chr(92), "")}" tags="[host]">' \
                   '<OverallResult success="true"/></TestCase>'
            out.write_text(f'<?xml version="1.0"?>\n{opening}{case}{closing}')
            return Outcome(cmd, 0, False, 0.1, "")

        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(testrun.sandbox, "run", fake_run):
            runner = Runner(Path(tmp), {}, None, 1, 30)
            found, _ = runner.run_layer(Path("lab06_tests_student"), "[host]", expected)
        self.assertEqual(len(found), 9)
        return specs[1:]

    def test_catch2_v2(self):
        self.assertEqual(self.run_hang("lab06_report_v2.xml"), ["Empty shapes are refused"])

    def test_catch2_v3(self):
        self.assertEqual(self.run_hang("lab06_report_v3.xml"), ["Empty shapes are refused"])


GOOD_REPORT = ('<?xml version="1.0" encoding="UTF-8"?>\n<Catch2TestRun name="t">\n'
               '<TestCase name="a" tags="[host]"><OverallResult success="false"/></TestCase>\n'
               '<TestCase name="b" tags="[host]"><OverallResult success="true"/></TestCase>\n'
               '</Catch2TestRun>\n')


class ReportStateTest(unittest.TestCase):
    def test_one_document_is_complete(self):
        self.assertEqual(report_state(GOOD_REPORT), COMPLETE)
        self.assertEqual(report_state(GOOD_REPORT + "\n  \n"), COMPLETE)

    def test_a_report_that_stops_early_is_cut(self):
        self.assertEqual(report_state(GOOD_REPORT[:120]), CUT)
        self.assertEqual(report_state(""), CUT)

    def test_anything_after_the_end_or_not_well_formed_is_altered(self):
        forged = GOOD_REPORT.replace("false", "true")
        for text in (GOOD_REPORT + forged, GOOD_REPORT + "x", GOOD_REPORT + "<!-- x -->",
                     GOOD_REPORT.replace("</TestCase>", "</Case>", 1), "garbage",
                     "\x00" + GOOD_REPORT):
            self.assertEqual(report_state(text), ALTERED, text[-60:])


# A test binary whose code writes into the report besides Catch2: HOW is "twice" (a second,
# all-passing report after the first, as a static destructor would), "trailing" (bytes after
# the end) or "honest".
TAMPERING_BINARY = """\
#!{python}
import sys
report = {report!r}
out = sys.argv[sys.argv.index("-o") + 1]
with open(out, "w") as f:
    f.write(report)
how = {how!r}
if how != "honest":
    with open(out, "w") as f:  # a pipe: a second open does not truncate what was read
        f.write(report.replace("false", "true") if how == "twice" else "garbage")
"""


class TamperedReportTest(unittest.TestCase):
    def run_binary(self, how: str) -> tuple[dict, Runner]:
        expected = [Case("a", ("host",)), Case("b", ("host",))]
        with tempfile.TemporaryDirectory() as tmp:
            binary = Path(tmp) / "lab99_tests_student"
            binary.write_text(TAMPERING_BINARY.format(python=sys.executable,
                                                      report=GOOD_REPORT, how=how))
            binary.chmod(0o755)
            run_dir = Path(tmp) / "run"
            run_dir.mkdir()
            runner = Runner(run_dir, dict(os.environ), None, 1, 30)
            found, _ = runner.run_layer(binary, "[host]", expected)
            self.assertEqual(list(run_dir.iterdir()), [])  # no report left to rewrite
        return found, runner

    def test_an_honest_report_is_read(self):
        found, runner = self.run_binary("honest")
        self.assertEqual({k: v.status for k, v in found.items()},
                         {"a": "failed", "b": "passed"})
        self.assertEqual(runner.runs, 1)

    def test_a_report_written_twice_is_not_believed(self):
        for how in ("twice", "trailing"):
            found, runner = self.run_binary(how)
            self.assertEqual({k: (v.status, v.messages) for k, v in found.items()},
                             {"a": ("failed", [ALTERED_MESSAGE]),
                              "b": ("failed", [ALTERED_MESSAGE])}, how)
            self.assertEqual(runner.runs, 1)  # not re-run: the same code would do it again
            self.assertIn(ALTERED_MESSAGE, runner.log[0])


# A test binary that behaves like a Catch2 3 one run with `SPEC -r xml -o REPORT ...`: it
# writes its report as it goes (flushed, as a file stream's buffer would be by then) and each
# case does what its name says. "ends with exit" stands for exit/quick_exit/_Exit from the
# student's code: the process ends mid-case, with the status given, the report cut short.
FAKE_CATCH = """\
#!{python}
import os, sys
cases = {cases!r}
spec, report = sys.argv[1], sys.argv[sys.argv.index("-o") + 1]
chosen = [c for c in cases if spec == "[host]" or spec.replace("\\\\", "") == c]
out = open(report, "w")
out.write('<?xml version="1.0" encoding="UTF-8"?>\\n<Catch2TestRun name="t">\\n')
failed = 0
for name in chosen:
    out.write(f'<TestCase name="{{name}}" tags="[host]" filename="t.cpp" line="1">\\n')
    out.flush()
    if name.startswith("ends with exit"):
        os._exit(int(name.split()[-1]))
    if name == "aborts":
        os.abort()
    ok = not name.startswith("fails")
    failed += not ok
    if not ok:
        out.write('<Expression success="false" type="CHECK" filename="t.cpp" line="3">'
                  '<Original>x == 1</Original><Expanded>2 == 1</Expanded></Expression>')
    out.write(f'<OverallResult success="{{str(ok).lower()}}" durationInSeconds="0.01"/>'
              '</TestCase>\\n')
out.write("</Catch2TestRun>\\n")
out.close()
sys.exit(failed)
"""


class EndedEarlyTest(unittest.TestCase):
    """A student's exit, quick_exit, _Exit or abort ends the test process mid-case: the other
    cases are re-run one per process and keep their results; the case that ended it fails
    (also after exit(0)), with a reason the student can act on."""

    NAMES = ["passes first", "fails a check", "ends with exit 0", "passes after",
             "ends with exit 1", "aborts", "passes last"]

    def run_layer(self, names: list[str]) -> tuple[dict[str, testrun.CaseRun], list[str]]:
        with tempfile.TemporaryDirectory() as tmp:
            binary = Path(tmp) / "lab99_tests_student"
            binary.write_text(FAKE_CATCH.format(python=sys.executable, cases=names))
            binary.chmod(0o755)
            run_dir = Path(tmp) / "run"
            run_dir.mkdir()
            runner = Runner(run_dir, dict(os.environ), None, 1, 60)
            found, _ = runner.run_layer(binary, "[host]", [Case(n, ("host",)) for n in names])
        return found, runner.log

    def test_only_the_case_that_ended_the_process_fails(self):
        found, log = self.run_layer(self.NAMES)
        self.assertEqual(set(found), set(self.NAMES))
        status = {name: run.status for name, run in found.items()}
        self.assertEqual(status, {
            "passes first": testrun.PASSED, "fails a check": testrun.FAILED,
            "ends with exit 0": testrun.CRASHED, "passes after": testrun.PASSED,
            "ends with exit 1": testrun.CRASHED, "aborts": testrun.CRASHED,
            "passes last": testrun.PASSED})
        self.assertIn("re-running the remaining cases one per process", log[0])
        zero = found["ends with exit 0"].messages[0]
        self.assertIn("exit status 0", zero)
        self.assertIn("your code called exit", zero)
        self.assertIn("throw an exception or return an error instead", zero)
        self.assertIn("exit status 1", found["ends with exit 1"].messages[0])
        aborted = found["aborts"].messages[0]
        self.assertIn("SIGABRT", aborted)
        self.assertIn("std::abort", aborted)
        self.assertIn("2 == 1", found["fails a check"].messages[0])

    def test_exit_zero_in_the_only_case_is_no_pass(self):
        found, _ = self.run_layer(["ends with exit 0"])
        self.assertEqual(found["ends with exit 0"].status, testrun.CRASHED)

    def test_the_message_for_each_way_out(self):
        def outcome(rc, timed_out=False):
            return Outcome(["t"], rc, timed_out, 3.0, "")
        self.assertIn("exit status 3", testrun.ended_early(outcome(3)))
        self.assertIn("SIGABRT", testrun.ended_early(outcome(-6)))
        self.assertIn("SIGSEGV", testrun.ended_early(outcome(-11)))
        self.assertIn("timed out", testrun.ended_early(outcome(None, True)))


if __name__ == "__main__":
    unittest.main()
