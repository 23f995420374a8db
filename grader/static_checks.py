"""Static checks on the student's file: allow-lists for what its object references and
defines, and checks on its preprocessed source. Nothing here runs the student's code.

Three checks, each an allow-list (grader/allowlist.toml, plus the lab's [static] table):

1. **References.** Every undefined symbol of the student's object (`readelf -sW`, names
   demangled with c++filt; weak references count too) must match an allowed pattern: the
   CUDA runtime calls the lab needs, the C and C++ library pieces fair code uses, the
   project's error checks and the lab's own namespace. A few symbols are marked
   `generated_only`: nvcc's stubs (`__cudaRegisterFatBinary`, `__cudaPushCallConfiguration`,
   `atexit`, and `exit`, which is the host body nvcc gives every non-inline `__device__`
   function) and the C++ ABI the host compiler calls. They are allowed only while the
   student's own preprocessed lines never name them (`exit`, `std::exit`, `__builtin_exit`):
   then the reference can only come from generated code. So a plain `__device__` helper is
   fine and a host `exit(0)` is refused, without guessing from machine code.

2. **Definitions.** Every symbol the object defines with external linkage is checked:
   - strong (GLOBAL) definitions may be the lab's interface (the reference solution's own
     strong definitions; the lab may add `allow_define`), nvcc's generated functions
     (`__device_stub__*`, the host side of kernels and `__device__` functions) and the
     student's own C++ helpers, but never a protected name: `main`, any C-linkage
     (unmangled) name (it would replace the C library's or the CUDA runtime's, e.g.
     `cudaEventElapsedTime`), `cuda*`/`cu[A-Z]*`/`__cuda*`, `operator new`/`delete`, and
     anything in a protected namespace (`cml::`, `std::`, `Catch::`, `labNN_test::`, ...);
     nor a name a harness object (the lab's given code, the common library, the tests)
     defines;
   - weak definitions (template and inline instantiations: GCC emits every instantiation
     of a header's template the student uses, e.g. `std::__cxx11::to_string(int)`) are
     allowed except for C-linkage names, names that a harness object defines strongly (the
     linker would then never pull the harness's member from its archive), and protected
     names or namespaces *that the student's own lines touch*: a weak `cml::...` definition
     is the header's own code while the student's lines never open `namespace cml` nor
     define a `cml::`-qualified name, and the student's replacement otherwise.
   Data in an executable section (`section(".text")` shellcode) is refused too.

3. **Source.** The file is preprocessed exactly as the build compiles it: `preprocess` asks
   nvcc for its own commands (`nvcc --dryrun` with the build's flags) and runs the two
   preprocessing steps nvcc would, the host pass (the `.cpp4.ii` file: `gcc -E` with
   `__CUDACC__`) and the device pass for each architecture (the `.cpp1.ii` files: with
   `__CUDA_ARCH__`), writing to files of ours; they run through the caller's `run`, so the
   pipeline can sandbox them (preprocessing reads whatever the file includes). Then:
   (a) every file in the line markers must be an allowed include: the compiler's standard
       headers, the C library's, the CUDA toolkit's runtime headers (not cuBLAS, the
       occupancy calculator, thrust, the driver API, ...), the project's `common/include/cml/`
       headers and the lab's interface headers; never `../../solutions/...`, a hidden test,
       `/etc/passwd` or a `tests/` header;
   (b) on the student's own lines, after macro expansion (so `#define A as##m` is seen as
       `asm`): no `asm`/`__asm`/`__asm__`, no `.incbin` in a string, no pragma outside the
       allowed list (also those made by `_Pragma`), no attribute that picks a section or makes
       an alias, no identifier reserved for generated code (`_Z...` mangled names,
       `__cuda...`, `__device_stub...`), no `namespace cml` (or another protected
       namespace, or an alias of one) and no definition of a `cml::`-qualified name;
   (c) on the raw text: only ordinary preprocessing directives; `#line` and GNU line markers
       (`# 12 "file"`) are refused, since they would make the student's lines look like a
       system header's. A UTF-8 BOM and CRLF line ends are fine.

Limits: the checks cannot see what pointer arithmetic on an allowed function's address
reaches at run time; the sandbox is what stops that. Each refusal names the symbol, file or
line and says what the lab allows.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from .tools import find_tool

ALLOWLIST = Path(__file__).with_name("allowlist.toml")

# --- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    """One refusal. kind: "reference" (an undefined symbol not allowed), "define" (a
    definition not allowed), "include" (a file the student's file may not include), "source"
    (something on the student's own lines), "object" (something else in the object)."""

    kind: str
    name: str  # the symbol, the file, or the token/pragma/directive
    where: str  # "labs/04_tiled_matmul/tiled_matmul.cu:12", or "" for object findings
    why: str  # what is wrong and what the lab allows instead

    def describe(self) -> str:
        place = f"{self.where}: " if self.where else ""
        if self.kind == "reference":
            return f"{place}the compiled file uses `{self.name}`, which this lab does not allow ({self.why})"
        if self.kind == "define":
            return f"{place}the compiled file defines `{self.name}`: {self.why}"
        if self.kind == "include":
            return f"{place}includes `{self.name}`, which a student file may not include ({self.why})"
        return f"{place}`{self.name}`: {self.why}"


class CheckError(RuntimeError):
    """The check itself could not be done (a tool is missing, preprocessing failed, ...):
    a problem to report, not a verdict on the student's code."""


# --- patterns ----------------------------------------------------------------------------------


def _glob_re(pattern: str, path: bool = False) -> re.Pattern[str]:
    """A glob as a regex over the whole name: `*` any text (in a path: within one folder),
    `**` any text, `?` one character, `[abc]`/`[A-Z]` a class (only when it looks like one:
    `operator new[]` keeps its brackets)."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*" if path else ".*")
        elif c == "?":
            out.append("[^/]" if path else ".")
        elif c == "[":
            m = re.match(r"\[([A-Za-z0-9_-]+)\]", pattern[i:])
            if m:
                out.append("[" + m.group(1) + "]")
                i += m.end()
                continue
            out.append(re.escape(c))
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


class Patterns:
    """A list of globs with the reason each came with."""

    def __init__(self, items: Iterable[tuple[str, str]] = (), path: bool = False) -> None:
        self.items = [(p, why, _glob_re(p, path)) for p, why in items]

    def add(self, pattern: str, why: str, path: bool = False) -> None:
        self.items.append((pattern, why, _glob_re(pattern, path)))

    def match(self, name: str) -> tuple[str, str] | None:
        for pattern, why, rx in self.items:
            if rx.match(name):
                return pattern, why
        return None

    def __bool__(self) -> bool:
        return bool(self.items)


# --- rules -----------------------------------------------------------------------------------


@dataclass
class LabRules:
    """The merged allow-lists for one lab: the shared default plus the lab's [static]."""

    lab_namespace: str  # e.g. "lab04"
    lab_folder: str  # e.g. "04_tiled_matmul"
    references: Patterns
    generated_only: Patterns  # references allowed only when the student never names them
    generated_defs: Patterns
    allow_define: Patterns
    protected_names: Patterns
    protected_namespaces: Patterns
    include_allowed: list[str]  # path globs with placeholders
    include_refused: list[str]
    lab_includes: list[str]  # the lab's allow_include, relative to the repository
    pragmas: list[str]
    directives: list[str]
    refused_attributes: set[str]
    reserved_identifiers: Patterns
    define_why: str
    summary: str  # what the lab allows, in a few words, for messages


def _load_toml(path: Path) -> dict:
    from .rubric import tomllib  # the same TOML reader as the rubrics

    return tomllib.loads(path.read_text(encoding="utf-8"))


def load_rules(lab_folder: str, static: object | None = None,
               allowlist: Path = ALLOWLIST) -> LabRules:
    """The rules for the lab `lab_folder` ("04_tiled_matmul"): the default allow-list
    (`allowlist`) merged with the lab's rubric [static] table (a rubric.StaticRules, or None
    for the default alone)."""
    doc = _load_toml(allowlist)
    number = lab_folder.split("_", 1)[0]
    ns = f"lab{number}"
    refs, gen = Patterns(), Patterns()
    for group in doc.get("reference", []):
        target = gen if group.get("generated_only") else refs
        for sym in group.get("symbols", []):
            target.add(sym.replace("{ns}", ns), group.get("why", ""))
    lab_why = f"allowed by labs/{lab_folder}/grading.toml"
    allow_define = Patterns()
    lab_includes: list[str] = []
    if static is not None:
        for sym in getattr(static, "allow_reference", []):
            refs.add(sym.replace("{ns}", ns), lab_why)
        for sym in getattr(static, "allow_define", []):
            allow_define.add(sym.replace("{ns}", ns), lab_why)
        lab_includes = list(getattr(static, "allow_include", []))
    d = doc.get("define", {})
    why_def = d.get("why", "")
    inc = doc.get("include", {})
    src = doc.get("source", {})
    cuda_calls = sorted({p for p, _why, _rx in refs.items if re.match(r"cuda[A-Z]", p)})
    summary = ("CUDA runtime: " + ", ".join(cuda_calls) + "; the C and C++ standard "
               "libraries' memory, strings, exceptions, containers, console output, clocks "
               "and math; the lab's namespace and CUDA_CHECK")
    return LabRules(
        lab_namespace=ns, lab_folder=lab_folder, references=refs, generated_only=gen,
        generated_defs=Patterns((p, "generated") for p in d.get("generated", [])),
        allow_define=allow_define,
        protected_names=Patterns((p, why_def) for p in d.get("protected_names", [])),
        protected_namespaces=Patterns((p, why_def) for p in d.get("protected_namespaces", [])),
        include_allowed=list(inc.get("allowed", [])),
        include_refused=list(inc.get("refused", [])),
        lab_includes=lab_includes,
        pragmas=list(src.get("pragmas", [])),
        directives=list(src.get("directives", [])),
        refused_attributes=set(src.get("refused_attributes", [])),
        reserved_identifiers=Patterns((p, "reserved") for p in src.get("reserved_identifiers", [])),
        define_why=why_def, summary=summary)


# --- reading an object ---------------------------------------------------------------------------


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
    proc = subprocess.run([_tool("c++filt")], input="\n".join(names) + "\n",
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout.split("\n")
    if proc.returncode != 0 or len(out) < len(names):
        raise CheckError(f"c++filt failed: {proc.stderr.strip()[:300]}")
    return out[:len(names)]


def read_symbols(obj: Path) -> tuple[list[Symbol], dict[str, tuple[str, str]]]:
    """The symbols of an object file and its sections ({index: (name, flags)})."""
    readelf = _tool("readelf")
    proc = subprocess.run([readelf, "-sSW", str(obj)], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        raise CheckError(f"readelf failed on {obj.name}: {proc.stderr.strip()[:300]}")
    rows, sections = [], {}
    for line in proc.stdout.splitlines():
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
    names = demangle([r[0] for r in rows])
    return [Symbol(r[0], d, r[1], r[2], r[3]) for r, d in zip(rows, names)], sections


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


# --- the source ----------------------------------------------------------------------------------


@dataclass
class SourceFacts:
    """What the student's own preprocessed lines do, for the object check."""

    identifiers: set[str] = field(default_factory=set)  # every identifier (__builtin_x -> x too)
    touched_namespaces: set[str] = field(default_factory=set)  # protected ones opened/defined in
    declared_globals: set[str] = field(default_factory=set)  # names declared at global scope


@dataclass
class SourceReport:
    """The result of check_preprocessed: violations and the facts check_object needs."""

    violations: list[Violation] = field(default_factory=list)
    facts: SourceFacts = field(default_factory=SourceFacts)
    files: list[str] = field(default_factory=list)  # every file in the line markers
    own_lines: int = 0


# A runner: argv -> (exit status, or None when it was killed on its time limit; its output).
RunFn = Callable[[list[str]], "tuple[int | None, str]"]


def local_run(timeout: float = 300.0) -> RunFn:
    """A RunFn that runs the command here, unsandboxed (for the grader's own files and tests)."""
    def run(argv: list[str]) -> tuple[int | None, str]:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, ""
        return proc.returncode, proc.stdout + proc.stderr
    return run


@dataclass
class Preprocessed:
    """The preprocessed student file: one host pass and one device pass per architecture."""

    host: Path
    device: list[Path]
    student_file: str  # the student's file as the compiler saw it (absolute)
    toolkit_include: str  # the CUDA toolkit's include folder, as the compiler saw it
    search_dirs: list[str]  # the host compiler's <...> search list


def student_compile_command(nvcc: str, project: Path, lab_folder: str, source: Path,
                            archs: Sequence[str] = ("75",), build_type: str = "Release",
                            obj: Path | None = None) -> list[str]:
    """The nvcc command the build uses for the student's file (cmake/CmlLab.cmake: the lab's
    folder and common/include on the include path, C++17, -lineinfo; CMake's flags for the
    build type; one --generate-code per architecture)."""
    flags = {"Release": ["-O3", "-DNDEBUG"], "Debug": ["-g"],
             "RelWithDebInfo": ["-O2", "-g", "-DNDEBUG"], "MinSizeRel": ["-Os", "-DNDEBUG"]}
    cmd = [nvcc, f"-I{project / 'labs' / lab_folder}", f"-I{project / 'common' / 'include'}",
           *flags.get(build_type, []), "-std=c++17"]
    for a in archs:
        cmd.append(f"--generate-code=arch=compute_{a},code=[compute_{a},sm_{a}]")
    cmd += ["-lineinfo", "-c", str(source), "-o", str(obj or source.with_suffix(".o"))]
    return cmd


def compile_command_from_db(build: Path, source: Path) -> list[str] | None:
    """The build's own command for `source` from build/compile_commands.json (configure with
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON), made absolute; None when it is not there."""
    import json

    try:
        entries = json.loads((build / "compile_commands.json").read_text())
    except (OSError, ValueError):
        return None
    want = os.path.normpath(str(source))
    for e in entries:
        directory = e.get("directory", "")
        file = os.path.normpath(os.path.join(directory, e.get("file", "")))
        if file != want:
            continue
        argv = e.get("arguments") or shlex.split(e.get("command", ""))
        return _absolute(argv, directory)
    return None


def _absolute(argv: list[str], cwd: str) -> list[str]:
    """`argv` with its include folders, source and output made absolute against `cwd`."""
    out, i = [], 0
    take_path = {"-I", "-isystem", "-o", "-include", "--include-path", "--output-file"}
    while i < len(argv):
        a = argv[i]
        if a in take_path and i + 1 < len(argv):
            out += [a, os.path.normpath(os.path.join(cwd, argv[i + 1]))]
            i += 2
            continue
        m = re.match(r"(-I|-isystem|-o)(.+)$", a)
        if m and not a.startswith("-o3"):
            out.append(m.group(1) + os.path.normpath(os.path.join(cwd, m.group(2))))
        elif i > 0 and not a.startswith("-") and a.endswith((".cu", ".cpp", ".cc", ".cxx")):
            out.append(os.path.normpath(os.path.join(cwd, a)))
        else:
            out.append(a)
        i += 1
    return out


def _source_of(compile_cmd: list[str]) -> str:
    for a in reversed(compile_cmd[1:]):
        if a.endswith(".cu") and not a.startswith("-"):
            return a
    raise CheckError("the compile command names no .cu file")


def preprocess(compile_cmd: list[str], out_dir: Path, run: RunFn) -> Preprocessed:
    """Preprocesses the student's file as `compile_cmd` (the nvcc command that builds its
    object, with absolute paths) would: asks nvcc for its commands (`--dryrun`) and runs its
    host and device preprocessing steps, with our output files, through `run` (which may
    sandbox them: the source is untrusted). Raises CheckError when that fails."""
    out_dir.mkdir(parents=True, exist_ok=True)
    source = _source_of(compile_cmd)
    argv = list(compile_cmd)
    if "-o" in argv:
        argv[argv.index("-o") + 1] = str(out_dir / "dryrun.o")
    rc, text = run(argv + ["--dryrun"])
    if rc is None:
        raise CheckError("nvcc --dryrun did not finish in time")
    if rc != 0:
        raise CheckError("nvcc --dryrun failed: " + text.strip()[-400:])
    toolkit = ""
    steps: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("#$ "):
            continue
        body = line[3:].strip()
        m = re.match(r'INCLUDES="-I([^"]+)"', body)
        if m:
            toolkit = os.path.normpath(m.group(1))
            continue
        try:
            words = shlex.split(body)
        except ValueError:
            continue
        if "-E" in words and "-o" in words and words[words.index("-o") + 1].endswith(".ii"):
            steps.append(words)
    host = [w for w in steps if not any(x.startswith("-D__CUDA_ARCH__=") for x in w)]
    device = [w for w in steps if w not in host]
    if len(host) != 1 or not device:
        raise CheckError("could not find nvcc's preprocessing steps in its --dryrun output "
                         f"({len(host)} host, {len(device)} device)")
    if not toolkit:
        nvcc = compile_cmd[0]
        toolkit = os.path.normpath(os.path.join(os.path.dirname(nvcc), "..", "include"))
    outputs: list[Path] = []
    search: list[str] = []
    for k, words in enumerate(host + device):
        name = "host.ii" if k == 0 else f"device{k}.ii"
        target = out_dir / name
        words = list(words)
        words[words.index("-o") + 1] = str(target)
        if k == 0:
            words.insert(1, "-v")
        rc, text = run(words)
        if rc is None:
            raise CheckError("preprocessing did not finish in time (does the file include a "
                             "device or a huge file?)")
        if rc != 0 or not target.is_file():
            raise CheckError("preprocessing failed: " + text.strip()[-600:])
        if k == 0:
            search = _search_list(text)
        outputs.append(target)
    return Preprocessed(outputs[0], outputs[1:], os.path.normpath(source), toolkit, search)


def _search_list(verbose: str) -> list[str]:
    dirs, inside = [], False
    for line in verbose.splitlines():
        if line.startswith("#include <...> search starts here"):
            inside = True
            continue
        if line.startswith("End of search list"):
            break
        if inside and line.startswith(" "):
            dirs.append(os.path.normpath(line.strip().split(" (")[0]))
    return dirs


# -- line markers ------------------------------------------------------------------------------

_MARKER = re.compile(r'^#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"((?:\s+\d+)*)\s*$')


def _unescape(s: str) -> str:
    return re.sub(r'\\([0-7]{1,3}|.)',
                  lambda m: chr(int(m.group(1), 8)) if m.group(1)[0] in "01234567" else m.group(1),
                  s)


@dataclass
class _Walk:
    own: list[tuple[int, str]]  # (line number, text) of the student's own lines
    pragmas: list[tuple[int, str]]  # (line, pragma text) on the student's lines
    entered: list[tuple[str, int, str]]  # (file, student line or 0, includer) for every file
    renamed: list[tuple[int, str]]  # #line-style switches away from the student's file


def _canon(path: str) -> str:
    """A marker's or a root's path, normalised; symlinks resolved where the path exists
    here (the system's and the toolkit's folders; a jail's own paths are kept as they are)."""
    if path.startswith("<"):
        return path
    norm = os.path.normpath(path)
    return os.path.realpath(norm) if os.path.exists(norm) else norm


def _walk(text: str, student: str) -> _Walk:
    own, pragmas, entered, renamed = [], [], [], []
    stack: list[str] = []
    current, line = "", 0
    started = False  # the student's file has begun (its first line of text was seen)
    last_own = 0
    for raw in text.split("\n"):
        m = _MARKER.match(raw)
        if m:
            number, name, flags = int(m.group(1)), _unescape(m.group(2)), m.group(3).split()
            name = _canon(name)
            if "1" in flags:
                entered.append((name, line if current == student else 0, current))
                stack.append(current)
            elif "2" in flags:
                if stack:
                    stack.pop()
            elif name != current and current == student and started:
                renamed.append((last_own, name))
            current, line = name, number
            continue
        if current == student:
            started = started or bool(raw.strip())
            if raw.lstrip().startswith("#pragma"):
                pragmas.append((line, raw.strip()[len("#pragma"):].strip()))
            elif raw.strip():
                own.append((line, raw))
            last_own = line
        line += 1
    return _Walk(own, pragmas, entered, renamed)


# -- tokens ------------------------------------------------------------------------------------

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
class _Tok:
    kind: str  # id, str, num, punct
    text: str
    line: int


def _tokens(own: list[tuple[int, str]]) -> list[_Tok]:
    text = "\n".join(t for _, t in own)
    lines = [n for n, _ in own]
    out, row = [], 0
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
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
        out.append(_Tok(kind, value, lines[min(row, len(lines) - 1)] if lines else 0))
        row += value.count("\n")
    return out


_ASM = {"asm", "__asm", "__asm__"}
_USE_BEFORE = {"=", "(", ",", "[", "?", ":", "return", "throw", "+", "-", "/", "%", "!", "|",
               "^", "~", ".", "->", "case", "sizeof", "alignof", "decltype", "typeid", "new",
               "delete", "co_return", "co_yield", "co_await", "<", "using", "public",
               "private", "protected", "virtual", "typename", "friend", "template"}


def _qualified(toks: list[_Tok], i: int) -> tuple[list[str], int]:
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
            depth, j = 0, i
            while j < n:
                x = toks[j].text
                if x in "<([{":
                    depth += 1
                elif x in ">)]}":
                    depth -= 1
                    if depth == 0:
                        break
                elif x == ";":
                    break
                j += 1
            if j < n and toks[j].text == ">":
                i = j + 1
        if i < n and toks[i].text == "::" and i + 1 < n and \
                (toks[i + 1].kind == "id" or toks[i + 1].text == "~"):
            i += 1
            continue
        break
    return parts, i


def _scan(toks: list[_Tok], rules: LabRules, display: str,
          facts: SourceFacts) -> list[Violation]:
    """Namespace-scope analysis: protected namespaces opened, aliased or defined in by a
    qualified name; names declared at global scope."""
    found: list[Violation] = []
    protected = rules.protected_namespaces
    kinds: list[str] = []  # 'ns:<name>', 'extern', 'other'
    paren = 0
    in_init = False
    pending_block: str | None = None
    aliases: dict[str, str] = {}
    n = len(toks)
    i = 0

    def at(k: int) -> str:
        return toks[k].text if 0 <= k < n else ""

    def flag(t: _Tok, ns: str, what: str) -> None:
        facts.touched_namespaces.add(ns)
        found.append(Violation(
            "source", what, f"{display}:{t.line}",
            f"a student file may not open or define names in the namespace `{ns}`, which "
            "belongs to the harness or a library (write your helpers in your lab's "
            f"namespace `{rules.lab_namespace}` or an anonymous namespace)"))

    while i < n:
        t = toks[i]
        if kinds and kinds[-1] == "other":
            if t.text == "{":
                kinds.append("other")
            elif t.text == "}":
                kinds.pop()
            i += 1
            continue
        if t.text == "{":
            kinds.append(pending_block or "other")
            pending_block = None
            i += 1
            continue
        if t.text == "}":
            if kinds:
                kinds.pop()
            in_init = False
            i += 1
            continue
        if t.text in ("(", "["):
            paren += 1
        elif t.text in (")", "]"):
            paren = max(0, paren - 1)
        if paren > 0 or t.text in (")", "]"):
            i += 1
            continue
        if t.text == "=":
            in_init = True
        elif t.text in (";", ","):
            in_init = False
            i += 1
            continue
        if in_init:
            i += 1
            continue
        if t.text == "extern" and toks[i + 1:i + 2] and toks[i + 1].kind == "str" and \
                at(i + 2) == "{":
            pending_block = "extern"
            i += 2
            continue
        if t.text == "namespace":
            j = i + 1
            names: list[str] = []
            while j < n and (toks[j].kind == "id" or toks[j].text == "::"):
                if toks[j].kind == "id" and toks[j].text != "inline":
                    names.append(toks[j].text)
                j += 1
            if at(j) == "=":  # namespace alias: using it is fine, defining through it is not
                target, k = _qualified(toks, j + 1)
                if target and names:
                    aliases[names[-1]] = aliases.get(target[0], target[0])
                i = k
                continue
            if names and protected.match(names[0]):
                flag(t, names[0], "namespace " + "::".join(names))
            pending_block = "ns:" + ("::".join(names) if names else "(anonymous)")
            i = j
            continue
        if t.kind == "id" or (t.text == "::" and at(i + 1) and toks[i + 1].kind == "id"):
            prev = at(i - 1)
            parts, j = _qualified(toks, i)
            nxt = at(j)
            pointer = nxt == "(" and at(j + 1) in ("*", "&", "^")  # T (*p)(...): a type
            if parts and nxt in ("(", "[", "=", ";", "{", ",", ":") and \
                    prev not in _USE_BEFORE and not pointer:
                first = aliases.get(parts[0], parts[0])
                if len(parts) > 1 and protected.match(first):
                    flag(t, first, "::".join(parts))
                elif len(parts) == 1 and all(k == "extern" for k in kinds):
                    facts.declared_globals.add(parts[0])
            i = max(j, i + 1)
            continue
        i += 1
    return found


def _attributes(toks: list[_Tok], rules: LabRules, display: str) -> list[Violation]:
    found = []
    refused = {a for a in rules.refused_attributes} | {f"__{a}__" for a in rules.refused_attributes}
    n, i = len(toks), 0
    while i < n:
        t = toks[i]
        start = None
        if t.text in ("__attribute__", "__attribute", "__declspec") and i + 1 < n and \
                toks[i + 1].text == "(":
            start = i + 1
        elif t.text == "[" and i + 1 < n and toks[i + 1].text == "[":
            start = i
        if start is None:
            i += 1
            continue
        depth, j = 0, start
        while j < n:
            x = toks[j].text
            if x in "([":
                depth += 1
            elif x in ")]":
                depth -= 1
                if depth == 0:
                    break
            elif toks[j].kind == "id" and x in refused:
                found.append(Violation(
                    "source", x, f"{display}:{toks[j].line}",
                    "this attribute places code or data in a chosen section or makes one "
                    "symbol stand for another; a student file may not use it"))
            j += 1
        i = j + 1
    return found


def _pragma_allowed(text: str, allowed: list[str]) -> bool:
    words = " ".join(re.split(r"[\s(]+", text.strip(), maxsplit=2)[:2])
    for a in allowed:
        if text.strip() == a or text.strip().startswith(a + " ") or \
                text.strip().startswith(a + "(") or words == a:
            return True
    return False


def _path_patterns(patterns: list[str], env: dict[str, list[str]]) -> list[re.Pattern[str]]:
    out = []
    for p in patterns:
        expansions = [p]
        for key, values in env.items():
            token = "{" + key + "}"
            nxt = []
            for e in expansions:
                if token in e:
                    nxt += [e.replace(token, _canon(v).rstrip("/")) for v in values]
                else:
                    nxt.append(e)
            expansions = nxt
        out += [_glob_re(e, path=True) for e in expansions if "{" not in e]
    return out


def check_raw_source(text: str, display: str, rules: LabRules) -> list[Violation]:
    """The directives of the raw file (BOM and CRLF allowed): only ordinary ones."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    found = []
    spliced_lines: list[tuple[int, str]] = []
    buf, first = "", 1
    for number, line in enumerate(strip_comments(text).split("\n"), start=1):
        if not buf:
            first = number
        if line.endswith("\\"):
            buf += line[:-1]
            continue
        spliced_lines.append((first, buf + line))
        buf = ""
    if buf:
        spliced_lines.append((first, buf))
    for number, line in spliced_lines:
        m = re.match(r"\s*(?:#|%:)\s*(\w*)", line)
        if not m:
            continue
        name = m.group(1)
        if name == "" and not line.strip().lstrip("#%:").strip():
            continue  # the null directive
        if name not in rules.directives:
            shown = "#" + (name if not name.isdigit() else name + ' "file"')
            found.append(Violation(
                "source", shown, f"{display}:{number}",
                "this preprocessing directive is not allowed in a student file (#line and "
                "line markers would hide your lines from the checks); allowed: "
                + ", ".join("#" + d for d in rules.directives)))
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


def check_preprocessed(pre: Preprocessed, rules: LabRules, project: str,
                       display: str, source_text: str | None = None) -> SourceReport:
    """Checks the preprocessed student file (`preprocess`'s result). `project` is the
    repository root as the compiler saw it (for the allowed project headers), `display` the
    name shown in messages (labs/04_tiled_matmul/tiled_matmul.cu), `source_text` the raw
    file (for the directive check; read from pre.student_file when None)."""
    report = SourceReport()
    if source_text is None:
        try:
            source_text = Path(pre.student_file).read_text(encoding="utf-8", errors="replace")
        except OSError:
            source_text = ""
    report.violations += check_raw_source(source_text, display, rules)
    # The main file as the compiler saw it is the first line marker's (in a jail its path
    # differs from ours: the project's root is mapped the same way).
    student, project = _main_file(pre, project)

    cxx = [d for d in pre.search_dirs if "/c++/" in d + "/" or "/gcc/" in d or "/clang/" in d]
    usr = [d for d in pre.search_dirs if d == "/usr/include"] or ["/usr/include"]
    multiarch = [d for d in pre.search_dirs
                 if d.startswith("/usr/include/") and d not in cxx and "/c++" not in d]
    env = {"project": [os.path.normpath(project)],
           "lab": [os.path.normpath(os.path.join(project, "labs", rules.lab_folder))],
           "toolkit": [pre.toolkit_include], "cxx": cxx or ["/nonexistent"], "usr": usr,
           "multiarch": multiarch or ["/nonexistent"]}
    allowed = _path_patterns(rules.include_allowed, env)
    allowed += _path_patterns(["{project}/" + p for p in rules.lab_includes], env)
    refused = _path_patterns(rules.include_refused, env)

    texts = []
    for path in [pre.host, *pre.device]:
        texts.append(path.read_text(encoding="utf-8", errors="replace"))
    seen_files: set[str] = set()
    bad_files: set[str] = set()
    reported: set[tuple[str, str]] = set()
    own_all: list[list[tuple[int, str]]] = []
    pragma_all: list[tuple[int, str]] = []
    for text in texts:
        walk = _walk(text, student)
        own_all.append(walk.own)
        pragma_all += walk.pragmas
        for line, name in walk.renamed:
            key = ("#line", name)
            if key not in reported:
                reported.add(key)
                report.violations.append(Violation(
                    "source", "#line", f"{display}:{line}",
                    f"a line directive makes the following lines look like `{name}`'s"))
        for name, line, includer in walk.entered:
            seen_files.add(name)
            if name.startswith("<") or name == student:
                continue
            ok = any(p.match(name) for p in allowed) and not any(p.match(name) for p in refused)
            if ok:
                continue
            bad_files.add(name)
            if includer in bad_files:
                continue  # reported where the first refused file was included
            if (name, "inc") in reported:
                continue
            reported.add((name, "inc"))
            where = f"{display}:{line}" if line else display
            shown = _shown_path(name, project)
            report.violations.append(Violation(
                "include", shown, where,
                "allowed: the C and C++ standard headers, the CUDA runtime headers "
                "(cuda_runtime.h, cooperative_groups.h, cuda_fp16.h, ...), common/include/cml/ "
                f"and the lab's own headers in labs/{rules.lab_folder}/; not other CUDA "
                "libraries (cuBLAS, thrust, cub, the occupancy calculator, the driver API), "
                "test sources, solutions or any other file"))
    report.files = sorted(seen_files)
    report.own_lines = max((len(o) for o in own_all), default=0)
    if report.own_lines == 0 and re.search(r"[A-Za-z0-9_]", strip_comments(source_text)) \
            and not report.violations:  # (a #line refusal explains it)
        raise CheckError("the student's own lines were not found in the preprocessed file "
                         f"(main file {student})")

    facts = report.facts
    for line, text in sorted(set(pragma_all)):
        if not _pragma_allowed(text, rules.pragmas):
            key = ("pragma", f"{line}:{text}")
            if key in reported:
                continue
            reported.add(key)
            report.violations.append(Violation(
                "source", "#pragma " + text[:60], f"{display}:{line}",
                "this pragma is not allowed in a student file; allowed: "
                + ", ".join(rules.pragmas)))

    for own in own_all:
        toks = _tokens(own)
        for t in toks:
            if t.kind == "id":
                facts.identifiers.add(t.text)
                if t.text.startswith("__builtin_"):
                    facts.identifiers.add(t.text[len("__builtin_"):])
                key = None
                if t.text in _ASM:
                    key = ("asm", str(t.line))
                    why = ("inline assembly is not allowed in a student file (in any spelling, "
                           "also made by a macro)")
                elif rules.reserved_identifiers.match(t.text):
                    key = ("reserved", f"{t.line}:{t.text}")
                    why = ("this name is reserved for the compilers' generated code (mangled "
                           "names, nvcc's stubs)")
                if key and key not in reported:
                    reported.add(key)
                    report.violations.append(Violation("source", t.text, f"{display}:{t.line}", why))
            elif t.kind == "str" and ".incbin" in t.text.lower():
                key = ("incbin", str(t.line))
                if key not in reported:
                    reported.add(key)
                    report.violations.append(Violation(
                        "source", ".incbin", f"{display}:{t.line}",
                        "assembler directives that pull in files are not allowed"))
        for v in _scan(toks, rules, display, facts) + _attributes(toks, rules, display):
            key = (v.name, v.where)
            if key not in reported:
                reported.add(key)
                report.violations.append(v)
    return report


def _main_file(pre: Preprocessed, project: str) -> tuple[str, str]:
    """(the student's file, the project root), both as the compiler saw them."""
    ours = _canon(pre.student_file)
    with open(pre.host, encoding="utf-8", errors="replace") as f:
        first = f.readline()
    m = _MARKER.match(first.rstrip("\n"))
    if not m:
        raise CheckError("the preprocessed file does not start with a line marker")
    main = _canon(_unescape(m.group(2)))
    if main == ours:
        return main, project
    a, b = ours.split("/"), main.split("/")
    k = 0
    while k < min(len(a), len(b)) and a[-1 - k] == b[-1 - k]:
        k += 1
    if k == 0:
        raise CheckError(f"the preprocessed file's main file {main} is not {ours}")
    ours_root, main_root = "/".join(a[:-k]) or "/", "/".join(b[:-k]) or "/"
    proj = os.path.normpath(project)
    if proj == ours_root or proj.startswith(ours_root.rstrip("/") + "/"):
        proj = os.path.normpath(main_root + "/" + proj[len(ours_root):])
    return main, proj


def _shown_path(name: str, project: str) -> str:
    project = os.path.normpath(project)
    if name.startswith(project + os.sep):
        return os.path.relpath(name, project)
    return name


# --- the object ------------------------------------------------------------------------------------


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


# --- all together -------------------------------------------------------------------------------


def check_submission(student_obj: Path, reference_obj: Path | None, compile_cmd: list[str],
                     rules: LabRules, project: str, display: str, run: RunFn,
                     work_dir: Path, harness: Sequence[Path] = (),
                     source_text: str | None = None) -> list[Violation]:
    """preprocess + check_preprocessed + check_object, for callers that want one call."""
    pre = preprocess(compile_cmd, work_dir, run)
    report = check_preprocessed(pre, rules, project, display, source_text)
    return report.violations + check_object(student_obj, reference_obj, rules, report, harness)

