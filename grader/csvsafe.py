"""CSV files a spreadsheet opens as data, never as formulas (OWASP, "CSV Injection").

A cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage return is a formula (or
starts one) in Excel, LibreOffice and Google Sheets: a roster name such as
`=HYPERLINK("http://…","click")` would run when the staff open the gradebook. Every CSV
the grader writes goes through `to_csv`, which puts a `'` before such a cell; numbers stay
numbers (`-2.5` is a number, not a formula). A cell that already begins with `'` before one
of those characters gets one more, so `plain_cell` gives every value back exactly as it
was: the grader reads its own gradebooks with `read_csv`.

The `'` shows in the cell in a text editor and is hidden by a spreadsheet; Canvas and
Moodle match students by their ids and e-mails, which never begin with these characters.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Iterable, Mapping

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def is_number(text: str) -> bool:
    return bool(_NUMBER.match(text))


def needs_quote(text: str) -> bool:
    """True when a spreadsheet could read `text` as a formula (or it begins with `'`
    before such a text, so that the quoting is undone exactly)."""
    if not text or is_number(text):
        return False
    if text[0] in TRIGGERS:
        return True
    return text[0] == "'" and needs_quote(text[1:])


def safe_cell(value: object) -> str:
    """The cell as written: `value` as text, a `'` before it where needs_quote says so."""
    text = "" if value is None else value if isinstance(value, str) else str(value)
    return "'" + text if needs_quote(text) else text


def plain_cell(text: str) -> str:
    """The value a cell written by safe_cell stands for."""
    return text[1:] if text[:1] == "'" and needs_quote(text[1:]) else text


def to_csv(rows: Iterable[Mapping[str, object]], columns: list[str]) -> str:
    """The CSV text of `rows` (dicts; keys outside `columns` left out, missing ones empty),
    the header and every cell passed through safe_cell."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([safe_cell(c) for c in columns])
    for row in rows:
        writer.writerow([safe_cell(row.get(c, "")) for c in columns])
    return buf.getvalue()


def read_csv(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """(columns, rows) of a CSV text, every cell through plain_cell (a leading BOM
    dropped)."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    lines = list(reader)
    if not lines:
        return [], []
    columns = [plain_cell(c) for c in lines[0]]
    rows = []
    for line in lines[1:]:
        if not line:
            continue
        cells = [plain_cell(c) for c in line] + [""] * (len(columns) - len(line))
        rows.append(dict(zip(columns, cells)))
    return columns, rows


__all__ = ["TRIGGERS", "is_number", "needs_quote", "safe_cell", "plain_cell", "to_csv",
           "read_csv"]
