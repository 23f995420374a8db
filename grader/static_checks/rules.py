"""The static checks' rules for one lab: the shared allow-lists (grader/allowlist.toml) merged
with the lab's rubric [static] table into a LabRules, and the glob patterns (Patterns) the
lists are written in."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

ALLOWLIST = Path(__file__).parent.parent / "allowlist.toml"


def glob_re(pattern: str, path: bool = False) -> re.Pattern[str]:
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
        self.items = [(p, why, glob_re(p, path)) for p, why in items]

    def add(self, pattern: str, why: str, path: bool = False) -> None:
        self.items.append((pattern, why, glob_re(pattern, path)))

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
    refused_references: Patterns  # the lab's refuse_reference: refused even when listed
    generated_defs: Patterns
    allow_define: Patterns
    protected_names: Patterns  # C-linkage names never defined by a student file
    protected_cxx_names: Patterns  # global C++ functions never defined (operator new, ...)
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


def _load_toml(path: Path) -> dict[str, Any]:
    from ..tomlreader import tomllib  # the same TOML reader as the rubrics

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
    refused_refs = Patterns()
    lab_includes: list[str] = []
    if static is not None:
        for sym in getattr(static, "allow_reference", []):
            refs.add(sym.replace("{ns}", ns), lab_why)
        refuse_why = getattr(static, "refuse_why", "") or "this lab does not allow it"
        for sym in getattr(static, "refuse_reference", []):
            refused_refs.add(sym.replace("{ns}", ns),
                             f"{refuse_why} (labs/{lab_folder}/grading.toml)")
        for sym in getattr(static, "allow_define", []):
            allow_define.add(sym.replace("{ns}", ns), lab_why)
        lab_includes = list(getattr(static, "allow_include", []))
    d = doc.get("define", {})
    why_def = d.get("why", "")
    inc = doc.get("include", {})
    src = doc.get("source", {})
    cuda_calls = sorted({p for p, _why, _rx in refs.items if re.match(r"cuda[A-Z]", p)
                         and not refused_refs.match(p)})
    summary = ("CUDA runtime: " + ", ".join(cuda_calls) + "; the C and C++ standard "
               "libraries' memory, strings, exceptions, containers, console output, clocks "
               "and math; the lab's namespace and CUDA_CHECK")
    return LabRules(
        lab_namespace=ns, lab_folder=lab_folder, references=refs, generated_only=gen,
        refused_references=refused_refs,
        generated_defs=Patterns((p, "generated") for p in d.get("generated", [])),
        allow_define=allow_define,
        protected_names=Patterns((p, why_def) for p in d.get("protected_names", [])),
        protected_cxx_names=Patterns((p, why_def) for p in d.get("protected_cxx_names", [])),
        protected_namespaces=Patterns((p, why_def) for p in d.get("protected_namespaces", [])),
        include_allowed=list(inc.get("allowed", [])),
        include_refused=list(inc.get("refused", [])),
        lab_includes=lab_includes,
        pragmas=list(src.get("pragmas", [])),
        directives=list(src.get("directives", [])),
        refused_attributes=set(src.get("refused_attributes", [])),
        reserved_identifiers=Patterns((p, "reserved") for p in src.get("reserved_identifiers", [])),
        define_why=why_def, summary=summary)
