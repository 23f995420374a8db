"""Reading an object file's symbols: its symbol and section tables (`readelf -sSW`), names
demangled with c++filt, and the first scope (namespace or global name) of an
Itanium-mangled name, which the object check uses to tell the harness's and the
libraries' names from the student's."""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..tools import find_tool
from .. import costs
from .results import CheckError


@dataclass(frozen=True)
class Symbol:
    name: str  # as in the object (mangled), without a version suffix
    demangled: str
    bind: str  # GLOBAL, WEAK, UNIQUE, LOCAL
    type: str  # FUNC, OBJECT, NOTYPE, TLS, ...
    section: str  # "UND", "ABS", "COM" or the section index

    @property
    def undefined(self) -> bool:
        return self.section == "UND"

    @property
    def strong(self) -> bool:
        return self.bind == "GLOBAL"


_READELF_SYM = re.compile(r"^\s*\d+:\s+[0-9a-fA-F]+\s+\S+\s+(\w+)\s+(\w+)\s+(\w+)"
                          r"(?:\s+\[[^\]]*\])?\s+(\S+)\s+(\S+)\s*$")
_READELF_SEC = re.compile(r"^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+[0-9a-fA-F]+\s+[0-9a-fA-F]+\s+"
                          r"[0-9a-fA-F]+\s+[0-9a-fA-F]+\s+([A-Za-z]*)\s")


def _tool(name: str) -> str:
    path = find_tool(name)
    if not path:
        raise CheckError(f"{name} not found (binutils)")
    return path


def demangle(names: Sequence[str]) -> list[str]:
    """`names` demangled by c++filt (one call), in order; unmangled names unchanged."""
    if not names:
        return []
    proc = costs.run([_tool("c++filt")], input="\n".join(names) + "\n",
                     capture_output=True, text=True, timeout=120)
    out = proc.stdout.split("\n")
    if proc.returncode != 0 or len(out) < len(names):
        raise CheckError(f"c++filt failed: {proc.stderr.strip()[:300]}")
    return out[:len(names)]


Table = tuple[list[Symbol], dict[str, tuple[str, str]]]  # read_symbols: symbols, sections

# The tables of the objects read with keep=True (the harness's and the reference's: the same
# for every lab that links them and every grade), by the digest of the file's bytes.
_KEPT: dict[bytes, Table] = {}
_KEPT_LOCK = threading.Lock()


def _digest(obj: Path) -> bytes:
    return hashlib.blake2b(obj.read_bytes(), digest_size=20).digest()


def read_symbols(obj: Path) -> Table:
    """The symbols of an object file and its sections ({index: (name, flags)})."""
    return read_symbols_of([obj])[obj]


def read_symbols_of(objs: Sequence[Path], keep: bool = False) -> dict[Path, Table]:
    """read_symbols of every object, read by one readelf and one c++filt in all. `keep`:
    each table is kept for this process by the digest of the file's bytes and not read
    again while they are unchanged (the harness's objects, which every lab and every grade
    of a batch task links)."""
    tables: dict[Path, Table] = {}
    digests = {obj: _digest(obj) for obj in objs} if keep else {}
    with _KEPT_LOCK:
        for obj, digest in digests.items():
            if (kept := _KEPT.get(digest)) is not None:
                tables[obj] = kept
    wanted = list(dict.fromkeys(o for o in objs if o not in tables))
    if wanted:
        read = _read_tables(wanted)
        tables.update(read)
        with _KEPT_LOCK:
            _KEPT.update((digests[obj], table) for obj, table in read.items() if keep)
    return tables


