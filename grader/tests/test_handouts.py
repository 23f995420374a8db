"""The handouts against what they describe: the GPU limits they send the student to
`doctor` for are ones doctor prints, every step that needs a GPU says so, and each "What is
graded" table has the rubric's parts and points (labs/*/grading.toml)."""

from __future__ import annotations

import re
import unittest

from grader import device_limits
from grader.parts import kinds
from grader.paths import ROOT, discover_labs
from grader.rubric import load_rubric

GPU_STEP = re.compile(r"_bench_student|^\s*ncu |compute-sanitizer ", re.M)


def handouts():
    return sorted((ROOT / "handouts").glob("[0-9][0-9]_*.md"))


def graded_table(text: str) -> list[tuple[str, float, str]]:
    """(part, points, graded without a GPU?) rows of the "What is graded" table."""
    section = text.split("What is graded", 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"[\d.]+", cells[1]):
            rows.append((cells[0], float(cells[1]), cells[2]))
    return rows


def bonus_table(text: str) -> list[float]:
    """The points of the "bonus part" table (written "+N"), if the handout has one."""
    return [float(m) for m in re.findall(r"^\|[^|\n]+\|\s*\+([\d.]+)\s*\|", text, re.M)]


class HandoutTest(unittest.TestCase):
    def test_doctor_prints_what_they_ask_for(self):
        labels = {label for _, _, label, _ in device_limits.FIELDS}
        for path in handouts():
            paragraphs = path.read_text().split("\n\n")
            for i, para in enumerate(paragraphs):
                if "grader doctor" not in para:
                    continue
                if para.lstrip().startswith("```"):  # a command block: the next paragraph
                    para = paragraphs[i + 1]
                else:  # the parenthesis after the command
                    para = re.search(r"grader doctor`?[^(]*\(([^)]*)\)", para, re.S).group(1)
                names = [" ".join(n.split()) for n in re.findall(r"\*([^*]+)\*", para)]
                self.assertTrue(names, f"{path.name}: names no field of doctor's: {para}")
                for name in names:
                    self.assertIn(name, labels, f"{path.name}: doctor prints no '{name}'")

    def test_every_gpu_step_is_marked(self):
        for path in handouts():
            text = path.read_text()
            for block in re.finditer(r"```sh\n.*?```", text, re.S):
                if GPU_STEP.search(block.group(0)):
                    before = text[max(0, block.start() - 200):block.start()]
                    self.assertIn("Needs a GPU", before, f"{path.name}: {block.group(0)}")

    def test_what_is_graded_matches_the_rubric(self):
        for lab in discover_labs(ROOT):
            rubric = load_rubric(lab)
            rows = graded_table((ROOT / "handouts" / f"{lab.folder}.md").read_text())
            parts = [g.points for g in rubric.tables["correctness"] if not g.bonus]
            if rubric.tables["memory_safety"] and rubric.tables["memory_safety"].points:
                parts.append(rubric.tables["memory_safety"].points)
            if rubric.tables["performance"] and rubric.tables["performance"].points:
                parts.append(rubric.tables["performance"].points)
            metrics = [m.points for m in rubric.tables["metrics"] if m.points > 0]
            shown = sorted(p for _, p, _ in rows)
            # the profiler metrics one row each, or one row for all of them
            self.assertIn(shown, (sorted(parts + metrics), sorted(parts + [sum(metrics)])),
                          lab.folder)
            self.assertAlmostEqual(sum(p for _, p, _ in rows), rubric.max_points)
            text = (ROOT / "handouts" / f"{lab.folder}.md").read_text()
            self.assertAlmostEqual(sum(bonus_table(text)), sum(kinds.bonus_offers(rubric).values()),
                                   msg=lab.folder)
            for name, points, host in rows:
                gpu_only = re.match(r"(Memory safety|Speed|`?ncu|Achieved|Sectors)", name)
                if gpu_only:
                    self.assertTrue(host.startswith("no"), f"{lab.folder}: {name}: {host}")


if __name__ == "__main__":
    unittest.main()
