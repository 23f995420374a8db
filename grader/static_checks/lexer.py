"""A small C++ lexer for the source checks: tokens of the student's preprocessed lines (each
with its source line), qualified names read from a token list, and raw source with its
comments blanked."""

from __future__ import annotations

import re
from dataclasses import dataclass


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+|\n)
  | (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^ ()\\\t\n]{0,16})\((?:.|\n)*?\)(?P=delim)")
  | (?P<str>(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*")
  | (?P<chr>(?:u8|u|U|L)?'(?:\\.|[^'\\\n])*')
  | (?P<num>\.?\d(?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*)
  | (?P<id>[A-Za-z_$\x80-\U0010ffff][A-Za-z0-9_$\x80-\U0010ffff]*)
  | (?P<punct>::|->|\.\.\.|.)
""", re.VERBOSE)


@dataclass(frozen=True)
class Tok:
    kind: str  # id, str, num, punct
    text: str
    line: int


def tokens_of(own: list[tuple[int, str]]) -> list[Tok]:
    text = "\n".join(t for _, t in own)
    lines = [n for n, _ in own]
    out, row = [], 0
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        assert kind is not None  # every alternative of _TOKEN is a named group
        value = m.group(0)
        if kind == "ws":
            row += value.count("\n")
            continue
        if kind == "delim":
            kind = "raw"
        if m.group("raw"):
            kind = "str"
        elif kind == "chr":
            kind = "str"
        out.append(Tok(kind, value, lines[min(row, len(lines) - 1)] if lines else 0))
        row += value.count("\n")
    return out


def closing(toks: list[Tok], i: int, opens: str, closes: str, stops: tuple[str, ...] = ()) -> int:
    """The index of the token that closes the bracket opened at toks[i] (counting the
    brackets in `opens` and `closes`), or of the first token in `stops` before it, or
    len(toks) when there is neither."""
    depth, j, n = 0, i, len(toks)
    while j < n:
        x = toks[j].text
        if x in opens:
            depth += 1
        elif x in closes:
            depth -= 1
            if depth == 0:
                break
        elif x in stops:
            break
        j += 1
    return j


def qualified_name(toks: list[Tok], i: int) -> tuple[list[str], int]:
    """The qualified name starting at toks[i] (an identifier or `::`): its components
    (template arguments dropped, operator names joined) and the index after it."""
    parts: list[str] = []
    n = len(toks)
    if i < n and toks[i].text == "::":
        i += 1
    while i < n:
        t = toks[i]
        if t.text == "~" and i + 1 < n and toks[i + 1].kind == "id":
            parts.append("~" + toks[i + 1].text)
            i += 2
        elif t.kind == "id" and t.text == "operator":
            name, i = "operator", i + 1
            if i < n and toks[i].text in ("new", "delete"):
                name += " " + toks[i].text
                i += 1
                if i + 1 < n and toks[i].text == "[" and toks[i + 1].text == "]":
                    name += "[]"
                    i += 2
            elif i + 1 < n and toks[i].text in "([" and toks[i + 1].text in ")]":
                name += toks[i].text + toks[i + 1].text
                i += 2
            elif i < n and toks[i].kind == "punct":
                name += toks[i].text
                i += 1
                while i < n and toks[i].kind == "punct" and toks[i].text in "<>=&|+-*" and \
                        toks[i].text != "(":
                    name += toks[i].text
                    i += 1
            elif i < n and toks[i].kind == "str":  # operator"" _suffix
                name += '""'
                i += 1
                if i < n and toks[i].kind == "id":
                    name += " " + toks[i].text
                    i += 1
            parts.append(name)
            return parts, i
        elif t.kind == "id":
            parts.append(t.text)
            i += 1
        else:
            break
        if i < n and toks[i].text == "<" and parts and not parts[-1].startswith("operator"):
            j = closing(toks, i, "<([{", ">)]}", (";",))
            if j < n and toks[j].text == ">":
                i = j + 1
        if i < n and toks[i].text == "::" and i + 1 < n and \
                (toks[i + 1].kind == "id" or toks[i + 1].text == "~"):
            i += 1
            continue
        break
    return parts, i


def strip_comments(source: str) -> str:
    """C/C++ source with comments blanked (string literals kept, line numbers kept)."""
    out = []
    i, n = 0, len(source)
    while i < n:
        ch = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            while j > 0 and j < n and source[j - 1] == "\\":  # a spliced // comment goes on
                k = source.find("\n", j + 1)
                out.append("\n")
                j = n if k < 0 else k
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
