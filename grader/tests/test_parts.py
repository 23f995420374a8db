"""The parts' registry (grader/parts/kinds.py): every kind has one home and one label, the
registry's order is the order a grade reports its parts in, and a kind added to the
registry is measured, scored, left "not graded" without a GPU and finished at zero when a
lab stops early, with no change to the stages."""

from __future__ import annotations

import json
import unittest
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from grader.catch2.testrun import Case, CaseRun
from grader.costs import Meter
from grader.parts import kinds, memory_safety
from grader.parts.base import Entry, PartContext, RubricTables
from grader.paths import ROOT, find_lab
from grader.result import GRADED, NOT_GRADED, Kind, LabResult, PartResult
from grader.rubric import RubricError, load_rubric, parse_rubric
from grader.rubric_schema import NUMBER, STRING, AtLeast, Optional, Read, Required, Table
from grader.stages import lab as lab_stage
from grader.stages.tests import RunPlace, TestRuns

GOLDEN = ROOT / "grader" / "tests" / "data" / "golden" / "reference.json"


@dataclass(frozen=True)
class Seen:
    value: float


@dataclass
class ToyRules:
    points: float
    note: str = ""


class ToyPart:
    """A kind of part the registry did not have, all in one place as a new module would
    have it: its kind, its table of grading.toml ([toy]) and its record, one entry,
    measured on the GPU."""

    kind = Kind("toy")
    label = "Toy"
    table = "toy"
    schema = Table("[toy]", ToyRules, (Required("points", NUMBER, AtLeast(0)),
                                       Optional("note", STRING)))
    many = False
    gpu = True

    def __init__(self) -> None:
        self.calls: list[str] = []

    def read(self, found: Read, lab: object, tables: object) -> ToyRules:
        if found["note"] == "refuse":
            raise found.fail("[toy].note refuses")
        return found.build(ToyRules)

    def entries(self, rubric: RubricTables) -> list[Entry]:
        rules = rubric.tables.get(self.table)
        return [Entry(self.kind, "Toy part", rules.points, None, "a toy")] if rules else []

    def measure(self, ctx: PartContext) -> Seen:
        self.calls.append(f"measure after {sorted(ctx.measured)}")
        return Seen(0.5)

    def score(self, measured: Seen, full_groups: set[str]) -> list[PartResult]:
        self.calls.append(f"score with {sorted(full_groups)}")
        return [PartResult(self.kind, "Toy part", GRADED, 5.0 * measured.value, 5.0)]

    def record(self, measured: Seen, ctx: PartContext, out: LabResult) -> None:
        self.calls.append("record")


def with_toy(toy: ToyPart | None = None):
    """The registry with the toy's line added, as a new kind's module would add it."""
    return mock.patch.object(kinds, "PARTS", kinds.PARTS + (toy or ToyPart(),))


class RegistryTest(unittest.TestCase):
    def test_every_kind_has_one_home_and_one_label(self):
        gates = [g.kind for g in kinds.GATES]
        parts = [p.kind for p in kinds.PARTS]
        self.assertEqual(gates, ["build", "static"])
        self.assertEqual(list(dict.fromkeys(parts)),
                         ["correctness", "memory_safety", "performance", "metric"])
        for kind in gates + parts:
            self.assertIsInstance(kind, Kind)
            self.assertNotEqual(kinds.label(kind), kind, f"{kind} has no label")
        tables = [p.table for p in kinds.PARTS]
        self.assertEqual(len(tables), len(set(tables)), "one table, one part")
        self.assertEqual(kinds.GATE_KINDS, {"build", "static"})
        self.assertFalse(kinds.measured_on_gpu("correctness"))
        self.assertTrue(kinds.measured_on_gpu("metric"))

    def test_each_part_declares_its_own_table(self):
        for part in kinds.PARTS:
            brackets = ("[[", "]]") if part.many else ("[", "]")
            self.assertEqual(part.schema.where, part.table.join(brackets), part.table)

    @unittest.skipUnless(GOLDEN.is_file(), "the golden results are not in a student copy")
    def test_the_registry_order_is_the_report_order(self):
        golden = json.loads(GOLDEN.read_text())
        for lab in golden["labs"]:
            rubric = load_rubric(find_lab(lab["lab"][:2]))
            reported = [(p["kind"], p["name"]) for p in lab["parts"]
                        if p["kind"] not in kinds.GATE_KINDS]
            self.assertEqual(reported, [e.key for e in kinds.entries(rubric)], lab["lab"])

    def test_a_kind_is_a_string_in_result_json(self):
        part = PartResult("memory_safety", "Memory safety", GRADED, 1.0, 1.0)
        self.assertIsInstance(part.kind, Kind)
        self.assertEqual(part.kind, memory_safety.KIND)
        self.assertEqual(json.dumps({"kind": part.kind}), '{"kind": "memory_safety"}')
        self.assertEqual({"memory_safety": 1}[part.kind], 1)
        self.assertEqual(f"{part.kind}", "memory_safety")


