"""Scans of the student's tokens for the source check: the namespace-scope scan (protected
namespaces opened, aliased or defined in through a qualified name; names declared at
global scope, for the object check) and the attribute scan (attributes that pick a section
or make an alias)."""

from __future__ import annotations

from .lexer import Tok, closing, qualified_name
from .results import SourceFacts, Violation
from .rules import LabRules


_USE_BEFORE = {"=", "(", ",", "[", "?", ":", "return", "throw", "+", "-", "/", "%", "!", "|",
               "^", "~", ".", "->", "case", "sizeof", "alignof", "decltype", "typeid", "new",
               "delete", "co_return", "co_yield", "co_await", "<", "using", "public",
               "private", "protected", "virtual", "typename", "friend", "template"}


def scan_namespaces(toks: list[Tok], rules: LabRules, display: str,
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

    def flag(t: Tok, ns: str, what: str) -> None:
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
        if t.text == "namespace" and at(i - 1) == "using":
            # `using namespace std;` makes names visible; it opens nothing and defines
            # nothing (a definition through it is still unqualified, in the file's scope).
            i += 1
            while i < n and toks[i].text != ";":
                i += 1
            continue
        if t.text == "namespace":
            j = i + 1
            names: list[str] = []
            while j < n and (toks[j].kind == "id" or toks[j].text == "::"):
                if toks[j].kind == "id" and toks[j].text != "inline":
                    names.append(toks[j].text)
                j += 1
            if at(j) == "=":  # namespace alias: using it is fine, defining through it is not
                target, k = qualified_name(toks, j + 1)
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
            parts, j = qualified_name(toks, i)
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


def scan_attributes(toks: list[Tok], rules: LabRules, display: str) -> list[Violation]:
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
        j = closing(toks, start, "([", ")]")
        for tok in toks[start:j]:
            if tok.kind == "id" and tok.text in refused:
                found.append(Violation(
                    "source", tok.text, f"{display}:{tok.line}",
                    "this attribute places code or data in a chosen section or makes one "
                    "symbol stand for another; a student file may not use it"))
        i = j + 1
    return found
