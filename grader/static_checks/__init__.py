"""Static checks on the student's file: allow-lists for what its object references and
defines, and checks on its preprocessed source. Nothing here runs the student's code.

Three checks, each an allow-list (grader/allowlist.toml, plus the lab's [static] table, which
may add to it or, with refuse_reference, take from it). They are a safety net: the wall is
the process boundary (the sandbox), so they refuse what reaches past it or into the harness
and allow what costs a student only their own test case (exit, abort, quick_exit: the test
runner fails the case that ended its process and re-runs the others one per process).

1. **References.** Every undefined symbol of the student's object (`readelf -sW`, names
   demangled with c++filt; weak references count too) must match an allowed pattern: the
   CUDA runtime calls fair code uses, the C and C++ library pieces fair code uses, the
   project's error checks and the lab's own namespace. A few symbols are marked
   `generated_only`: nvcc's stubs (`__cudaRegisterFatBinary`, `__cudaPushCallConfiguration`,
   `atexit`) and the C++ ABI the host compiler calls. They are allowed only while the
   student's own preprocessed lines never name them: then the reference can only come from
   generated code.

2. **Definitions.** Every symbol the object defines with external linkage is checked:
   - a C-linkage name (an `extern "C"` function, or any variable at global scope: C++ does
     not mangle variables) is refused only when it collides: with a protected name (`main`,
     `cuda*`, `cu[A-Z]*`, `__cuda*`, `__wrap_*`, `__real_*`), a reserved one (`_` and a
     capital letter, or `__`), a name a harness object defines, or a name the system
     libraries export (`libraries`: libc, libm, libstdc++, libgcc_s, the CUDA runtime);
   - a mangled global function never stands for a C name (`cudaCheck(cudaError_t, ...)` is
     the student's own); only the protected C++ names (`operator new`/`delete`) and names a
     harness object defines are refused;
   - strong definitions in a protected namespace (`cml::`, `std::`, `Catch::`,
     `labNN_test::`, ...) are refused; weak ones (template and inline instantiations: GCC
     emits every instantiation of a header's template the student uses, e.g.
     `std::__cxx11::to_string(int)`) are allowed unless the student's own lines open that
     namespace or define a name qualified by it (`using namespace std;` opens nothing);
   - the lab's interface (the reference solution's own strong definitions; the lab may add
     `allow_define`) and nvcc's generated functions are always allowed.
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
line (for a symbol, the student's line whose tokens name it, when there is one) and says what
to do instead and what the lab allows.

The modules, one job each: `rules` (the allow-lists for a lab), `symbols` (an object's
symbols, demangled, and the scope of a mangled name), `nvcc` (the build's command and
nvcc's preprocessing passes), `markers` (the line markers of a preprocessed file), `lexer`
and `scan` (the student's tokens and what they declare), `source` (check 3), `libraries` (the
names the system libraries export), `objects` (checks 1 and 2), `all_checks` (all three in
one call) and `results` (what they hand back).
"""

from __future__ import annotations

from .all_checks import check_submission
from .lexer import strip_comments
from .nvcc import (Preprocessed, RunFn, compile_command_from_db, local_run, preprocess,
                   student_compile_command)
from .objects import check_object, harness_objects, interface_of
from .results import CheckError, SourceFacts, SourceReport, Violation
from .rules import ALLOWLIST, LabRules, Patterns, load_rules
from .source import check_preprocessed, check_raw_source
from .symbols import Symbol, demangle, read_symbols, read_symbols_of, scope_of

__all__ = [
    "ALLOWLIST", "CheckError", "LabRules", "Patterns", "Preprocessed", "RunFn", "SourceFacts",
    "SourceReport", "Symbol", "Violation", "check_object", "check_preprocessed",
    "check_raw_source", "check_submission", "compile_command_from_db", "demangle",
    "harness_objects", "interface_of", "load_rules", "local_run", "preprocess",
    "read_symbols", "read_symbols_of", "scope_of", "strip_comments", "student_compile_command",
]
