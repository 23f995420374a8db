"""Catch2 test specs, matched in Python the way Catch2 matches them.

The rubric names test cases by Catch2 spec ("[lab04][tiled]", "~[given]", a test name); the
grader maps each reported case to the groups whose spec it matches. Supported: tags, names
with `*` at either end, `~` (and `exclude:`) negation, `,` for "or", adjacent terms for
"and", double quotes and backslash escapes. Matching ignores case, as Catch2 does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable


@dataclass(frozen=True)
class Term:
    kind: str  # "tag" or "name"
    value: str  # lower case
    negated: bool = False

    def matches(self, name: str, tags: frozenset[str]) -> bool:
        if self.kind == "tag":
            hit = self.value in tags
        else:
            hit = _name_matches(self.value, name.lower())
        return hit != self.negated


def _name_matches(pattern: str, name: str) -> bool:
    starts, ends = pattern.startswith("*"), pattern.endswith("*") and len(pattern) > 1
    core = pattern.strip("*") if (starts or ends) else pattern
    if starts and ends:
        return core in name
    if starts:
        return name.endswith(core)
    if ends:
        return name.startswith(core)
    return name == core


@dataclass(frozen=True)
class Spec:
    text: str
    filters: tuple[tuple[Term, ...], ...] = field(default=())

    def matches(self, name: str, tags: Iterable[str]) -> bool:
        """True when the case (its name and tags, with or without brackets) is selected."""
        tagset = frozenset(t.strip("[]").lower() for t in tags)
        if not self.filters:
            return True
        return any(all(t.matches(name, tagset) for t in f) for f in self.filters)


def parse_spec(text: str) -> Spec:
    filters: list[tuple[Term, ...]] = []
    terms: list[Term] = []
    buf: list[str] = []
    negate = False
    mode = "name"  # "name", "tag", "quoted"
    i = 0

    def flush_name() -> None:
        nonlocal negate
        value = "".join(buf).strip()
        buf.clear()
        if value:
            terms.append(Term("name", value.lower(), negate))
            negate = False

    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            buf.append(text[i + 1])
            i += 2
            continue
        if mode == "tag":
            if ch == "]":
                tag = "".join(buf).strip().lower()
                buf.clear()
                terms.append(Term("tag", tag, negate))
                negate = False
                mode = "name"
            else:
                buf.append(ch)
        elif mode == "quoted":
            if ch == '"':
                value = "".join(buf)
                buf.clear()
                terms.append(Term("name", value.lower(), negate))
                negate = False
                mode = "name"
            else:
                buf.append(ch)
        else:
            if ch == "[":
                flush_name()
                mode = "tag"
            elif ch == '"':
                flush_name()
                mode = "quoted"
            elif ch == ",":
                flush_name()
                if terms:
                    filters.append(tuple(terms))
                terms = []
                negate = False
            elif ch == "~" and not "".join(buf).strip():
                buf.clear()
                negate = True
            elif text.startswith("exclude:", i) and not "".join(buf).strip():
                buf.clear()
                negate = True
                i += len("exclude:")
                continue
            else:
                buf.append(ch)
        i += 1
    if mode != "name":
        raise ValueError(f"unterminated {'tag' if mode == 'tag' else 'quote'} in spec {text!r}")
    flush_name()
    if terms:
        filters.append(tuple(terms))
    return Spec(text, tuple(filters))


def spec_matches(spec: str, name: str, tags: Iterable[str]) -> bool:
    return parse_spec(spec).matches(name, tags)


def name_spec(name: str) -> str:
    """A spec that selects exactly the case called `name` (special characters escaped)."""
    return "".join("\\" + ch if ch in '\\,[]"~*' else ch for ch in name)
