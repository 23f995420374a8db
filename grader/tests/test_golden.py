"""Golden results: result.json of the reference and of the skeleton submission, for labs 01
and 04 without a GPU (the host layer), must stay the same, times and other volatile fields
aside. The golden files (data/golden/) were made from the grader before its stages were
restructured; any change to scoring, reasons or the result's shape shows up here.

To regenerate them after a deliberate change:
    CML_UPDATE_GOLDEN=1 python3 -m unittest grader.tests.test_golden
and review the diff."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import unittest
from pathlib import Path
from typing import Any

from grader import pipeline
from grader.paths import ROOT, find_lab
from grader.rubric import load_rubric

from . import needs
from .needs import missing as _missing

GOLDEN = Path(__file__).resolve().parent / "data" / "golden"
LABS = ("01", "04")
SEED = 4242
UPDATE = bool(os.environ.get("CML_UPDATE_GOLDEN"))

# Keys whose values depend on the machine, the clock or the folder, never on the grading.
VOLATILE = {"created", "wall_seconds", "seconds", "tools", "sandbox", "submission",
            "binaries", "grader_version", "gpu_seconds", "gpu_waited", "stages"}


def normalise(value: Any) -> Any:
    """The result without volatile fields; folder names of this run replaced."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str):
        return value.replace(str(ROOT), "<ROOT>")
    return value


def make_submission(kind: str, dest: Path) -> Path:
    """A folder laid out like the repository with every student file of LABS taken from the
    reference solution (kind "reference") or the skeleton (kind "skeleton")."""
    for key in LABS:
        lab = find_lab(key)
        for rel in load_rubric(lab).student_files:
            source = ROOT / rel
            if kind == "reference":
                source = ROOT / rel.replace("labs/", "solutions/", 1)
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    return dest


@unittest.skipIf(_missing(), f"golden grading needs these, missing here: {_missing()}")
class GoldenResults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="cml-golden-"))
        cls.tmp.chmod(0o755)  # run as root, the student's code runs as 'nobody' in here
        cls.work = cls.tmp / "work"  # shared: the reference builds once

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check(self, kind: str) -> None:
        sub = make_submission(kind, self.tmp / "subs" / kind)
        # The run's shared reference cache where there is one: a grade links from it exactly
        # as it builds without one (test_linking compares the two).
        opts = pipeline.Options(submission=sub, labs=[find_lab(k) for k in LABS], seed=SEED,
                                work_dir=self.work, gpu=False, cache=needs.shared_cache())
        raw = json.loads(pipeline.grade(opts).to_json())
        self.check_stages(raw)
        got = normalise(raw)
        path = GOLDEN / f"{kind}.json"
        if UPDATE:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(got, indent=2) + "\n", encoding="utf-8")
        want = json.loads(path.read_text(encoding="utf-8"))
        self.maxDiff = None
        self.assertEqual(got, want, f"result.json of the {kind} differs from {path.name}")

    def check_stages(self, raw: dict) -> None:
        """Where the time went (grader/costs.py), volatile but there: the grade's own
        stages, and each lab's build and tests with the processes they started."""
        self.assertIn("prepare", raw["stages"])
        for lab in raw["labs"]:
            stages = lab["stages"]
            self.assertIn("build", stages, lab["lab"])
            if "tests" in stages:  # a lab whose build failed stops before its tests
                self.assertGreater(stages["tests"]["processes"], 0, lab["lab"])
                self.assertGreaterEqual(lab["wall_seconds"], stages["tests"]["wall_seconds"])

    def test_reference(self):
        self.check("reference")

    def test_skeleton(self):
        self.check("skeleton")


class NormaliserTest(unittest.TestCase):
    def test_volatile_fields_go_and_the_rest_stays(self):
        data = {"created": "x", "points": 1.5, "labs": [
            {"wall_seconds": 3.0, "build": {"ok": True, "seconds": 2.1},
             "parts": [{"reason": f"in {ROOT}/labs", "details": {"seconds": 1}}]}]}
        self.assertEqual(normalise(data), {"points": 1.5, "labs": [
            {"build": {"ok": True}, "parts": [{"reason": "in <ROOT>/labs", "details": {}}]}]})


if __name__ == "__main__":
    unittest.main()
