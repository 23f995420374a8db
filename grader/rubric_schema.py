"""The rubric's schema, and the one loader that reads a grading.toml table through it.

Each table of a rubric is declared once (grader/rubric.py, after its records): a `Table`
lists its keys, and each `Key` says its name, its type, whether it is required, its default
and its checks (a range, a set of allowed values, ...). `read_table` does the rest for every
table alike: it refuses an unknown key, a missing required one, a value of the wrong type
and one that fails a check, with a message that names the file, the table and the key.

A default lives on the table's record (the dataclass the parser builds), never here: a key
declared without one takes the record's, read when the table is read. What one key alone
cannot say (a `requires` entry naming a group, two keys that must agree) the parser checks
on the values read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar

R = TypeVar("R")


class RubricError(ValueError):
    """A grading.toml that cannot be used; the message names the file and the problem."""


def type_name(value: Any) -> str:
    """`value` as a message shows it: its TOML type, with the value where it is short."""
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


# --- checks ---------------------------------------------------------------------------------
# A check looks at a value of the right type and returns the problem ("must be at least 0,
# not -1"), which the loader puts after the key's name, or None when the value is fine.

@dataclass(frozen=True)
class AtLeast:
    bound: float

    def __call__(self, value: float) -> str | None:
        if value < self.bound:
            return f"must be at least {self.bound:g}, not {value:g}"
        return None


@dataclass(frozen=True)
class Above:
    bound: float

    def __call__(self, value: float) -> str | None:
        if value <= self.bound:
            return f"must be greater than {self.bound:g}, not {value:g}"
        return None


@dataclass(frozen=True)
class OneOf:
    """A string that must be one of `choices`."""

    choices: tuple[str, ...]

    def __call__(self, value: str) -> str | None:
        if value not in self.choices:
            quoted = [f'"{c}"' for c in self.choices]
            listed = " or ".join(quoted) if len(quoted) < 3 else (
                ", ".join(quoted[:-1]) + f" or {quoted[-1]}")
            return f"must be {listed}, not {value!r}"
        return None


@dataclass(frozen=True)
class EachOneOf:
    """An array whose every entry is one of `choices`; `what` names an entry in messages."""

    choices: tuple[str, ...]
    what: str

    def __call__(self, value: list[str]) -> str | None:
        for entry in value:
            if entry not in self.choices:
                return (f"names an unknown {self.what} '{entry}' "
                        f"(known: {', '.join(self.choices)})")
        return None


@dataclass(frozen=True)
class Filled:
    """A string that is not blank, or an array that is not empty; `problem` says why."""

    problem: str = "must not be empty"

    def __call__(self, value: str | list[str]) -> str | None:
        empty = not value.strip() if isinstance(value, str) else not value
        return self.problem if empty else None


@dataclass(frozen=True)
class Distinct:
    """An array that names nothing twice."""

    def __call__(self, value: list[str]) -> str | None:
        for i, entry in enumerate(value):
            if entry in value[:i]:
                return f"lists '{entry}' twice"
        return None


@dataclass(frozen=True)
class Finite:
    def __call__(self, value: float) -> str | None:
        return None if math.isfinite(value) else f"must be a finite number, not {value}"


@dataclass(frozen=True)
class Whole:
    def __call__(self, value: float) -> str | None:
        return None if value.is_integer() else f"must be a whole number, not {value:g}"


Check = Callable[[Any], "str | None"]


# --- types ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Type:
    """A TOML value's type: `name` completes "must be ..."; `accepts` tells a value of the
    type; `read` turns it into the record's (a number into a float); `checks` hold for every
    value of the type, before the key's own; `finish` runs after them (a whole number's
    float into an int)."""

    name: str
    accepts: Callable[[Any], bool]
    read: Callable[[Any], Any] = lambda value: value
    checks: tuple[Check, ...] = ()
    finish: Callable[[Any], Any] = lambda value: value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


STRING = Type("a string", lambda v: isinstance(v, str))
NUMBER = Type("a number", _is_number, float, (Finite(),))
WHOLE_NUMBER = Type("a number", _is_number, float, (Finite(), Whole()), int)
BOOLEAN = Type("true or false", lambda v: isinstance(v, bool))
STRINGS = Type("an array of strings", _is_strings, list)
# An array of strings, or one string the parser takes where the table allows it.
STRINGS_OR_STRING = Type("an array of strings", lambda v: isinstance(v, str) or _is_strings(v),
                         lambda v: v if isinstance(v, str) else list(v))


@dataclass(frozen=True)
class SubTable:
    """The type of a key whose value is a table read through `table`."""

    table: Table


@dataclass(frozen=True)
class SubTables:
    """The type of a key whose value is an array of tables ([[key]]) each read through
    `table`."""

    table: Table


# --- keys and tables ------------------------------------------------------------------------

class _FromRecord:
    """A key's default: the one its table's record declares for the attribute of the key's
    name."""

    def __repr__(self) -> str:
        return "FROM_RECORD"


class _Derived:
    """A key's default: none in the schema; the parser works it out from the rest of the
    rubric (the value read then leaves the key out)."""

    def __repr__(self) -> str:
        return "DERIVED"


FROM_RECORD: Any = _FromRecord()
DERIVED: Any = _Derived()


@dataclass
class Key:
    """One key of a table. Not frozen: a test may swap a declared check and see the loader
    follow it."""

    name: str
    type: Type | SubTable | SubTables
    checks: tuple[Check, ...] = ()
    required: bool = False
    default: Any = FROM_RECORD


def Required(name: str, type: Type | SubTable | SubTables, *checks: Check) -> Key:
    """A key the table must have."""
    return Key(name, type, checks, required=True, default=MISSING)


def Optional(name: str, type: Type | SubTable | SubTables, *checks: Check,
             default: Any = FROM_RECORD) -> Key:
    """A key the table may leave out: it then takes `default`, by default its record's."""
    return Key(name, type, checks, default=default)