def _read_tables(objs: list[Path]) -> dict[Path, Table]:
    readelf = _tool("readelf")
    proc = costs.run([readelf, "-sSW", *map(str, objs)], capture_output=True, text=True,
                     timeout=120)
    if proc.returncode != 0:
        names = ", ".join(o.name for o in objs[:3]) + (" ..." if len(objs) > 3 else "")
        raise CheckError(f"readelf failed on {names}: {proc.stderr.strip()[:300]}")
    # Given more than one file, readelf heads each file's tables with "File: NAME", in the
    # order the files were given.
    parts: list[list[str]] = [[]]
    for line in proc.stdout.splitlines():
        if len(objs) > 1 and line.startswith("File: "):
            parts.append([])
        else:
            parts[-1].append(line)
    parts = parts[1:] if len(objs) > 1 else parts
    if len(parts) != len(objs):
        raise CheckError(f"readelf listed {len(parts)} of {len(objs)} object files")
    found = [_table_rows(lines) for lines in parts]
    demangled = iter(demangle([row[0] for rows, _ in found for row in rows]))
    return {obj: ([Symbol(row[0], next(demangled), *row[1:]) for row in rows], sections)
            for obj, (rows, sections) in zip(objs, found)}


def _table_rows(lines: list[str]) -> tuple[list[tuple[str, str, str, str]],
                                           dict[str, tuple[str, str]]]:
    """(name, bind, type, section) of each symbol and the sections, from one file's part of
    readelf's output."""
    rows, sections = [], {}
    for line in lines:
        m = _READELF_SEC.match(line)
        if m:
            sections[m.group(1)] = (m.group(2), m.group(3))
            continue
        m = _READELF_SYM.match(line)
        if m:
            typ, bind, _vis, ndx, name = m.groups()
            if typ in ("FILE", "SECTION") or not name:
                continue
            rows.append((name.split("@", 1)[0], bind, typ, ndx))
    return rows, sections


# --- the namespace of a mangled name ---------------------------------------------------------------

_STD_SUBST = {"St", "Sa", "Sb", "Ss", "Si", "So", "Sd"}


def _source_name(s: str, i: int) -> tuple[str, int] | None:
    m = re.match(r"(\d+)", s[i:])
    if not m:
        return None
    n = int(m.group(1))
    start = i + m.end()
    return s[start:start + n], start + n


def _skip_number_(s: str, i: int) -> int:
    m = re.match(r"n?\d+_", s[i:])
    return i + m.end() if m else i


def scope_of(mangled: str) -> tuple[str, str] | None:
    """(first scope, name kind) of an Itanium-mangled name: ("cml", "ns") for
    `_ZN3cml7compare...`, ("std", "ns") for `_ZNSt...`, ("helper", "global") for a global
    function `_Z6helperf`, ("operator new", "global") for `_Znwm`; None when the name is
    not mangled (C linkage) or cannot be read."""
    s = mangled
    if not s.startswith("_Z"):
        return None
    i = 2
    while True:  # special names: vtables, typeinfo, guard variables, thunks, local names
        two = s[i:i + 2]
        if two in ("TV", "TI", "TS", "TT", "GV", "GR", "TH", "TW"):
            i += 2
        elif two == "Th":
            i = _skip_number_(s, i + 2)
        elif two == "Tv":
            i = _skip_number_(s, _skip_number_(s, i + 2))
        elif two == "Tc":
            i += 2
            for _ in range(2):
                if s[i:i + 1] == "h":
                    i = _skip_number_(s, i + 1)
                elif s[i:i + 1] == "v":
                    i = _skip_number_(s, _skip_number_(s, i + 1))
        elif s[i:i + 1] == "Z":
            i += 1
        elif s[i:i + 3] == "GTt":
            i += 3
        else:
            break
    if s[i:i + 1] == "L":
        i += 1
    if s[i:i + 1] == "N":
        i += 1
        while s[i:i + 1] in ("r", "V", "K", "R", "O"):
            i += 1
        if s[i:i + 2] in _STD_SUBST:
            return "std", "ns"
        got = _source_name(s, i)
        return (got[0], "ns") if got else None
    if s[i:i + 2] in _STD_SUBST:
        return "std", "ns"
    got = _source_name(s, i)
    if got:
        return got[0], "global"
    ops = {"nw": "operator new", "na": "operator new[]", "dl": "operator delete",
           "da": "operator delete[]"}
    if s[i:i + 2] in ops:
        return ops[s[i:i + 2]], "global"
    if re.match(r"[a-z][a-z]", s[i:i + 2]):
        return "operator " + s[i:i + 2], "global"
    return None
