"""Lab 04 submissions made from the recipes in fixtures/lab04/recipes.json."""

from __future__ import annotations

import json
from pathlib import Path

from grader.paths import ROOT

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lab04"
STUDENT_REL = "labs/04_tiled_matmul/tiled_matmul.cu"
SOLUTION = ROOT / "solutions" / "04_tiled_matmul" / "tiled_matmul.cu"
SKELETON = ROOT / STUDENT_REL


def recipes() -> dict:
    data = json.loads((FIXTURES / "recipes.json").read_text())
    data.pop("_comment", None)
    return data


def make_submission(name: str, dest: Path) -> Path:
    """A folder laid out like the repository holding submission `name`; returns it."""
    recipe = recipes()[name]
    text = (SOLUTION if recipe["base"] == "solution" else SKELETON).read_text()
    for old, new in recipe.get("replace", []):
        if old not in text:
            raise ValueError(f"fixture {name}: {old!r} not found in the {recipe['base']}")
        text = text.replace(old, new, 1)
    if "append" in recipe:
        text += (FIXTURES / recipe["append"]).read_text()
    target = dest / STUDENT_REL
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    for rel, old, new in recipe.get("also", []):
        path = dest / rel
        source = path if path.exists() else ROOT / rel
        content = source.read_text()
        if old not in content:
            raise ValueError(f"fixture {name}: {old!r} not found in {rel}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content.replace(old, new))
    return dest


def line_of(name: str, needle: str) -> int:
    """The line number of `needle` in submission `name`'s student file (1-based)."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        text = (make_submission(name, Path(tmp)) / STUDENT_REL).read_text()
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    raise ValueError(needle)
