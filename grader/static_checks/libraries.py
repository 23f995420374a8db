"""The names the system libraries export: the dynamic symbols of the C library, the math
library, the C++ library, libgcc_s and the CUDA runtime, which every lab's program links.
The object check refuses a C-linkage definition (a function or a global variable: C++
variables are not mangled) only when its name is one of these, a protected name or a name
the harness defines: the linker would then take the student's definition for theirs. Read
once per process with `readelf --dyn-syms`."""

from __future__ import annotations

import functools
import os
import re
import subprocess

from ..tools import find_tool
from .. import costs
from .results import CheckError

# The files the host compiler links every lab's program with (g++ -print-file-name finds
# them where that compiler looks); the CUDA runtime is looked up beside nvcc.
SYSTEM_LIBRARIES = ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1")
CUDA_RUNTIME = "libcudart.so"

_DYNSYM = re.compile(r"^\s*\d+:\s+[0-9a-fA-F]+\s+\S+\s+(\w+)\s+(\w+)\s+\w+"
                     r"(?:\s+\[[^\]]*\])?\s+(\S+)\s+(\S+)")


def library_files() -> list[tuple[str, str]]:
    """(name, file) of the system libraries as the host compiler finds them, then of the
    CUDA runtime."""
    found: list[tuple[str, str]] = []
    cxx = find_tool("g++") or find_tool("c++")
    for name in SYSTEM_LIBRARIES:
        if not cxx:
            break
        try:
            proc = costs.run([cxx, f"-print-file-name={name}"], capture_output=True,
                             text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            continue
        path = proc.stdout.strip()
        if proc.returncode == 0 and os.path.isabs(path) and os.path.isfile(path):
            found.append((name, os.path.realpath(path)))
    nvcc = find_tool("nvcc")
    if nvcc:
        root = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
            path = os.path.join(root, sub, CUDA_RUNTIME)
            if os.path.isfile(path):
                found.append((CUDA_RUNTIME, os.path.realpath(path)))
                break
    return found


def exported_names(path: str) -> set[str]:
    """The names a shared library defines for others (GLOBAL, WEAK or UNIQUE dynamic
    symbols), without their version suffixes."""
    readelf = find_tool("readelf")
    if not readelf:
        raise CheckError("readelf not found (binutils)")
    proc = costs.run([readelf, "--dyn-syms", "-W", path], capture_output=True,
                     text=True, timeout=120)
    if proc.returncode != 0:
        raise CheckError(f"readelf failed on {os.path.basename(path)}: "
                         f"{proc.stderr.strip()[:300]}")
    names = set()
    for line in proc.stdout.splitlines():
        m = _DYNSYM.match(line)
        if m and m.group(2) in ("GLOBAL", "WEAK", "UNIQUE") and m.group(3) != "UND":
            names.add(m.group(4).split("@", 1)[0])
    return names


@functools.lru_cache(maxsize=1)
def system_exports() -> dict[str, str]:
    """{name: the library that exports it (libc.so.6, ...)} over every library the labs'
    programs link; the first library listed wins. Raises CheckError when not even the C
    library can be read: without it a definition that replaces libc's would go unseen."""
    table: dict[str, str] = {}
    files = library_files()
    if not any(shown == SYSTEM_LIBRARIES[0] for shown, _ in files):
        raise CheckError("the C library was not found (g++ -print-file-name=libc.so.6): "
                         "the names it exports cannot be checked")
    for shown, path in files:
        for name in exported_names(path):
            table.setdefault(name, shown)
    return table
