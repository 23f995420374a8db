"""grading.toml: loading and checking."""

import re
import shutil
import tempfile
import unittest
from pathlib import Path

from grader.paths import ROOT, LabPaths, discover_labs, find_lab
from grader.rubric import Rubric, RubricError, load_rubric, parse_rubric, rubric_warnings

LAB = LabPaths("04_tiled_matmul", "04", "tiled_matmul", ROOT)

GOOD = """\
student_files = ["labs/04_tiled_matmul/tiled_matmul.cu"]

[lab]
title = "Tiled matrix multiplication"

[[correctness]]
name = "Model"
tests = "[lab04][model]"
points = 30

[[correctness]]
name = "Kernel"
tests = "[lab04][tiled]"
points = 40
hint = "two barriers per phase"

[memory_safety]
points = 10
tests = "[lab04][sanitizer]"
tools = ["memcheck", "racecheck"]

[performance]
points = 15
bench_args = ["--n", "4096"]
comparison = "tiled"
requires = ["Kernel"]

[[metrics]]
name = "requests per naive request"
metric = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
per_baseline = true
expect_max = 0.1
points = 5

[static]
allow_reference = ["cudaFuncSetAttribute"]
"""


def with_line(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


class LoadRubricTest(unittest.TestCase):
    def test_parses_every_section(self):
        r = parse_rubric(LAB, GOOD)
        self.assertIsInstance(r, Rubric)
        self.assertEqual(r.title, "Tiled matrix multiplication")
        self.assertEqual(r.test_timeout_s, 300.0)
        self.assertEqual(r.build_timeout_s, 600.0)
        self.assertEqual([g.name for g in r.tables["correctness"]], ["Model", "Kernel"])
        self.assertEqual(r.tables["correctness"][1].hint, "two barriers per phase")
        self.assertEqual(r.tables["memory_safety"].tools, ["memcheck", "racecheck"])
        self.assertEqual(r.tables["performance"].full_credit_ratio, 1.2)
        self.assertEqual(r.tables["performance"].review_ratio, 10.0)
        self.assertEqual(r.tables["performance"].requires, ["Kernel"])
        m = r.tables["metrics"][0]
        self.assertEqual((m.target, m.args, m.per, m.expect_min, m.expect_max),
                         ("bench", [], None, None, 0.1))
        self.assertEqual(r.static.allow_reference, ["cudaFuncSetAttribute"])
        self.assertEqual((r.static.allow_define, r.static.allow_include), ([], []))
        self.assertEqual(r.max_points, 100.0)
        self.assertEqual(rubric_warnings(r), [])

    def test_every_lab_rubric_in_the_repository_loads(self):
        labs = [lab for lab in discover_labs() if (lab.lab_dir / "grading.toml").is_file()]
        self.assertTrue(labs, "no grading.toml found in labs/")
        for lab in labs:
            with self.subTest(lab=lab.folder):
                r = load_rubric(lab)
                self.assertGreater(r.max_points, 0)
                for f in r.student_files:
                    self.assertTrue(f.startswith(f"labs/{lab.folder}/"), f)

    def test_lab04_rubric(self):
        r = load_rubric(LAB)
        self.assertEqual(r.max_points, 100.0)
        self.assertEqual(r.student_files, ["labs/04_tiled_matmul/tiled_matmul.cu"])
        self.assertEqual(r.tables["performance"].comparison, "tiled")
        self.assertEqual(r.static.refuse_reference, [])  # the shared list is lab 04's

    def test_lab07_refuses_the_occupancy_queries(self):
        r = load_rubric(find_lab("07_occupancy"))
        self.assertEqual(r.static.refuse_reference, ["cudaOccupancy*"])
        self.assertIn("occupancy", r.static.refuse_why)

    def test_static_table(self):
        self.assertRejects(with_line(GOOD, 'allow_reference = ["cudaFuncSetAttribute"]',
                                     'deny_symbols = ["fopen"]'),
                           "unknown key 'deny_symbols' in [static]", "allow_reference")
        self.assertRejects(with_line(GOOD, 'allow_reference = ["cudaFuncSetAttribute"]',
                                     'allow_include = ["../../solutions/x.cu"]'),
                           "allow_include", "inside the repository")
        self.assertRejects(with_line(GOOD, 'allow_reference = ["cudaFuncSetAttribute"]',
                                     'allow_define = "main"'),
                           "allow_define must be an array of strings")
        r = parse_rubric(LAB, with_line(GOOD, 'allow_reference = ["cudaFuncSetAttribute"]',
                                        'allow_include = ["labs/04_tiled_matmul/extra/*.h"]\n'
                                        'allow_define = ["lab04::*"]'))
        self.assertEqual(r.static.allow_include, ["labs/04_tiled_matmul/extra/*.h"])
        self.assertEqual(r.static.allow_define, ["lab04::*"])
        self.assertRejects(with_line(GOOD, 'allow_reference = ["cudaFuncSetAttribute"]',
                                     'refuse_reference = ["cudaMemGetInfo"]'),
                           "refuse_reference needs refuse_why")
        r = parse_rubric(LAB, with_line(GOOD, 'allow_reference = ["cudaFuncSetAttribute"]',
                                        'refuse_reference = ["cudaMemGetInfo"]\n'
                                        'refuse_why = "count the bytes yourself"'))
        self.assertEqual(r.static.refuse_reference, ["cudaMemGetInfo"])
        self.assertEqual(r.static.refuse_why, "count the bytes yourself")

    def test_every_lab_static_table_merges_with_the_shared_allowlist(self):
        from grader.static_checks import load_rules

        for lab in discover_labs():
            if not (lab.lab_dir / "grading.toml").is_file():
                continue
            with self.subTest(lab=lab.folder):
                rules = load_rules(lab.folder, load_rubric(lab).static)
                self.assertEqual(rules.lab_namespace, lab.tag)
                self.assertTrue(rules.references.match(f"{lab.tag}::anything()"))
                self.assertFalse(rules.references.match("cuStreamCreate"))
                self.assertFalse(rules.references.match("cudaStreamCreate"))

    def assertRejects(self, text: str, *fragments: str):
        with self.assertRaises(RubricError) as ctx:
            parse_rubric(LAB, text)
        message = str(ctx.exception)
        self.assertIn("labs/04_tiled_matmul/grading.toml", message)
        for fragment in fragments:
            self.assertIn(fragment, message)

    def test_unknown_keys_are_rejected(self):
        self.assertRejects(GOOD + "\n[extra]\nx = 1\n", "unknown key 'extra'")
        self.assertRejects(with_line(GOOD, "points = 30", "points = 30\npoint = 1"),
                           "unknown key 'point'", "[[correctness]]")
        self.assertRejects(with_line(GOOD, 'comparison = "tiled"',
                                     'comparison = "tiled"\nfull_credit = 2'),
                           "unknown key 'full_credit'", "[performance]")

    def test_wrong_types_are_rejected(self):
        self.assertRejects(with_line(GOOD, "points = 30", 'points = "30"'),
                           "points must be a number")
        self.assertRejects(with_line(GOOD, "points = 30", "points = true"),
                           "points must be a number")
        self.assertRejects(with_line(GOOD, 'bench_args = ["--n", "4096"]',
                                     'bench_args = ["--n", 4096]'),
                           "bench_args must be an array of strings")
        self.assertRejects(with_line(GOOD, 'title = "Tiled matrix multiplication"', "title = 4"),
                           "title must be a string")
        self.assertRejects(with_line(GOOD, "points = 30", "points = -1"), "at least 0")

    def test_student_files_must_stay_in_the_lab_folder(self):
        for bad in ('"labs/02_coalescing/coalescing.cu"', '"solutions/04_tiled_matmul/x.cu"',
                    '"labs/04_tiled_matmul/../../common/src/bench.cpp"', '"/etc/passwd"',
                    '"labs/04_tiled_matmul/tests/tiled_tests.cpp"'):
            with self.subTest(bad=bad):
                self.assertRejects(with_line(GOOD, '"labs/04_tiled_matmul/tiled_matmul.cu"', bad),
                                   "student file")
        self.assertRejects(with_line(GOOD, 'student_files = ["labs/04_tiled_matmul/tiled_matmul.cu"]',
                                     "student_files = []"), "at least one")

    def test_references_and_values_are_checked(self):
        self.assertRejects(with_line(GOOD, 'requires = ["Kernel"]', 'requires = ["Kernal"]'),
                           "'Kernal'", "not a [[correctness]] group")
        self.assertRejects(with_line(GOOD, 'tools = ["memcheck", "racecheck"]',
                                     'tools = ["memcheck", "leakcheck"]'), "leakcheck")
        self.assertRejects(with_line(GOOD, "per_baseline = true", 'kernel_regex = "tiled"'),
                           "'kernel_regex' is no longer read")
        self.assertRejects(with_line(GOOD, "expect_max = 0.1", "expect_min = 1\nexpect_max = 0.1"),
                           "expect_min")
        self.assertRejects(with_line(GOOD, 'name = "Kernel"', 'name = "Model"'), "two")
        self.assertRejects(with_line(GOOD, 'comparison = "tiled"',
                                     'comparison = "tiled"\nfull_credit_ratio = 0.5'),
                           "full_credit_ratio")
        self.assertRejects(GOOD.replace('[lab]\ntitle = "Tiled matrix multiplication"\n', ""),
                           "[lab]")
        self.assertRejects(with_line(GOOD, "expect_max = 0.1\n", ""), "expect_min nor expect_max")

    def test_invalid_toml_names_the_file(self):
        self.assertRejects(GOOD + "\n[lab\n", "not valid TOML")

    def test_missing_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "labs" / "09_empty").mkdir(parents=True)
            lab = LabPaths("09_empty", "09", "empty", Path(tmp))
            with self.assertRaises(RubricError) as ctx:
                load_rubric(lab)
            self.assertIn("labs/09_empty/grading.toml", str(ctx.exception))

    def test_defaults_and_warnings(self):
        text = ('student_files = ["labs/04_tiled_matmul/tiled_matmul.cu"]\n'
                '[lab]\ntitle = "T"\ntest_timeout_s = 30\n'
                '[[correctness]]\nname = "A"\ntests = "[a]"\npoints = 50\n'
                '[[metrics]]\nname = "m"\ntarget = "tests"\nargs = "[lab04][tiled]"\n'
                'metric = "x.sum"\n')
        r = parse_rubric(LAB, text)
        self.assertIsNone(r.tables["memory_safety"])
        self.assertIsNone(r.tables["performance"])
        self.assertEqual(r.test_timeout_s, 30.0)
        self.assertEqual(r.tables["metrics"][0].args, ["[lab04][tiled]"])
        self.assertEqual(r.max_points, 50.0)
        self.assertTrue(any("not 100" in w for w in rubric_warnings(r)))

    def test_each_default_is_declared_once_on_its_record(self):
        # The parser reads the records' declared defaults: change one there, and a rubric
        # that leaves the key out gets the new value.
        from dataclasses import fields
        from unittest import mock

        from grader.parts.performance import Performance
        for record, name, value in ((Performance, "full_credit_ratio", 1.7),
                                    (Performance, "review_ratio", 7.0),
                                    (Rubric, "build_timeout_s", 99.0),
                                    (Rubric, "test_timeout_s", 42.0)):
            with self.subTest(field=f"{record.__name__}.{name}"):
                declared = next(f for f in fields(record) if f.name == name)
                with mock.patch.object(declared, "default", value):
                    r = parse_rubric(LAB, GOOD)
                got = {"full_credit_ratio": lambda: r.tables["performance"].full_credit_ratio,
                       "review_ratio": lambda: r.tables["performance"].review_ratio,
                       "build_timeout_s": lambda: r.build_timeout_s,
                       "test_timeout_s": lambda: r.test_timeout_s}[name]()
                self.assertEqual(got, value)

    def test_the_loader_follows_the_declared_checks(self):
        # The checks live in the schema alone: change one there and the loader follows.
        from unittest import mock

        from grader.parts.correctness import SCHEMA as CORRECTNESS_TABLE
        from grader.parts.performance import SCHEMA as PERFORMANCE_TABLE
        from grader.rubric_schema import AtLeast

        ratio = PERFORMANCE_TABLE.key("full_credit_ratio")
        text = with_line(GOOD, 'comparison = "tiled"',
                         'comparison = "tiled"\nfull_credit_ratio = 1.5')
        self.assertEqual(parse_rubric(LAB, text).tables["performance"].full_credit_ratio, 1.5)
        with mock.patch.object(ratio, "checks", (AtLeast(2),)):
            self.assertRejects(text, "[performance].full_credit_ratio must be at least 2, not 1.5")
        low = text.replace("= 1.5", "= 0.5")
        self.assertRejects(low, "full_credit_ratio must be at least 1")
        with mock.patch.object(ratio, "checks", ()):
            self.assertEqual(parse_rubric(LAB, low).tables["performance"].full_credit_ratio, 0.5)

        hint = CORRECTNESS_TABLE.key("hint")
        with mock.patch.object(hint, "required", True):
            self.assertRejects(GOOD, "[[correctness]] 'Model' is missing the required key 'hint'")
        self.assertEqual(parse_rubric(LAB, GOOD).tables["correctness"][0].hint, "")

    def test_messages_name_the_table_and_the_key(self):
        self.assertRejects(with_line(GOOD, 'name = "Model"', 'name = " "'),
                           "[[correctness]] #1.name must not be empty")
        self.assertRejects(with_line(GOOD, "points = 40", "points = inf"),
                           "[[correctness]] 'Kernel'.points must be a finite number")
        self.assertRejects(with_line(GOOD, 'student_files = ["labs/04_tiled_matmul/tiled_matmul.cu"]',
                                     'student_files = "labs/04_tiled_matmul/tiled_matmul.cu"'),
                           ": student_files must be an array of strings")
        self.assertRejects(with_line(GOOD, 'tools = ["memcheck", "racecheck"]',
                                     'tools = ["memcheck", "memcheck"]'),
                           "[memory_safety].tools lists 'memcheck' twice")
        self.assertRejects(with_line(GOOD, '[lab]\ntitle = "Tiled matrix multiplication"\n', ""),
                           "the required table [lab] is missing")
        self.assertRejects(with_line(GOOD, "per_baseline = true", 'args = "[lab04][tiled]"'),
                           "'requests per naive request'.args must be an array of strings",
                           'target = "tests"')

    def test_copy_of_lab_is_read_from_its_own_root(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            lab_dir = root / "labs" / "04_tiled_matmul"
            lab_dir.mkdir(parents=True)
            shutil.copy(ROOT / "labs" / "04_tiled_matmul" / "grading.toml", lab_dir)
            r = load_rubric(LabPaths("04_tiled_matmul", "04", "tiled_matmul", root))
            self.assertEqual(r.max_points, 100.0)


def documented_keys() -> dict[tuple[str, str], tuple[str, str]]:
    """grader/README.md's grading.toml table: (table, key) -> (its type cell, its default
    cell); a row that names several keys ("`[[metrics]] expect_min`, `expect_max`") gives
    each."""
    readme = (ROOT / "grader" / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## grading.toml\n", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        table = ""
        for name in re.findall(r"`([^`]+)`", cells[0]):
            if " " in name:
                table, name = name.rsplit(" ", 1)
            out[(table, name)] = (cells[1], cells[2])
    return out


def literal(cell: str):
    """A default cell as a value: `""`, `[]`, `false`, `"bench"`, a number or "none";
    anything else (a default the parser works out) as itself."""
    cell = cell.strip("`")
    if cell == "none":
        return None
    if cell in ("true", "false"):
        return cell == "true"
    if cell == "[]":
        return []
    if re.fullmatch(r"[0-9.]+", cell):
        return float(cell)
    if re.fullmatch(r'"[^"]*"', cell):
        return cell[1:-1]
    return cell


class SchemaTest(unittest.TestCase):
    """The schema of grader/rubric.py is the one source: grader/README.md documents its
    keys, their types, ranges, choices and defaults, and nothing else."""

    def setUp(self):
        from grader.rubric import rubric_schema
        from grader.rubric_schema import keys_of
        self.declared = {(where, key.name): (key, table)
                         for where, key, table in keys_of(rubric_schema())}
        self.documented = documented_keys()

    def test_the_readme_documents_every_declared_key_and_no_other(self):
        self.assertGreater(len(self.declared), 40)
        self.assertEqual(sorted(set(self.declared) - set(self.documented)), [],
                         "declared, not documented")
        self.assertEqual(sorted(set(self.documented) - set(self.declared)), [],
                         "documented, not declared")

    def test_types_ranges_and_choices_match(self):
        from grader.rubric_schema import (BOOLEAN, NUMBER, STRING, STRINGS, STRINGS_OR_STRING,
                                          WHOLE_NUMBER, Above, AtLeast, OneOf)
        words = {STRING: "string", NUMBER: "number", WHOLE_NUMBER: "whole number",
                 BOOLEAN: "boolean", STRINGS: "array", STRINGS_OR_STRING: "array"}
        for (where, name), (key, _) in self.declared.items():
            if (where, name) not in self.documented:
                continue  # the test above names it
            with self.subTest(key=f"{where} {name}".strip()):
                kind, _ = self.documented[(where, name)]
                self.assertEqual("required" in kind, key.required, kind)
                choices = [c for c in key.checks if isinstance(c, OneOf)]
                if choices:
                    for choice in choices[0].choices:
                        self.assertIn(f'"{choice}"', kind)
                else:
                    self.assertIn(words[key.type], kind)
                bounds = [f"≥ {c.bound:g}" for c in key.checks if isinstance(c, AtLeast)]
                bounds += [f"> {c.bound:g}" for c in key.checks if isinstance(c, Above)]
                self.assertEqual(re.findall(r"[≥>] [0-9.]+", kind), bounds)

    def test_defaults_match(self):
        from grader.rubric_schema import DERIVED
        for (where, name), (key, table) in self.declared.items():
            if key.required or (where, name) not in self.documented:
                continue
            with self.subTest(key=f"{where} {name}".strip()):
                documented = literal(self.documented[(where, name)][1])
                if key.default is DERIVED:  # the parser's: described in words
                    self.assertIsInstance(documented, str)
                    self.assertNotEqual(documented, "")
                else:
                    self.assertEqual(documented, table.default(key))


if __name__ == "__main__":
    unittest.main()
