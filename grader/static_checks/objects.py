"""The object check: the student's object against the allow-lists, every undefined symbol it
references and every external symbol it defines, with the lab's interface taken from the
reference solution's object and the harness's definitions from the objects it is linked
with."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from .results import SourceFacts, SourceReport, Violation
from .rules import LabRules
from .symbols import Symbol, read_symbols, scope_of


def interface_of(reference_obj: Path) -> set[str]:
    """The lab's interface: the reference object's strong external definitions (mangled)."""
    symbols, _ = read_symbols(reference_obj)
    return {s.name for s in symbols if not s.undefined and s.strong}


def harness_objects(build: Path, lab_folder: str, tag: str) -> list[Path]:
    """The objects the student's code is linked with, in a CMake build tree: the lab's given
    code, its tests and bench, the common library and the test main."""
    dirs = [build / "labs" / lab_folder / "CMakeFiles" / f"{tag}_{kind}.dir"
            for kind in ("given", "tests_student", "hidden_student", "bench_student")]
    dirs += [build / "common" / "CMakeFiles" / f"{name}.dir" for name in ("cml", "cml_test_main")]
    found: list[Path] = []
    for d in dirs:
        if d.is_dir():
            found += sorted(p for p in d.rglob("*.o") if p.is_file())
    return found


def check_object(student_obj: Path, reference_obj: Path | None, rules: LabRules,
                 source: SourceReport, harness: Sequence[Path] = ()) -> list[Violation]:
    """The student's object against the allow-lists: what it references and what it
    defines. `reference_obj` is the reference solution's object (its strong definitions are
    the lab's interface; None where there is no solutions/), `source` check_preprocessed's
    report on the same file, `harness` the objects it is linked with (harness_objects())."""
    facts = source.facts
    interface = interface_of(reference_obj) if reference_obj is not None else set()
    harness_strong: set[str] = set()
    harness_any: set[str] = set()
    for h in harness:
        syms, _ = read_symbols(h)
        for s in syms:
            if not s.undefined and s.bind in ("GLOBAL", "WEAK", "UNIQUE"):
                harness_any.add(s.name)
                if s.strong:
                    harness_strong.add(s.name)
    symbols, sections = read_symbols(student_obj)
    found: list[Violation] = []
    seen: set[str] = set()
    for s in symbols:
        if s.name in seen and s.bind != "LOCAL":
            continue
        if s.undefined:
            if s.bind == "LOCAL":
                continue
            seen.add(s.name)
            found += _check_reference(s, rules, facts)
            continue
        if s.type in ("OBJECT", "TLS", "COMMON") and s.section in sections and \
                "X" in sections[s.section][1]:
            found.append(Violation("object", s.demangled, "",
                                   "data placed in an executable section"))
        if s.bind not in ("GLOBAL", "WEAK", "UNIQUE"):
            continue
        seen.add(s.name)
        v = _check_definition(s, rules, facts, interface, harness_strong, harness_any)
        if v:
            found.append(v)
    return found


def _check_reference(s: Symbol, rules: LabRules, facts: SourceFacts) -> list[Violation]:
    names = (s.demangled, s.name)
    gen = rules.generated_only.match(s.demangled) or rules.generated_only.match(s.name)
    if gen:
        base = s.demangled.split("(", 1)[0]
        if base in facts.identifiers or s.name in facts.identifiers:
            return [Violation(
                "reference", s.demangled, "",
                f"only the compilers' generated code may use it ({gen[1]}); your own code "
                f"names `{base}`")]
        return []
    if any(rules.references.match(n) for n in names):
        return []
    return [Violation("reference", s.demangled, "", _why_refused(s.demangled, rules))]


_FAMILIES = [
    (r"cu[A-Z]", "the CUDA driver API is not for student code"),
    (r"cuda(Stream|Event|Graph|Ctx|Ipc|Thread)",
     "streams, events and graphs of your own are not allowed: your work runs on the default "
     "stream the harness times"),
    (r"cuda(DeviceReset|SetDevice|DeviceSet|SetValidDevices|GetDriverEntryPoint)",
     "the device and the driver are the harness's"),
    (r"cuda", "this CUDA runtime call is not among those the lab allows"),
    (r"(dl|__libc_dl)", "loading libraries at run time is not allowed"),
    (r"(f?open|freopen|fdopen|creat|tmpfile|mkstemp|fclose|unlink|remove|rename|mmap|"
     r"std::(__basic_file|basic_[io]?fstream|basic_filebuf|filesystem))",
     "student code may not open, write or remove files"),
    (r"(fork|vfork|clone|exec|posix_spawn|system|popen|pclose|kill|raise|wait)",
     "student code may not start programs or signal processes"),
    (r"(socket|connect|bind|listen|accept|send|recv|getaddrinfo|gethostbyname)",
     "student code may not use the network"),
    (r"syscall", "raw system calls are not allowed"),
    (r"(_exit|_Exit|quick_exit|abort|at_quick_exit|on_exit)",
     "student code may not end the process"),
]


def _why_refused(name: str, rules: LabRules) -> str:
    for pattern, why in _FAMILIES:
        if re.match(pattern, name):
            return why + " (allowed: " + rules.summary + ")"
    return "it is not on the lab's allow-list (allowed: " + rules.summary + ")"


def _check_definition(s: Symbol, rules: LabRules, facts: SourceFacts, interface: set[str],
                      harness_strong: set[str], harness_any: set[str]) -> Violation | None:
    d = s.demangled
    if s.name in interface or rules.allow_define.match(d) or rules.allow_define.match(s.name):
        return None
    if rules.generated_defs.match(s.name) or rules.generated_defs.match(d):
        return None
    strength = "defines" if s.strong else "defines (weakly)"
    scope = scope_of(s.name)
    why_harness = (f"the harness (the lab's given code, the tests or the common library) "
                   f"defines it, and yours would replace it; a student file may define the "
                   f"lab's interface and its own helpers only")
    if scope is None:  # C linkage
        return Violation("define", d, "",
                         "a C-linkage definition would replace the C library's, the CUDA "
                         "runtime's or the harness's symbol of that name; give your helpers "
                         "C++ linkage (no extern \"C\") in your lab's namespace")
    first, kind = scope
    if kind == "ns" and rules.protected_namespaces.match(first):
        if s.strong or first in facts.touched_namespaces:
            return Violation("define", d, "",
                             f"the namespace `{first}` belongs to the harness or a library; "
                             f"{rules.define_why}")
        return None  # a header's own template or inline function, instantiated
    if kind == "global" and rules.protected_names.match(first):
        if s.strong or first in facts.declared_globals or \
                first.split("[")[0] in facts.declared_globals:
            return Violation("define", d, "", f"`{first}` is a protected name; {rules.define_why}")
        return None
    if s.name in harness_strong or (s.strong and s.name in harness_any):
        return Violation("define", d, "", why_harness)
    return None
