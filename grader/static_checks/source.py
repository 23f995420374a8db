"""The source check: the raw file's directives, and the preprocessed student file's includes,
pragmas, inline assembly, reserved identifiers, namespaces and attributes on the student's
own lines (after macro expansion), gathered into a SourceReport."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .lexer import Tok, strip_comments, tokens_of
from .markers import canon, main_file, shown_path, walk_markers
from .nvcc import Preprocessed
from .results import CheckError, SourceFacts, SourceReport, Violation
from .rules import LabRules, glob_re
from .scan import scan_attributes, scan_namespaces


_ASM = {"asm", "__asm", "__asm__"}


def _code(source: str) -> str:
    """`source` without its comments and preprocessor directives: what must show up as the
    file's own lines once preprocessed (a file of #include lines alone has none)."""
    kept, directive = [], False
    for line in strip_comments(source).splitlines():
        if directive or line.lstrip().startswith("#"):
            directive = line.rstrip().endswith("\\")
            continue
        kept.append(line)
    return "\n".join(kept)


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
                    nxt += [e.replace(token, canon(v).rstrip("/")) for v in values]
                else:
                    nxt.append(e)
            expansions = nxt
        out += [glob_re(e, path=True) for e in expansions if "{" not in e]
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
    student, project = main_file(pre, project)
    once = _Once(report)
    own_all, pragma_all = _walk_files(pre, rules, project, display, student, once)
    report.own_lines = max((len(o) for o in own_all), default=0)
    if report.own_lines == 0 and re.search(r"[A-Za-z0-9_]", _code(source_text)) \
            and not report.violations:  # (a #line refusal explains it)
        raise CheckError("the student's own lines were not found in the preprocessed file "
                         f"(main file {student})")

    for line, text in sorted(set(pragma_all)):
        if not _pragma_allowed(text, rules.pragmas):
            once.add(("pragma", f"{line}:{text}"), Violation(
                "source", "#pragma " + text[:60], f"{display}:{line}",
                "this pragma is not allowed in a student file; allowed: "
                + ", ".join(rules.pragmas)))

    for own in own_all:
        toks = tokens_of(own)
        _check_tokens(toks, rules, display, report.facts, once)
        scanned = scan_namespaces(toks, rules, display, report.facts)
        for v in scanned + scan_attributes(toks, rules, display):
            once.add((v.name, v.where), v)
    return report


class _Once:
    """A report's violations, each added once for its key (what it is reported once for)."""

    def __init__(self, report: SourceReport) -> None:
        self.report = report
        self.keys: set[tuple[str, str]] = set()

    def add(self, key: tuple[str, str], violation: Violation) -> None:
        """Adds `violation` unless one was added for `key` already."""
        if key not in self.keys:
            self.keys.add(key)
            self.report.violations.append(violation)


def _include_patterns(pre: Preprocessed, rules: LabRules, project: str
                      ) -> tuple[list[re.Pattern[str]], list[re.Pattern[str]]]:
    """The paths a student file may include and those it may not, for this compiler's dirs."""
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
    return allowed, refused


def _walk_files(pre: Preprocessed, rules: LabRules, project: str, display: str, student: str,
                once: _Once) -> tuple[list[list[tuple[int, str]]], list[tuple[int, str]]]:
    """Each preprocessed text's own lines, and the pragmas; #line and refused includes added."""
    allowed, refused = _include_patterns(pre, rules, project)
    texts = []
    for path in [pre.host, *pre.device]:
        texts.append(path.read_text(encoding="utf-8", errors="replace"))
    seen_files: set[str] = set()
    bad_files: set[str] = set()
    own_all: list[list[tuple[int, str]]] = []
    pragma_all: list[tuple[int, str]] = []
    for text in texts:
        walk = walk_markers(text, student)
        own_all.append(walk.own)
        pragma_all += walk.pragmas
        for line, name in walk.renamed:
            once.add(("#line", name), Violation(
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
            where = f"{display}:{line}" if line else display
            once.add((name, "inc"), _refused_include(shown_path(name, project), where, rules))
    once.report.files = sorted(seen_files)
    return own_all, pragma_all


def _refused_include(shown: str, where: str, rules: LabRules) -> Violation:
    """The violation of a file the student's file may not include."""
    return Violation(
        "include", shown, where,
        "allowed: the C and C++ standard headers, the CUDA runtime headers "
        "(cuda_runtime.h, cooperative_groups.h, cuda_fp16.h, ...), common/include/cml/ "
        f"and the lab's own headers in labs/{rules.lab_folder}/; not other CUDA "
        "libraries (cuBLAS, thrust, cub, the occupancy calculator, the driver API), "
        "test sources, solutions or any other file")


def _check_tokens(toks: list[Tok], rules: LabRules, display: str, facts: SourceFacts,
                  once: _Once) -> None:
    """Notes the own tokens' identifiers; adds inline assembly, reserved names and .incbin."""
    for t in toks:
        if t.kind == "id":
            facts.identifiers.add(t.text)
            facts.first_seen.setdefault(t.text, f"{display}:{t.line}")
            if t.text.startswith("__builtin_"):
                bare = t.text[len("__builtin_"):]
                facts.identifiers.add(bare)
                facts.first_seen.setdefault(bare, f"{display}:{t.line}")
            key: tuple[str, str] | None = None
            if t.text in _ASM:
                key = ("asm", str(t.line))
                why = ("inline assembly is not allowed in a student file (in any spelling, "
                       "also made by a macro)")
            elif rules.reserved_identifiers.match(t.text):
                key = ("reserved", f"{t.line}:{t.text}")
                why = ("this name is reserved for the compilers' generated code (mangled "
                       "names, nvcc's stubs)")
            if key:
                once.add(key, Violation("source", t.text, f"{display}:{t.line}", why))
        elif t.kind == "str" and ".incbin" in t.text.lower():
            once.add(("incbin", str(t.line)), Violation(
                "source", ".incbin", f"{display}:{t.line}",
                "assembler directives that pull in files are not allowed"))
