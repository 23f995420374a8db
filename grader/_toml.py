"""A small TOML reader for Python 3.10, where `tomllib` is not in the standard library.

It reads the subset the rubrics use: comments, bare/quoted/dotted keys, [tables],
[[arrays of tables]], basic and literal strings (single- and multi-line), integers and
floats (with underscores, signs, exponents, inf/nan, 0x/0o/0b), booleans, arrays (also
spread over several lines, with comments and a trailing comma) and inline tables.
Dates and times are not supported and raise TOMLDecodeError. On 3.11+ the grader uses
`tomllib`; a test checks that both agree on every rubric in the repository.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["TOMLDecodeError", "loads"]


class TOMLDecodeError(ValueError):
    """Raised for text that is not TOML (or uses something this reader does not support)."""


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_NUMBER = re.compile(
    r"[+-]?(?:0x[0-9A-Fa-f_]+|0o[0-7_]+|0b[01_]+|inf|nan|"
    r"(?:\d[\d_]*)(?:\.\d[\d_]*)?(?:[eE][+-]?\d[\d_]*)?)")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.root: dict[str, Any] = {}
        # tables created by a [header] or as a parent of one (may be re-opened implicitly),
        # and those defined explicitly (may not be defined twice)
        self.explicit: set[int] = set()
        self.inline: set[int] = set()  # inline tables and arrays: frozen once written

    # -- errors and position ------------------------------------------------------------
    def error(self, message: str) -> TOMLDecodeError:
        line = self.text.count("\n", 0, self.pos) + 1
        col = self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1
        return TOMLDecodeError(f"{message} (at line {line}, column {col})")

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos:self.pos + n]

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def skip_ws(self) -> None:
        while self.peek() in (" ", "\t"):
            self.pos += 1

    def skip_comment(self) -> None:
        if self.peek() == "#":
            while not self.at_end() and self.peek() != "\n":
                ch = self.peek()
                if ch != "\t" and (ord(ch) < 0x20 or ord(ch) == 0x7F):
                    raise self.error("control character in a comment")
                self.pos += 1

    def skip_ws_comments_newlines(self) -> None:
        while True:
            self.skip_ws()
            self.skip_comment()
            if self.peek() == "\n":
                self.pos += 1
            elif self.peek(2) == "\r\n":
                self.pos += 2
            else:
                return

    def end_of_line(self) -> None:
        self.skip_ws()
        self.skip_comment()
        if self.at_end():
            return
        if self.peek() == "\n":
            self.pos += 1
        elif self.peek(2) == "\r\n":
            self.pos += 2
        else:
            raise self.error(f"expected the end of the line, found {self.peek()!r}")

    # -- document ------------------------------------------------------------------------
    def parse(self) -> dict[str, Any]:
        current = self.root
        while True:
            self.skip_ws_comments_newlines()
            if self.at_end():
                return self.root
            if self.peek(2) == "[[":
                self.pos += 2
                keys = self.key()
                self.skip_ws()
                if self.peek(2) != "]]":
                    raise self.error("expected ']]' to close the array-of-tables header")
                self.pos += 2
                current = self.open_array_table(keys)
            elif self.peek() == "[":
                self.pos += 1
                keys = self.key()
                self.skip_ws()
                if self.peek() != "]":
                    raise self.error("expected ']' to close the table header")
                self.pos += 1
                current = self.open_table(keys)
            else:
                self.key_value(current)
            self.end_of_line()

    def open_table(self, keys: list[str]) -> dict[str, Any]:
        table = self.root
        for i, k in enumerate(keys):
            last = i == len(keys) - 1
            if k not in table:
                table[k] = {}
            value = table[k]
            if isinstance(value, list) and not last and id(value) not in self.inline:
                value = value[-1]
            if not isinstance(value, dict) or id(value) in self.inline:
                raise self.error(f"'{'.'.join(keys[:i + 1])}' is already defined as a value")
            if last:
                if id(value) in self.explicit:
                    raise self.error(f"table [{'.'.join(keys)}] is defined twice")
                self.explicit.add(id(value))
            table = value
        return table

    def open_array_table(self, keys: list[str]) -> dict[str, Any]:
        parent = self.open_parent(keys[:-1])
        k = keys[-1]
        if k not in parent:
            parent[k] = []
        array = parent[k]
        if not isinstance(array, list) or id(array) in self.inline:
            raise self.error(f"'{'.'.join(keys)}' is already defined and is not an array of tables")
        table: dict[str, Any] = {}
        self.explicit.add(id(table))
        array.append(table)
        return table

    def open_parent(self, keys: list[str]) -> dict[str, Any]:
        table = self.root
        for i, k in enumerate(keys):
            if k not in table:
                table[k] = {}
            value = table[k]
            if isinstance(value, list) and id(value) not in self.inline:
                value = value[-1]
            if not isinstance(value, dict) or id(value) in self.inline:
                raise self.error(f"'{'.'.join(keys[:i + 1])}' is already defined as a value")
            table = value
        return table

    def key_value(self, table: dict[str, Any]) -> None:
        keys = self.key()
        self.skip_ws()
        if self.peek() != "=":
            raise self.error("expected '=' after the key")
        self.pos += 1
        self.skip_ws()
        value = self.value()
        target = table
        for i, k in enumerate(keys[:-1]):
            if k not in target:
                target[k] = {}
            target = target[k]
            if not isinstance(target, dict) or id(target) in self.inline or id(target) in self.explicit:
                raise self.error(f"'{'.'.join(keys[:i + 1])}' is already defined")
        if keys[-1] in target:
            raise self.error(f"key '{'.'.join(keys)}' is defined twice")
        target[keys[-1]] = value

    # -- keys ----------------------------------------------------------------------------
    def key(self) -> list[str]:
        keys = []
        while True:
            self.skip_ws()
            ch = self.peek()
            if ch == '"':
                keys.append(self.basic_string())
            elif ch == "'":
                keys.append(self.literal_string())
            else:
                m = _BARE_KEY.match(self.text, self.pos)
                if not m:
                    raise self.error("expected a key")
                keys.append(m.group(0))
                self.pos = m.end()
            self.skip_ws()
            if self.peek() != ".":
                return keys
            self.pos += 1

    # -- values --------------------------------------------------------------------------
    def value(self) -> Any:
        ch = self.peek()
        if self.peek(3) == '"""':
            return self.multiline_basic_string()
        if self.peek(3) == "'''":
            return self.multiline_literal_string()
        if ch == '"':
            return self.basic_string()
        if ch == "'":
            return self.literal_string()
        if ch == "[":
            return self.array()
        if ch == "{":
            return self.inline_table()
        if self.text.startswith("true", self.pos) and not self._word_continues(4):
            self.pos += 4
            return True
        if self.text.startswith("false", self.pos) and not self._word_continues(5):
            self.pos += 5
            return False
        return self.number()

    def _word_continues(self, n: int) -> bool:
        nxt = self.text[self.pos + n:self.pos + n + 1]
        return bool(nxt) and (nxt.isalnum() or nxt in "_-")

    def number(self) -> int | float:
        m = _NUMBER.match(self.text, self.pos)
        if not m or not m.group(0) or m.group(0) in "+-":
            raise self.error("expected a value (string, number, boolean, array or table)")
        raw = m.group(0)
        end = m.end()
        nxt = self.text[end:end + 1]
        if nxt and (nxt.isalnum() or nxt in "_-:."):
            raise self.error(f"unsupported value starting {self.text[self.pos:end + 1]!r}"
                             " (dates and times are not supported)")
        self.pos = end
        if "__" in raw or raw.endswith("_") or "_." in raw or "._" in raw:
            raise self.error(f"misplaced underscore in number {raw!r}")
        sign = -1 if raw.startswith("-") else 1
        body = raw.lstrip("+-").replace("_", "")
        if body in ("inf", "nan"):
            return sign * math.inf if body == "inf" else math.nan
        if body[:2] in ("0x", "0o", "0b"):
            if raw[0] in "+-":
                raise self.error("a sign is not allowed on hexadecimal, octal or binary integers")
            return int(body[2:], {"0x": 16, "0o": 8, "0b": 2}[body[:2]])
        if any(c in body for c in ".eE"):
            return float(raw.replace("_", ""))
        if len(body) > 1 and body.startswith("0"):
            raise self.error(f"leading zero in integer {raw!r}")
        return sign * int(body)

    def basic_string(self) -> str:
        self.pos += 1
        out = []
        while True:
            if self.at_end():
                raise self.error("unterminated string")
            ch = self.peek()
            if ch == '"':
                self.pos += 1
                return "".join(out)
            if ch == "\n":
                raise self.error("newline in a single-line string")
            if ch == "\\":
                out.append(self.escape())
                continue
            self.check_char(ch)
            out.append(ch)
            self.pos += 1

    def escape(self) -> str:
        self.pos += 1
        ch = self.peek()
        if ch in _ESCAPES:
            self.pos += 1
            return _ESCAPES[ch]
        if ch in ("u", "U"):
            n = 4 if ch == "u" else 8
            digits = self.text[self.pos + 1:self.pos + 1 + n]
            if len(digits) != n or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise self.error("bad unicode escape")
            self.pos += 1 + n
            try:
                return chr(int(digits, 16))
            except ValueError as err:
                raise self.error("bad unicode escape") from err
        raise self.error(f"unknown escape '\\{ch}'")

    def literal_string(self) -> str:
        self.pos += 1
        end = self.text.find("'", self.pos)
        newline = self.text.find("\n", self.pos)
        if end < 0 or (0 <= newline < end):
            raise self.error("unterminated literal string")
        value = self.text[self.pos:end]
        for ch in value:
            self.check_char(ch)
        self.pos = end + 1
        return value

    def multiline_basic_string(self) -> str:
        self.pos += 3
        if self.peek() == "\n":
            self.pos += 1
        elif self.peek(2) == "\r\n":
            self.pos += 2
        out = []
        while True:
            if self.at_end():
                raise self.error("unterminated multi-line string")
            if self.peek(3) == '"""':
                # up to two quotes may end the content right before the closing delimiter
                extra = 0
                while self.text[self.pos + 3 + extra:self.pos + 4 + extra] == '"' and extra < 2:
                    extra += 1
                out.append('"' * extra)
                self.pos += 3 + extra
                return "".join(out)
            ch = self.peek()
            if ch == "\\":
                rest = re.match(r"\\[ \t]*\r?\n", self.text[self.pos:])
                if rest:  # line-ending backslash: drop the newline and leading whitespace
                    self.pos += rest.end()
                    while self.peek() in (" ", "\t", "\n") or self.peek(2) == "\r\n":
                        self.pos += 1
                    continue
                out.append(self.escape())
                continue
            if ch != "\n" and ch != "\r":
                self.check_char(ch)
            out.append(ch)
            self.pos += 1

    def multiline_literal_string(self) -> str:
        self.pos += 3
        if self.peek() == "\n":
            self.pos += 1
        elif self.peek(2) == "\r\n":
            self.pos += 2
        end = self.text.find("'''", self.pos)
        if end < 0:
            raise self.error("unterminated multi-line literal string")
        extra = 0
        while self.text[end + 3:end + 4] == "'" and extra < 2:
            end += 1
            extra += 1
        value = self.text[self.pos:end]
        self.pos = end + 3
        return value

    def check_char(self, ch: str) -> None:
        if ch != "\t" and (ord(ch) < 0x20 or ord(ch) == 0x7F):
            raise self.error("control character in a string")

    def array(self) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        while True:
            self.skip_ws_comments_newlines()
            if self.peek() == "]":
                self.pos += 1
                break
            items.append(self.value())
            self.skip_ws_comments_newlines()
            if self.peek() == ",":
                self.pos += 1
                continue
            if self.peek() == "]":
                self.pos += 1
                break
            raise self.error("expected ',' or ']' in an array")
        self.inline.add(id(items))
        return items

    def inline_table(self) -> dict[str, Any]:
        self.pos += 1
        table: dict[str, Any] = {}
        self.skip_ws()
        if self.peek() == "}":
            self.pos += 1
            self.inline.add(id(table))
            return table
        while True:
            self.key_value(table)
            self.skip_ws()
            if self.peek() == ",":
                self.pos += 1
                self.skip_ws()
                continue
            if self.peek() == "}":
                self.pos += 1
                break
            raise self.error("expected ',' or '}' in an inline table")
        self.inline.add(id(table))
        return table


def loads(text: str) -> dict[str, Any]:
    """The TOML document `text` as nested dicts and lists; raises TOMLDecodeError."""
    if not isinstance(text, str):
        raise TypeError("loads() takes a str")
    return _Parser(text).parse()
