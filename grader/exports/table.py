"""The terminal table: one row per lab with aligned columns and a unit on every number,
the reason beside every part that lost points, colour only on a terminal without NO_COLOR.

It fits the terminal's width (common.terminal_width): the columns where they fit, else each
lab stacked (its title and points on a line, its other cells on the lines below); text is
wrapped between words, never cut."""

from __future__ import annotations

import os
import sys

from ..parts import metric
from ..result import GradeResult, LabResult, PartResult
from .common import (EPS, one_line, FAIL, FLAG, PASS, SKIP, fmt_points, gpu_share,
                     grader_problems, lab_reason, part_outcome, part_reason,
                     part_speed_of_light, submission_name, terminal_width, test_counts,
                     timing_summary, waiting_label, wrap)

# (header, usual width, alignment): the usual widths where the terminal has room for them
COLUMNS = (("Lab", 34, "<"), ("Tests", 32, ">"), ("Time", 11, ">"), ("Speedup", 9, ">"),
           ("vs ref", 10, ">"), ("Points", 14, ">"))
GAP = "  "  # between two columns
INDENT = "    "  # a stacked lab's cells below its title
GREEN, YELLOW, RED, CYAN, BOLD, DIM, RESET = ("\033[32m", "\033[33m", "\033[31m", "\033[36m",
                                              "\033[1m", "\033[2m", "\033[0m")
DASH = "-"
NO_WRAP = 1 << 30  # a width for text a web page shows (it wraps it): one line per text


def use_color(color: bool | None) -> bool:
    if color is not None:
        return color
    if os.environ.get("NO_COLOR"):
        return False
    # CLICOLOR_FORCE: a Slurm job (--slurm) whose output a terminal shows in the end
    return sys.stdout.isatty() or os.environ.get("CLICOLOR_FORCE", "0") not in ("", "0")


def needs_gpu(part: PartResult) -> bool:
    """A part left ungraded only because there is no CUDA device here."""
    return part.status == "not_graded" and "no cuda device" in (part.reason or "").lower()


def reported_only(part: PartResult) -> bool:
    """A profiler metric shown beside the score, worth no points either way."""
    return part.kind == metric.KIND and part.max_points <= EPS


def reported_value(part: PartResult, limit: int = 200) -> str:
    """What a reported-only metric measured, in one line (cut to `limit` characters; 0:
    whole)."""
    if part.reason:
        return one_line(part.reason, limit)
    value = part.details.get("value") if isinstance(part.details, dict) else None
    return f"Measured {value:.4g} (reported, not scored)." if isinstance(
        value, (int, float)) else "Reported, not scored."


def tests_phrase(lab: LabResult, no_gpu: bool) -> str:
    """"3 passed, 1 failed, 4 need a GPU": never a fraction that reads unrun tests as failed."""
    counts = test_counts(lab)
    if not counts["total"]:
        return ""
    words = [f"{counts['passed']} passed"]
    if counts["failed"]:
        words.append(f"{counts['failed']} failed")
    if counts["not_run"]:
        words.append(f"{counts['not_run']} " + ("need a GPU" if no_gpu else "not run"))
    return ", ".join(words)


def gradable_phrase(lab: LabResult) -> str:
    """"25/25 gradable here, 75 need a GPU" when parts wait for a GPU, else ""."""
    waiting = sum(gpu_share(p) for p in lab.parts if needs_gpu(p))
    if waiting <= EPS:
        return ""
    here = [p for p in lab.parts if p.status not in ("not_graded", "not_measured")]
    got = sum(p.points for p in here) + sum(p.points for p in lab.parts if needs_gpu(p))
    out_of = sum(p.max_points for p in here) + sum(p.max_points - gpu_share(p)
                                                   for p in lab.parts if needs_gpu(p))
    return (f"{fmt_points(got)}/{fmt_points(out_of)} gradable here, "
            f"{fmt_points(waiting)} need a GPU")


def _lab_cells(lab: LabResult, no_gpu: bool = False) -> list[str]:
    t = timing_summary(lab)
    tests = tests_phrase(lab, no_gpu) or DASH
    return [
        f"{lab.lab[:2]} {lab.title}",
        tests,
        f"{t['ms']:.3g} ms" if t["ms"] is not None else DASH,
        f"{t['speedup']:.2f}x" if t["speedup"] is not None else
        ("wrong" if t.get("wrong_output") else DASH),
        f"{t['vs_reference']:.2f}x ref" if t["vs_reference"] is not None else DASH,
        f"{fmt_points(lab.points)}/{fmt_points(lab.max_points)} pts",
    ]


def _widths(rows: list[list[str]], columns: int) -> list[int] | None:
    """The columns' widths for `rows` (the header, the labs', the total) on a terminal of
    `columns`: the usual ones (COLUMNS) widened to the widest cell where they fit, else each
    column's widest cell, else None: too narrow for columns (the stacked layout)."""
    widest = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    for widths in ([max(w, usual) for w, (_, usual, _) in zip(widest, COLUMNS)], widest):
        if sum(widths) + len(GAP) * (len(widths) - 1) <= columns:
            return widths
    return None


def _row(cells: list[str], widths: list[int]) -> str:
    return GAP.join(f"{cell:{align}{width}}"
                    for (_, _, align), width, cell in zip(COLUMNS, widths, cells))


def _stacked(left: str, right: str, columns: int) -> list[str]:
    """A stacked lab's first line: `left` (its title), then `right` (its points) at the
    terminal's right edge; a title too long for the line goes on in lines of its own."""
    room = max(columns - len(right) - len(GAP), 1)
    lines = wrap(left, "", INDENT, room) if len(left) > room else [left]
    return [f"{lines[0]:<{room}}{GAP}{right}"] + lines[1:]


