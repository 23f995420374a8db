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
from grader.parts import kinds
from grader.parts.base import Entry, PartContext
from grader.paths import ROOT, find_lab
from grader.result import GRADED, NOT_GRADED, Kind, LabResult, PartResult
from grader.rubric import load_rubric
from grader.stages import lab as lab_stage
from grader.stages.tests import RunPlace, TestRuns

GOLDEN = ROOT / "grader" / "tests" / "data" / "golden" / "reference.json"


@dataclass(frozen=True)
class Seen:
    value: float


class ToyPart:
    """A kind of part the registry did not have: one entry, measured on the GPU."""

    kind = Kind.METRIC
    label = "Toy"
    table = "[toy]"
    gpu = True

    def __init__(self) -> None:
        self.calls: list[str] = []

    def entries(self, rubric: object) -> list[Entry]:
        return [Entry(self.kind, "Toy part", 5.0, None, "a toy")]

    def measure(self, ctx: PartContext) -> Seen:
        self.calls.append(f"measure after {sorted(ctx.measured)}")
        return Seen(0.5)

    def score(self, measured: Seen, full_groups: set[str]) -> list[PartResult]:
        self.calls.append(f"score with {sorted(full_groups)}")
        return [PartResult(self.kind, "Toy part", GRADED, 5.0 * measured.value, 5.0)]

    def record(self, measured: Seen, ctx: PartContext, out: LabResult) -> None:
        self.calls.append("record")


class RegistryTest(unittest.TestCase):
    def test_every_kind_has_one_home_and_one_label(self):
        homes = [g.kind for g in kinds.GATES] + [p.kind for p in kinds.PARTS]
        self.assertEqual(set(homes), set(Kind))
        self.assertEqual(set(kinds.LABELS), set(Kind))
        tables = [p.table for p in kinds.PARTS]
        self.assertEqual(len(tables), len(set(tables)), "one table, one part")
        self.assertEqual(kinds.GATE_KINDS, {Kind.BUILD, Kind.STATIC})
        self.assertNotIn(Kind.CORRECTNESS, kinds.GPU_KINDS)

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
        self.assertIs(part.kind, Kind.MEMORY_SAFETY)
        self.assertEqual(json.dumps({"kind": part.kind}), '{"kind": "memory_safety"}')
        self.assertEqual({"memory_safety": 1}[part.kind], 1)
        self.assertEqual(f"{part.kind}", "memory_safety")


class NewKindTest(unittest.TestCase):
    """A kind added to the registry alone reaches every stage that loops over it."""

    def job(self, has_gpu: bool) -> SimpleNamespace:
        rubric = SimpleNamespace(correctness=[], memory_safety=None, performance=None,
                                 stretch=None, metrics=[], lab=None)
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
        with mock.patch.object(kinds, "PARTS", kinds.PARTS + (toy,)):
            lab_stage.score_parts(self.job(True), RunPlace(Path("/run"), None, {}), tested,
                                  out)
        self.assertEqual(toy.calls, ["measure after ['[[correctness]]']", "score with []",
                                     "record"])
        self.assertEqual([(p.name, p.points) for p in out.parts], [("Toy part", 2.5)])

    def test_without_a_gpu_it_is_not_graded_and_never_measured(self):
        toy = ToyPart()
        out = LabResult("04_tiled_matmul", "t", 0.0, 5.0)
        with mock.patch.object(kinds, "PARTS", kinds.PARTS + (toy,)):
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
        with mock.patch.object(kinds, "PARTS", kinds.PARTS + (ToyPart(),)):
            kinds.finish_unfinished(out, rubric, "stopped")
        self.assertEqual([p.name for p in out.parts], before + ["Toy part"])
        self.assertEqual((out.parts[-1].points, out.parts[-1].reason), (0.0, "stopped"))


if __name__ == "__main__":
    unittest.main()
