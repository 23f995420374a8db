"""The object check: the student's object against the allow-lists, every undefined symbol it
references and every external symbol it defines, with the lab's interface taken from the
reference solution's object and the harness's definitions from the objects it is linked
with."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from .libraries import system_exports
from .results import SourceFacts, SourceReport, Violation
from .rules import LabRules
from .symbols import Symbol, read_symbols, read_symbols_of, scope_of


def interface_of(reference_obj: Path) -> set[str]:
    """The lab's interface: the reference object's strong external definitions (mangled)."""
    symbols, _ = read_symbols_of([reference_obj], keep=True)[reference_obj]
    return {s.name for s in symbols if not s.undefined and s.strong}


def harness_objects(build: Path, lab_folder: str, tag: str) -> list[Path]:
    """The objects the student's code is linked with, in a CMake build tree: the lab's given
    code, its tests and bench, the common library and the shared mains of the tests and benches."""
    dirs = [build / "labs" / lab_folder / "CMakeFiles" / f"{tag}_{kind}.dir"
            for kind in ("given", "public_tests", "hidden_tests", "bench_student")]
    dirs += [build / "common" / "CMakeFiles" / f"{name}.dir"
             for name in ("cml", "cml_test_main", "cml_bench_main")]
    found: list[Path] = []
    for d in dirs:
        if d.is_dir():
            found += sorted(p for p in d.rglob("*.o") if p.is_file())
    return found


def is_stand_in(s: Symbol, sections: dict[str, tuple[str, str]]) -> bool:
    """A function the lab's given code defines weakly on purpose, as a stand-in for one the
    student may write (lab 04's optional bonus): part of the lab's interface, for the
    student copy too, which has no reference object to read it from. Inline functions and
    template instantiations are weak as well, but each sits in a section of a COMDAT group
    (flag G); those stay the harness's."""
    name, flags = sections.get(s.section, ("", ""))
    return (s.bind == "WEAK" and s.type == "FUNC" and name.startswith(".text")
            and "G" not in flags)


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
    tables = read_symbols_of(harness, keep=True)  # one readelf for all, once per process
    for h in harness:
        syms, sections = tables[h]
        given = any(part.endswith("_given.dir") for part in h.parts)
        for s in syms:
            if not s.undefined and s.bind in ("GLOBAL", "WEAK", "UNIQUE"):
                if given and is_stand_in(s, sections):
                    interface.add(s.name)  # the student's own definition replaces it
                    continue
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
            found.append(Violation("object", s.demangled, where_named(s.demangled, facts),
                                   "data placed in an executable section; keep data in "
                                   "ordinary variables and code in ordinary functions"))
        if s.bind not in ("GLOBAL", "WEAK", "UNIQUE"):
            continue
        seen.add(s.name)
        v = _check_definition(s, rules, facts, interface, harness_strong, harness_any)
        if v:
            found.append(v)
    return found


# --- where in the student's file a symbol comes from -------------------------------------------

_NOT_NAMES = {"std", "__cxx11", "_V2", "__gnu_cxx", "__detail", "operator", "const",
              "unsigned", "long", "int", "char", "void", "for", "vtable", "typeinfo", "name",
              "VTT", "guard", "variable"}


def _candidates(demangled: str) -> list[str]:
    """The identifiers a student's line may have written for a demangled symbol, most
    telling first: `std::thread::_M_start_thread(...)` -> thread; `basic_ofstream` ->
    basic_ofstream, ofstream; `operator new(unsigned long)` -> new."""
    name = demangled.split("(", 1)[0]
    for prefix in ("vtable for ", "typeinfo name for ", "typeinfo for ", "VTT for ",
                   "guard variable for "):
        if name.startswith(prefix):
            name = name[len(prefix):]
    depth, plain = 0, []
    for ch in name:  # template arguments dropped
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            plain.append(ch)
    parts = [p.strip() for p in "".join(plain).split("::") if p.strip()]
    out: list[str] = []
    for part in reversed(parts):
        if part.startswith("operator "):
            out.append(part.split()[1].rstrip("[]"))
            continue
        if part in _NOT_NAMES or part.startswith("_M_") or part.startswith("~"):
            continue
        out.append(part)
        if part.startswith("basic_"):
            out.append(part[len("basic_"):])
    return out


def where_named(demangled: str, facts: SourceFacts) -> str:
    """The student's line that names the symbol (`file:line`), or "" when none is found.
    A header's inline function may reach a longer name than the one written
    (`cudaOccupancyMaxActiveBlocksPerMultiprocessor` -> `...WithFlags`,
    `cudaGetDeviceProperties` -> `..._v2`): the longest identifier of the student's that
    begins the name, of 8 characters or more, stands for it then."""
    candidates = _candidates(demangled)
    for name in candidates:
        if name in facts.first_seen:
            return facts.first_seen[name]
    for name in candidates:
        stems = [i for i in facts.first_seen if len(i) >= 8 and name.startswith(i)]
        if stems:
            return facts.first_seen[max(stems, key=len)]
    return ""


# --- references ----------------------------------------------------------------------------------


def _check_reference(s: Symbol, rules: LabRules, facts: SourceFacts) -> list[Violation]:
    names = (s.demangled, s.name)
    where = where_named(s.demangled, facts)
    lab_refused = rules.refused_references.match(s.demangled) or \
        rules.refused_references.match(s.name)
    if lab_refused:
        return [Violation("reference", s.demangled, where, lab_refused[1])]
    gen = rules.generated_only.match(s.demangled) or rules.generated_only.match(s.name)
    if gen:
        base = s.demangled.split("(", 1)[0]
        if base in facts.identifiers or s.name in facts.identifiers:
            return [Violation(
                "reference", s.demangled, where or facts.first_seen.get(base, ""),
                f"only the compilers' generated code may use it ({gen[1]}); your own code "
                f"names `{base}`: leave it to the compiler")]
        return []
    if any(rules.references.match(n) for n in names):
        return []
    return [Violation("reference", s.demangled, where, _why_refused(s.demangled, rules))]


# Families of refused references: (pattern on the demangled name, what is wrong, what to
# do instead). The first that matches gives the message.
_FAMILIES = [
    (r"cu[A-Z]", "the CUDA driver API is not for student code",
     "use the CUDA runtime (cudaMalloc, cudaMemcpy, kernel<<<grid, block>>>(...))"),
    (r"cuda(Stream|Event|Graph|Ctx|Ipc|Thread)",
     "streams, events and graphs of your own are not allowed: your work runs on the default "
     "stream the harness times",
     "launch on the default stream (no stream argument, or 0) and let the harness time it"),
    (r"cuda(DeviceReset|SetDevice|DeviceSet|SetValidDevices|GetDriverEntryPoint)",
     "the device and the driver are the harness's",
     "use the device the harness has set up, as it is"),
    (r"cuda", "this CUDA runtime call is not among those the lab allows",
     "use the runtime calls listed below"),
    (r"(dl|__libc_dl)", "loading libraries at run time is not allowed",
     "call only what your file includes; everything the lab needs is linked already"),
    (r"(f?open|freopen|fdopen|creat|tmpfile|mkstemp|fclose|unlink|remove|rename|mmap|read|"
     r"write|close|lseek|pread|pwrite|f?stat|lstat|access|readlink|opendir|readdir|chdir|"
     r"getcwd|std::(__basic_file|basic_[io]?fstream|basic_filebuf|filesystem))",
     "student code may not open, write or remove files",
     "print with printf or std::cout instead; the grader keeps standard output"),
    (r"(std::thread|std::jthread|pthread_create|pthread_join|pthread_detach|thrd_create)",
     "host threads are not allowed",
     "use more GPU threads (a larger grid or block) instead"),
    (r"(signal|sigaction|sigset|sigprocmask|pthread_sigmask|sigaltstack|__sysv_signal|"
     r"bsd_signal|ssignal)",
     "student code may not handle signals",
     "let a failure fail: throw an exception, and the grader reports a crash as the failure "
     "of the case that crashed"),
    (r"(fork|vfork|clone|exec|posix_spawn|system|popen|pclose|kill|raise|wait)",
     "student code may not start programs or signal processes",
     "do the work in your own code, in this process"),
    (r"(socket|connect|bind|listen|accept|send|recv|getaddrinfo|gethostbyname)",
     "student code may not use the network",
     "work only on the inputs the functions are given"),
    (r"(syscall|__syscall)", "raw system calls are not allowed",
     "use the C and C++ library functions the lab allows"),
    (r"(environ|__environ|setenv|putenv|unsetenv|clearenv)",
     "the environment is the harness's: it may be read with getenv, not listed or changed",
     "read a single variable with std::getenv"),
    (r"(atexit|at_quick_exit|on_exit)",
     "student code may not register functions to run at exit",
     "clean up in your functions, or in a destructor"),
]


def _why_refused(name: str, rules: LabRules) -> str:
    for pattern, why, fix in _FAMILIES:
        if re.match(pattern, name):
            return f"{why}; {fix} (allowed: {rules.summary})"
    return ("it is not on the lab's allow-list; use the standard library or the CUDA runtime "
            "calls the lab allows (allowed: " + rules.summary + ")")


# --- definitions ---------------------------------------------------------------------------------

_RESERVED_C = re.compile(r"_[A-Z_]")


def _rename(rules: LabRules) -> str:
    return (f"rename your function or variable, or put it in your lab's namespace "
            f"`{rules.lab_namespace}` (or an anonymous namespace)")


def c_name_clash(name: str, rules: LabRules, harness_any: set[str],
                 exports: dict[str, str] | None = None) -> str | None:
    """Why a C-linkage definition of `name` (a function with extern "C", or any variable at
    global scope: C++ does not mangle variables) would take the place of someone else's,
    or None when it collides with nothing: a protected name, a reserved name, a name a
    harness object defines, or a name the system libraries export."""
    if rules.protected_names.match(name):
        return (f"`{name}` is a protected name (the program's entry point, the CUDA runtime's "
                "or the driver's names, the harness's link-time wrappers): your definition "
                "would take its place for the whole program")
    if _RESERVED_C.match(name):
        return (f"`{name}` begins with an underscore and a capital letter or with two "
                "underscores: such names are reserved for the compiler and the libraries")
    if name in harness_any:
        return (f"`{name}` is defined by the harness (the lab's given code, the tests or the "
                "common library): yours would replace it")
    if exports is None:
        exports = system_exports()
    if name in exports:
        return (f"`{name}` is exported by {exports[name]}, which the program links: your "
                "definition would replace the library's for the whole program")
    return None


def _check_definition(s: Symbol, rules: LabRules, facts: SourceFacts, interface: set[str],
                      harness_strong: set[str], harness_any: set[str]) -> Violation | None:
    d = s.demangled
    if s.name in interface or rules.allow_define.match(d) or rules.allow_define.match(s.name):
        return None
    if rules.generated_defs.match(s.name) or rules.generated_defs.match(d):
        return None
    where = where_named(d, facts)
    scope = scope_of(s.name)
    if scope is None:  # C linkage: an extern "C" function, or a variable at global scope
        clash = c_name_clash(s.name, rules, harness_any)
        if clash:
            return Violation("define", d, where, f"{clash}; {_rename(rules)}")
        return None
    first, kind = scope
    if kind == "ns" and rules.protected_namespaces.match(first):
        if s.strong or first in facts.touched_namespaces:
            return Violation("define", d, where,
                             f"the namespace `{first}` belongs to the harness or a library; "
                             f"{rules.define_why}; {_rename(rules)}")
        return None  # a header's own template or inline function, instantiated
    if kind == "global" and rules.protected_cxx_names.match(first):
        # A mangled name never stands for a C function (`cudaCheck(cudaError_t, ...)` is
        # the student's own), but a global operator new or delete replaces the library's.
        if s.strong or first in facts.declared_globals or \
                first.split("[")[0] in facts.declared_globals:
            return Violation("define", d, where,
                             f"`{first}` replaces the C++ library's for the whole program; "
                             f"{rules.define_why}; allocate with new/delete, std::vector or "
                             "cudaMalloc without replacing them")
        return None
    if s.name in harness_strong or (s.strong and s.name in harness_any):
        return Violation("define", d, where,
                         "the harness (the lab's given code, the tests or the common library) "
                         "defines it, and yours would replace it; a student file may define "
                         f"the lab's interface and its own helpers only; {_rename(rules)}")
    return None