def _cells_below(cells: list[str], columns: int) -> list[str]:
    """A stacked lab's other cells, named ("Tests: 3 passed   Time: 7.41 ms"), as
    many on a line as fit; a cell longer than a line is wrapped between its words."""
    fields = [f"{name}: {cell}" for (name, _, _), cell in zip(COLUMNS[1:-1], cells[1:-1])
              if cell not in ("", DASH)]
    lines: list[str] = []
    for field in fields:
        if lines and len(lines[-1]) + 3 + len(field) <= columns:
            lines[-1] += "   " + field
        else:
            lines += wrap(field, INDENT, INDENT + "  ", columns)
    return lines


def _paint(text: str, code: str, on: bool) -> str:
    return f"{code}{text}{RESET}" if on and code else text


def _points_color(points: float, max_points: float, outcome: str | None = None) -> str:
    if outcome in (SKIP,):
        return CYAN
    if outcome == FLAG:
        return YELLOW
    if max_points <= 0:
        return RED if outcome == FAIL else ""
    if points >= max_points - EPS:
        return GREEN
    return YELLOW if points > EPS else RED


def _block(cell: str, text: str, code: str, on: bool, width: int | None,
           text_code: str = "") -> list[str]:
    """A line of the table below a lab's row: `cell` (points, right-aligned, painted `code`)
    then `text`, wrapped to the terminal's width under itself, never cutting a word."""
    lead = " " * (4 + max(14, len(cell)) + 2)
    lines = wrap(text, lead, lead, width)
    out = []
    for i, line in enumerate(lines):
        shown = _paint(line[len(lead):], text_code, on)
        out.append(("    " + _paint(f"{cell:>14}", code, on) + "  " if i == 0 else lead)
                   + shown)
    return out


def terminal_table(result: GradeResult, color: bool | None = None,
                   width: int | None = None) -> str:
    """The table; every text under a lab's row (reasons, hints, the parts that need a GPU)
    is wrapped to `width` (default: the terminal's, common.terminal_width), never cut."""
    on = use_color(color)
    columns = terminal_width(width)
    lines = []
    where = (result.device or {}).get("name") if result.device else None
    head = f"Grade for {submission_name(result)} (seed {result.seed}"
    head += f", {where})" if where else ", no CUDA device: GPU parts not graded)"
    lines += [_paint(line, BOLD, on) for line in wrap(head, "", INDENT, columns)]
    no_gpu = not result.device
    header = [c[0] for c in COLUMNS]
    total = f"{fmt_points(result.points)}/{fmt_points(result.max_points)} pts"
    total_cells = ["Total", "", "", "", "", total]
    every = [_lab_cells(lab, no_gpu) for lab in result.labs]
    widths = _widths([header, total_cells, *every], columns)

    def first_lines(cells: list[str]) -> list[str]:
        """A row of the columns, or a stacked lab's lines: its points end the first line
        either way."""
        if widths is None:
            return _stacked(cells[0], cells[-1], columns) + _cells_below(cells, columns)
        return [_row(cells, widths)]

    top = first_lines(header)[0]
    rule = "-" * (columns if widths is None else len(top))
    lines += [_paint(top, BOLD, on), rule]
    for lab, cells in zip(result.labs, every):
        row, *below = first_lines(cells)
        all_skipped = lab.parts and all(part_outcome(p) == SKIP for p in lab.parts
                                        if p.max_points > 0)
        code = _points_color(lab.points, lab.max_points, SKIP if all_skipped else None)
        cut = len(row) - len(cells[-1])
        line = row[:cut] + _paint(row[cut:], code, on)
        listed = [p for p in lab.parts if part_outcome(p) != PASS and not needs_gpu(p)
                  and not reported_only(p)]
        summary = gradable_phrase(lab)
        if not summary and not listed and lab.points < lab.max_points - EPS:
            summary = lab_reason(lab, limit=0)  # nothing below says why
        if summary and not below and len(row) + 2 + len(summary) <= columns:
            line += "  " + _paint(summary, DIM, on)
            summary = ""
        lines += [line, *below]
        if summary:  # too long beside the row: under it
            lines += _block("", summary, "", on, columns, DIM)
        waiting = [p for p in lab.parts if needs_gpu(p) and not reported_only(p)]
        if waiting:
            # the figure of gradable_phrase: what waits of each part, a bonus apart
            pts = f"{fmt_points(sum(gpu_share(p) for p in waiting))} pts"
            names = ", ".join(waiting_label(p) for p in waiting)
            lines += _block(pts, f"need a GPU: {names}", CYAN, on, columns)
        for p in lab.parts:
            if reported_only(p) and p.status not in ("not_graded", "not_measured"):
                lines += _block("reported", f"{p.name}: {reported_value(p, 0)}", "", on,
                                columns)
            if p in listed:
                outcome = part_outcome(p)
                reason = one_line(part_reason(p))
                pts = f"{fmt_points(p.points)}/{fmt_points(p.max_points)} pts"
                tag = {SKIP: "not graded" if p.status == "not_graded" else "not measured",
                       FLAG: "review"}.get(outcome, "")
                label = f"{p.name}" + (f" [{tag}]" if tag else "")
                shade = _points_color(p.points, p.max_points, outcome)
                lines += _block(pts, f"{label}: {reason}", shade, on, columns)
            sol = part_speed_of_light(p)
            if sol is not None:  # a fraction shown under the speed part, worth no points
                lines += _block("", sol.text(), "", on, columns)
    lines.append(rule)
    lines += [_paint(line, BOLD, on) for line in first_lines(total_cells)]
    for err in grader_problems(result):
        lines += [_paint(ln, RED, on) for ln in wrap(f"grader problem: {err}", "", "    ",
                                                      columns)]
    return "\n".join(lines) + "\n"