@dataclass(frozen=True)
class Table:
    """One table of a rubric. `where` names it in messages ("[performance]"); `record` is
    the dataclass whose declared defaults the keys take; `named_by` is the key that names
    each table of an array ([[metrics]] 'name'), unique among them; `gone` maps a key no
    longer read to what to do instead."""

    where: str
    record: type | None
    keys: tuple[Key, ...]
    named_by: str | None = None
    gone: Mapping[str, str] = field(default_factory=dict)

    def key(self, name: str) -> Key:
        """The key called `name`; KeyError when there is none."""
        for k in self.keys:
            if k.name == name:
                return k
        raise KeyError(name)

    def default(self, key: Key) -> Any:
        """The value `key` takes when the table leaves it out."""
        if key.default is not FROM_RECORD:  # a fresh copy: records do not share a list
            return list(key.default) if isinstance(key.default, list) else key.default
        assert self.record is not None, f"{self.where}.{key.name} has no record to default from"
        found = next(f for f in fields(self.record) if f.name == key.name)
        if found.default is not MISSING:
            return found.default
        assert found.default_factory is not MISSING, \
            f"{self.record.__name__}.{key.name} declares no default"
        return found.default_factory()


class Read:
    """A table read through its schema: the values by key (defaults in), which
    keys the table gave, and where it is, for the parser's own checks."""

    def __init__(self, file: str, where: str, values: dict[str, Any], given: set[str]) -> None:
        self.file = file
        self.where = where
        self.values = values
        self.given = given

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def fail(self, problem: str) -> RubricError:
        return RubricError(f"{self.file}: {problem}")

    def build(self, record: Callable[..., R], **changes: Any) -> R:
        """`record` made of the values read, `changes` (what the parser worked out) over
        them."""
        return record(**{**self.values, **changes})


TOP = "the top level"


def _label(where: str, key: str) -> str:
    return key if where == TOP else f"{where}.{key}"


def read_table(table: Table, raw: Any, file: str, where: str | None = None) -> Read:
    """`raw` (a parsed TOML table) read through `table`; raises RubricError naming `file`,
    the table (`where`, by default the table's own name) and the key."""
    where = where or table.where

    def fail(problem: str) -> RubricError:
        return RubricError(f"{file}: {problem}")

    if not isinstance(raw, dict):
        raise fail(f"{where} must be a table, not {type_name(raw)}")
    for name, instead in table.gone.items():
        if name in raw:
            raise fail(f"{where}: '{name}' is no longer read: {instead}")
    known = [k.name for k in table.keys]
    for name in raw:
        if name not in known:
            raise fail(f"unknown key '{name}' in {where} (known keys: {', '.join(known)})")

    values: dict[str, Any] = {}
    keys = list(table.keys)
    if table.named_by:  # read the name first: the messages about the other keys use it
        first = table.key(table.named_by)
        keys.remove(first)
        _read_into(values, table, first, raw, file, where)
        where = f"{table.where} '{values[first.name]}'"
    for key in keys:
        _read_into(values, table, key, raw, file, where)
    return Read(file, where, values, {k for k in raw if k in known})


def _read_into(values: dict[str, Any], table: Table, key: Key, raw: dict[str, Any], file: str,
               where: str) -> None:
    """`key`'s value, or its default, into `values` (nothing for a derived default)."""
    if key.name in raw:
        values[key.name] = _read_key(key, raw, file, where)
    elif key.required:
        if isinstance(key.type, SubTable):
            raise RubricError(f"{file}: the required table [{key.name}] is missing")
        raise RubricError(f"{file}: {where} is missing the required key '{key.name}'")
    elif key.default is not DERIVED:
        values[key.name] = table.default(key)


def _read_key(key: Key, raw: dict[str, Any], file: str, where: str) -> Any:
    value = raw[key.name]
    label = _label(where, key.name)
    if isinstance(key.type, SubTable):
        return read_table(key.type.table, value, file)
    if isinstance(key.type, SubTables):
        return read_tables(key.type.table, value, file, label)
    kind = key.type
    if not kind.accepts(value):
        raise RubricError(f"{file}: {label} must be {kind.name}, not {type_name(value)}")
    value = kind.read(value)
    for check in kind.checks + key.checks:
        problem = check(value)
        if problem:
            raise RubricError(f"{file}: {label} {problem}")
    return kind.finish(value)


def read_tables(table: Table, raw: Any, file: str, label: str = "") -> list[Read]:
    """The array of tables `raw` ([[name]]), each read through `table` and named by its
    position (or its `named_by` key); two of the same name are refused."""
    if not isinstance(raw, list):
        raise RubricError(f"{file}: {label or table.where} must be an array of tables "
                          f"({table.where})")
    out: list[Read] = []
    for i, entry in enumerate(raw):
        read = read_table(table, entry, file, f"{table.where} #{i + 1}")
        if table.named_by:
            name = read[table.named_by]
            if any(r[table.named_by] == name for r in out):
                raise read.fail(f"two {table.where} tables are called '{name}'")
        out.append(read)
    return out


def keys_of(table: Table) -> list[tuple[str, Key, Table]]:
    """Every key that holds a value (not a table), as (its table's name, key, table), the
    tables under `table` included: what grader/README.md's grading.toml table documents."""
    out = []
    for key in table.keys:
        if isinstance(key.type, (SubTable, SubTables)):
            out += keys_of(key.type.table)
        else:
            out.append(("" if table.where == TOP else table.where, key, table))
    return out
