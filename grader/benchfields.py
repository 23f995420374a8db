"""How the bench document's records (grader/benchdoc.py) read and write their fields, so that
each record names its fields once, in its dataclass.

`read_record` fills a record from the JSON object the document holds for it, each field by
its type: a number, a whole number, true or false, a string, a record inside it, an array of
strings or of records; the field's name is its key. A field read another way, or from an
object below the record's, says so in its metadata (`doc`). A value of the wrong kind raises
BenchError naming the field's place ("comparisons[0] ('tiled').candidate.ms.stdev").

`record_dict` writes a record back: its fields laid over the object as the document wrote it
(`written`), so result.json keeps the document's shape, fields the grader does not read
included. Each field goes back by a rule, the record's `WRITE` or the field's own: always,
only when set, only when changed, as the document spelled it, or not at all (the
document's value stays)."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, TypeVar

R = TypeVar("R", bound="Record")
# How a field is read: (the object holding it, its key, where that object is) -> its value.
Reader = Callable[[Mapping[str, Any], str, str], Any]


class BenchError(ValueError):
    """A bench JSON document that is unreadable or not schema cml-bench/2; the message names
    the field."""


# --- reading one field --------------------------------------------------------------------

def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def object_at(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BenchError(f"{where} must be a JSON object")
    return value


def optional_object(holder: Mapping[str, Any], key: str, where: str) -> dict[str, Any] | None:
    value = holder.get(key)
    return None if value is None else object_at(value, f"{where}.{key}")


def number(holder: Mapping[str, Any], key: str, where: str) -> float | None:
    value = holder.get(key)
    if value is None:
        return None
    if not is_number(value):
        raise BenchError(f"{where}.{key} must be a number, not {value!r}")
    return float(value)


def integer(holder: Mapping[str, Any], key: str, where: str) -> int | None:
    value = holder.get(key)
    if value is None:
        return None
    if not is_number(value) or value != int(value):
        raise BenchError(f"{where}.{key} must be a whole number, not {value!r}")
    return int(value)


def flag(holder: Mapping[str, Any], key: str, where: str) -> bool | None:
    value = holder.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise BenchError(f"{where}.{key} must be true or false, not {value!r}")


def text(holder: Mapping[str, Any], key: str, where: str) -> str:
    value = holder.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BenchError(f"{where}.{key} must be a string, not {value!r}")
    return value


def array(holder: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = holder.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BenchError(f"{where}.{key} must be a JSON array")
    return value


def _truth(holder: Mapping[str, Any], key: str, where: str) -> bool:
    return bool(flag(holder, key, where))


def _name(holder: Mapping[str, Any], key: str, where: str) -> str | None:
    """A string where there is one; anything else is none (a plot's `case` or `metric`)."""
    value = holder.get(key)
    return value if isinstance(value, str) else None


def _strings(holder: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    return tuple(str(item) for item in array(holder, key, where) if item)


def _text_or(default: Any) -> Reader:
    """A string, the field's default where the document gives none (or an empty one)."""
    fallback = default if isinstance(default, str) else ""
    return lambda holder, key, where: text(holder, key, where) or fallback


def _record(kind: type[Record], optional: bool) -> Reader:
    """An object read into the record `kind`; with `optional`, None where there is none."""
    def read(holder: Mapping[str, Any], key: str, where: str) -> Any:
        value = holder.get(key)
        if optional and value is None:
            return None
        return kind.read(value, f"{where}.{key}")
    return read


def _records(kind: type[Record]) -> Reader:
    """An array of objects, each read into the record `kind`."""
    def read(holder: Mapping[str, Any], key: str, where: str) -> Any:
        return tuple(kind.read(item, f"{where}.{key}[{i}]")
                     for i, item in enumerate(array(holder, key, where)))
    return read


def _reader(hint: Any, default: Any) -> Reader:
    """How a field of the type `hint` is read."""
    inner = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    optional = (typing.get_origin(hint) in (typing.Union, types.UnionType)
                and len(inner) < len(typing.get_args(hint)))
    kind = inner[0] if optional else hint
    if kind is float:
        return number
    if kind is int:
        return integer
    if kind is bool:
        return flag if optional else _truth
    if kind is str:
        return _name if optional else _text_or(default)
    if isinstance(kind, type) and issubclass(kind, Record):
        return _record(kind, optional)
    if typing.get_origin(kind) is tuple:
        item = typing.get_args(kind)[0]
        if item is str:
            return _strings
        if isinstance(item, type) and issubclass(item, Record):
            return _records(item)
    raise TypeError(f"a bench record's field of type {hint!r} needs its own reader")


# --- a field's metadata ----------------------------------------------------------------------

# How a field goes back into its record's object (record_dict):
ALWAYS = "always"  # its value, whatever it is
WHEN_SET = "when set"  # its value unless it is None
SET_OR_WRITTEN = "set or written"  # its value unless it is None where the document wrote none
IF_CHANGED = "if changed"  # its value unless the document wrote the same (an array)
AS_WRITTEN = "as written"  # a number the document wrote, as it wrote it (1, not 1.0)
KEPT = "kept"  # never: the document's own value stays

_READ, _WITHIN, _INLINE, _WRITE, _LAST = "read", "within", "inline", "write", "last"


def doc(default: Any = dataclasses.MISSING, *, read: Reader | None = None,
        within: str | None = None, inline: bool = False, write: str | None = None,
        last: bool = False) -> Any:
    """A field that the document holds otherwise than its type says: `read` reads it;
    `within`: the key of the object below the record's that holds it (under the name after
    the first "_": a plot's x_label is x.label); `inline`: a record whose fields are the
    record's own (a side's work); `write`: how it goes back (default: the record's WRITE);
    `last`: written after the other fields, where the document has it."""
    metadata = {_READ: read, _WITHIN: within, _INLINE: inline, _WRITE: write, _LAST: last}
    return dataclasses.field(default=default, metadata=metadata)


# --- records ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Record:
    """A record of the bench document, read from its JSON object by its fields' types."""

    @classmethod
    def read(cls: type[R], value: Any, where: str) -> R:
        return read_record(cls, object_at(value, where), where)


@dataclass(frozen=True)
class Written(Record):
    """A record that keeps the object as the document wrote it (`written`): `to_dict` lays
    the record's fields over it by their rules (WRITE: the rule of a field without its own;
    ADD: a field the document did not write is added too; KEEP: a record read from a
    document is written back as the document wrote it, whole)."""

    WRITE: ClassVar[str] = ALWAYS
    ADD: ClassVar[bool] = False
    KEEP: ClassVar[bool] = False

    written: Mapping[str, Any] = dataclasses.field(default_factory=dict, repr=False,
                                                   compare=False, kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        return record_dict(self)


@functools.lru_cache(maxsize=None)
def _readers(kind: type[Record]) -> tuple[tuple[str, str | None, Reader], ...]:
    """(name, the object below the record's that holds it, its reader) of each field."""
    hints = typing.get_type_hints(kind)
    out = []
    for f in dataclasses.fields(kind):
        if f.name == "written":
            continue
        if f.metadata.get(_INLINE):
            read = _inline(hints[f.name])
        else:
            read = f.metadata.get(_READ) or _reader(hints[f.name], f.default)
        out.append((f.name, f.metadata.get(_WITHIN), read))
    return tuple(out)


def _inline(kind: type[Record]) -> Reader:
    return lambda holder, key, where: read_record(kind, holder, where)


def read_record(make: Callable[..., R], obj: Mapping[str, Any], where: str) -> R:
    """The record `make` (a record's class) of the JSON object `obj`, found at `where`."""
    kind: Any = make
    values: dict[str, Any] = {}
    below: dict[str, Mapping[str, Any]] = {}
    for _name, within, _read in _readers(kind):  # the objects below first, in field order
        if within is not None and within not in below:
            below[within] = optional_object(obj, within, where) or {}
    for name, within, read in _readers(kind):
        if within is None:
            values[name] = read(obj, name, where)
        else:
            values[name] = read(below[within], name.split("_", 1)[1], f"{where}.{within}")
    if issubclass(kind, Written):
        values["written"] = obj
    return make(**values)


# --- writing a record back -------------------------------------------------------------------

def overlay(written: Mapping[str, Any], fields: Mapping[str, Any],
            add: bool = False) -> dict[str, Any]:
    """The object as written with `fields` laid over it (a written key keeps its place); a
    field the document did not write is added only with `add`, or to a record made in code
    (nothing written)."""
    out = dict(written)
    out.update((k, v) for k, v in fields.items() if add or not written or k in written)
    return out


def _json(value: Any) -> Any:
    if isinstance(value, Written):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_json(item) for item in value]
    return value


def _goes_back(rule: str, key: str, value: Any, written: Mapping[str, Any]) -> bool:
    if rule == KEPT or (rule == WHEN_SET and value is None):
        return False
    if rule == SET_OR_WRITTEN and value is None and key not in written:
        return False
    return not (rule == IF_CHANGED and key in written and tuple(written[key]) == value)


def record_dict(record: Written) -> dict[str, Any]:
    """The record's JSON object: as the document wrote it, its fields laid over it each by
    its rule."""
    written = record.written
    if record.KEEP and written:
        return dict(written)
    out: dict[str, Any] = {}
    ordered = sorted(dataclasses.fields(record), key=lambda f: bool(f.metadata.get(_LAST)))
    for f in ordered:
        if f.name == "written":
            continue
        rule, value = f.metadata.get(_WRITE) or record.WRITE, getattr(record, f.name)
        if not _goes_back(rule, f.name, value, written):
            continue
        keep = rule == AS_WRITTEN and value is not None and f.name in written
        out[f.name] = written[f.name] if keep else _json(value)
    return overlay(written, out, record.ADD)
