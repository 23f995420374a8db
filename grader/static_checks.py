"""Static checks on the student's file: the compiled object's undefined symbols and the source.

A rule names a function or a prefix ("fopen", "exec", "cublas", "thrust::"). It matches a
demangled symbol when the symbol contains the rule starting at an identifier boundary, so
"exit" catches `exit` and `std::exit` but not `__cxa_atexit`, and "exec" catches `execvp`.
A symbol matched by an allow rule is never reported.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .tools import find_tool


@dataclass
class Violation:
    kind: str  # "symbol" or "source"
    rule: str
    found: str  # the symbol, or "file:line: text"

    def describe(self) -> str:
        if self.kind == "symbol":
            return f"the compiled file calls `{self.found}`, which this lab forbids (rule '{self.rule}')"
        return f"{self.found}: forbidden in this lab (rule '{self.rule}')"


def _rule_re(rule: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(rule))


def symbol_matches(rule: str, symbol: str) -> bool:
    return _rule_re(rule).search(symbol) is not None


def undefined_symbols(obj: Path) -> list[str]:
    """Demangled undefined symbols of an object file; raises RuntimeError when nm fails."""
    nm = find_tool("nm")
    if not nm:
        raise RuntimeError("nm not found (binutils)")
    proc = subprocess.run([nm, "-C", "--undefined-only", str(obj)], capture_output=True,
                          text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"nm failed on {obj.name}: {proc.stderr.strip()[:300]}")
    symbols = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("U "):
            symbols.append(line[2:].strip())
        elif line and not line.endswith(":"):
            symbols.append(line.split(None, 1)[-1])
    return symbols


def check_symbols(symbols: list[str], deny: list[str], allow: list[str]) -> list[Violation]:
    found = []
    for sym in symbols:
        if any(symbol_matches(a, sym) for a in allow):
            continue
        for rule in deny:
            if symbol_matches(rule, sym):
                found.append(Violation("symbol", rule, sym))
                break
    return found


def strip_comments(source: str) -> str:
    """C/C++ source with comments blanked (string literals kept, line numbers kept)."""
    out = []
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if c == "\n" else " " for c in source[i:j]))
            i = j
        elif ch in "\"'":
            j = i + 1
            while j < n and source[j] != ch and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            out.append(source[i:j + 1])
            i = j + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _source_rule_re(rule: str) -> re.Pattern[str]:
    """`rule` as a regex that allows any spacing between tokens ("asm(" finds "asm (")."""
    rule = rule.strip()
    parts = [r"(?<![A-Za-z0-9_])" if re.match(r"\w", rule) else ""]
    for i, ch in enumerate(rule):
        if ch.isspace():
            if not rule[i - 1].isspace():
                parts.append(r"\s*")
            continue
        parts.append(re.escape(ch))
        nxt = rule[i + 1] if i + 1 < len(rule) else ""
        if nxt and not nxt.isspace() and not (ch.isalnum() or ch == "_") or \
                (nxt and not (nxt.isalnum() or nxt == "_") and not nxt.isspace()):
            parts.append(r"\s*")
    return re.compile("".join(parts))


def check_source(text: str, display: str, deny: list[str]) -> list[Violation]:
    """deny_source patterns, matched per line with any spacing between tokens, outside comments."""
    found = []
    rules = [(r, _source_rule_re(r)) for r in deny if r.strip()]
    for number, line in enumerate(strip_comments(text).splitlines(), start=1):
        for rule, pattern in rules:
            if pattern.search(line):
                found.append(Violation("source", rule, f"{display}:{number}: {line.strip()[:120]}"))
    return found