class NewKindTableTest(unittest.TestCase):
    """A new kind's table is read from grading.toml through its registry line alone."""

    lab = find_lab("04")
    text = (lab.lab_dir / "grading.toml").read_text()

    def test_without_its_registry_line_the_table_is_unknown(self):
        with self.assertRaisesRegex(RubricError, "unknown key 'toy'"):
            parse_rubric(self.lab, self.text + "\n[toy]\npoints = 5\n")

    def test_with_it_the_table_is_read_checked_and_counted(self):
        before = parse_rubric(self.lab, self.text)
        with with_toy():
            rubric = parse_rubric(self.lab, self.text + "\n[toy]\npoints = 5\nnote = 'hi'\n")
            self.assertEqual(rubric.tables["toy"], ToyRules(5.0, "hi"))
            self.assertEqual(rubric.max_points, before.max_points + 5.0)
            self.assertEqual(kinds.entries(rubric)[-1].key, ("toy", "Toy part"))
            self.assertEqual(kinds.label(Kind("toy")), "Toy")
            self.assertIsNone(parse_rubric(self.lab, self.text).tables["toy"])
            with self.assertRaisesRegex(RubricError, r"\[toy\] is missing the required key "
                                                     "'points'"):
                parse_rubric(self.lab, self.text + "\n[toy]\nnote = 'hi'\n")
            with self.assertRaisesRegex(RubricError, r"unknown key 'colour' in \[toy\]"):
                parse_rubric(self.lab, self.text + "\n[toy]\npoints = 1\ncolour = 2\n")
            with self.assertRaisesRegex(RubricError, r"\[toy\].note refuses"):
                parse_rubric(self.lab, self.text + "\n[toy]\npoints = 1\nnote = 'refuse'\n")


class NewKindTest(unittest.TestCase):
    """A kind added to the registry alone reaches every stage that loops over it."""

    def job(self, has_gpu: bool) -> SimpleNamespace:
        rubric = SimpleNamespace(tables={"correctness": [], "memory_safety": None,
                                         "performance": None, "stretch": None, "metrics": [],
                                         "toy": ToyRules(5.0)}, lab=None)
        return SimpleNamespace(
            rubric=rubric, seed=1, test_timeout=10, has_gpu=has_gpu,
            why_no_gpu="" if has_gpu else "no device here", gpu_section=mock.MagicMock(),
            costs=Meter(), say=lambda text: None,
            lab=SimpleNamespace(folder="04_tiled_matmul", solution_dir=Path("/")),
            trees=SimpleNamespace(run_env={}, identity=None))

    def test_it_is_measured_and_scored_after_the_others(self):
        toy = ToyPart()
        case = Case("c", ("lab04",))
        tested = TestRuns([case], {"c": CaseRun("c", case.tags, "passed")})
        out = LabResult("04_tiled_matmul", "t", 0.0, 5.0)
        with with_toy(toy):
            lab_stage.score_parts(self.job(True), RunPlace(Path("/run"), None, {}), tested,
                                  out)
        self.assertEqual(toy.calls, ["measure after ['correctness']", "score with []",
                                     "record"])
        self.assertEqual([(p.name, p.points) for p in out.parts], [("Toy part", 2.5)])

    def test_without_a_gpu_it_is_not_graded_and_never_measured(self):
        toy = ToyPart()
        out = LabResult("04_tiled_matmul", "t", 0.0, 5.0)
        with with_toy(toy):
            lab_stage.score_parts(self.job(False), RunPlace(Path("/run"), None, {}),
                                  TestRuns([]), out)
        self.assertEqual(toy.calls, [])
        self.assertEqual([(p.name, p.status, p.details) for p in out.parts],
                         [("Toy part", NOT_GRADED, {"why": "no device here"})])
        self.assertIn("no CUDA device", out.parts[0].reason)

    def test_a_lab_that_stops_early_scores_it_zero(self):
        rubric = load_rubric(find_lab("04"))
        before = [e.name for e in kinds.entries(rubric)]
        out = LabResult("04_tiled_matmul", "t", 0.0, 100.0)
        rubric.tables["toy"] = ToyRules(5.0)
        with with_toy():
            kinds.finish_unfinished(out, rubric, "stopped")
        self.assertEqual([p.name for p in out.parts], before + ["Toy part"])
        self.assertEqual((out.parts[-1].points, out.parts[-1].reason), (0.0, "stopped"))


if __name__ == "__main__":
    unittest.main()
