"""Deliberately wrong or cheating submissions, made from the recipes in
fixtures/<lab>/recipes.json applied to the one real solution or skeleton of that lab."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from grader.paths import ROOT

FIXTURES_ROOT = Path(__file__).resolve().parent / "fixtures"


class LabFixtures:
    """The recipes of one lab (fixtures/labNN/recipes.json)."""

    def __init__(self, folder: str, topic: str):
        self.dir = FIXTURES_ROOT / f"lab{folder[:2]}"
        self.student_rel = f"labs/{folder}/{topic}.cu"
        self.solution = ROOT / "solutions" / folder / f"{topic}.cu"
        self.skeleton = ROOT / self.student_rel

    def recipes(self) -> dict:
        data = json.loads((self.dir / "recipes.json").read_text())
        data.pop("_comment", None)
        return data

    def student_text(self, name: str) -> str:
        """The student file of submission `name`."""
        recipe = self.recipes()[name]
        text = (self.solution if recipe["base"] == "solution" else self.skeleton).read_text()
        for old, new in recipe.get("replace", []):
            if old not in text:
                raise ValueError(f"fixture {name}: {old!r} not found in the {recipe['base']}")
            text = text.replace(old, new, 1)
        if "append" in recipe:
            text += (self.dir / recipe["append"]).read_text()
        return text

    def make_submission(self, name: str, dest: Path) -> Path:
        """A folder laid out like the repository holding submission `name`; returns it."""
        target = dest / self.student_rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.student_text(name))
        for rel, old, new in self.recipes()[name].get("also", []):
            path = dest / rel
            source = path if path.exists() else ROOT / rel
            content = source.read_text()
            if old not in content:
                raise ValueError(f"fixture {name}: {old!r} not found in {rel}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content.replace(old, new))
        return dest

    def line_of(self, name: str, needle: str) -> int:
        """The line number of `needle` in submission `name`'s student file (1-based)."""
        with tempfile.TemporaryDirectory() as tmp:
            text = (self.make_submission(name, Path(tmp)) / self.student_rel).read_text()
        for number, line in enumerate(text.splitlines(), start=1):
            if needle in line:
                return number
        raise ValueError(needle)


LAB04 = LabFixtures("04_tiled_matmul", "tiled_matmul")
LAB05 = LabFixtures("05_boundary_checks", "boundary_checks")

# Lab 04 is the grader's end-to-end subject: its names at module level.
STUDENT_REL = LAB04.student_rel
recipes = LAB04.recipes
make_submission = LAB04.make_submission
line_of = LAB04.line_of
