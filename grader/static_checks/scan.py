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
    scan = _NamespaceScan(toks, rules, display, facts)
    i = 0
    while i < len(toks):
        i = scan.step(i)
    return scan.found


class _NamespaceScan:
    """scan_namespaces' walk: the blocks open, the brackets, initialisers and aliases seen."""

    def __init__(self, toks: list[Tok], rules: LabRules, display: str,
                 facts: SourceFacts) -> None:
        self.toks, self.rules, self.display, self.facts = toks, rules, display, facts
        self.found: list[Violation] = []
        self.kinds: list[str] = []  # 'ns:<name>', 'extern', 'other'
        self.paren = 0
        self.in_init = False
        self.pending_block: str | None = None
        self.aliases: dict[str, str] = {}

    def at(self, k: int) -> str:
        """The text of token `k` ("" outside the tokens)."""
        return self.toks[k].text if 0 <= k < len(self.toks) else ""

    def flag(self, t: Tok, ns: str, what: str) -> None:
        """A violation at `t`: `what` opens or defines names in the protected namespace `ns`."""
        self.facts.touched_namespaces.add(ns)
        self.found.append(Violation(
            "source", what, f"{self.display}:{t.line}",
            f"a student file may not open or define names in the namespace `{ns}`, which "
            "belongs to the harness or a library (write your helpers in your lab's "
            f"namespace `{self.rules.lab_namespace}` or an anonymous namespace)"))

    def step(self, i: int) -> int:
        """Reads the token at `i`; returns the index of the next one to read."""
        toks, t = self.toks, self.toks[i]
        if self._declares_nothing(t):
            return i + 1
        if t.text == "extern" and toks[i + 1:i + 2] and toks[i + 1].kind == "str" and \
                self.at(i + 2) == "{":
            self.pending_block = "extern"
            return i + 2
        if t.text == "namespace" and self.at(i - 1) == "using":
            # `using namespace std;` makes names visible; it opens nothing and defines
            # nothing (a definition through it is still unqualified, in the file's scope).
            i += 1
            while i < len(toks) and toks[i].text != ";":
                i += 1
            return i
        if t.text == "namespace":
            return self._namespace(i)
        if t.kind == "id" or (t.text == "::" and self.at(i + 1) and toks[i + 1].kind == "id"):
            return self._name(i)
        return i + 1

    def _declares_nothing(self, t: Tok) -> bool:
        """Follows the blocks, brackets and initialisers: True for a token that declares nothing."""
        if self.kinds and self.kinds[-1] == "other":
            if t.text == "{":
                self.kinds.append("other")
            elif t.text == "}":
                self.kinds.pop()
            return True
        if t.text == "{":
            self.kinds.append(self.pending_block or "other")
            self.pending_block = None
            return True
        if t.text == "}":
            if self.kinds:
                self.kinds.pop()
            self.in_init = False
            return True
        if t.text in ("(", "["):
            self.paren += 1
        elif t.text in (")", "]"):
            self.paren = max(0, self.paren - 1)
        if self.paren > 0 or t.text in (")", "]"):
            return True
        if t.text == "=":
            self.in_init = True
        elif t.text in (";", ","):
            self.in_init = False
            return True
        return self.in_init

    def _namespace(self, i: int) -> int:
        """`namespace` at `i`: an alias noted, or a block opened (flagged where protected)."""
        toks, n = self.toks, len(self.toks)
        j = i + 1
        names: list[str] = []
        while j < n and (toks[j].kind == "id" or toks[j].text == "::"):
            if toks[j].kind == "id" and toks[j].text != "inline":
                names.append(toks[j].text)
            j += 1
        if self.at(j) == "=":  # namespace alias: using it is fine, defining through it is not
            target, k = qualified_name(toks, j + 1)
            if target and names:
                self.aliases[names[-1]] = self.aliases.get(target[0], target[0])
            return k
        if names and self.rules.protected_namespaces.match(names[0]):
            self.flag(toks[i], names[0], "namespace " + "::".join(names))
        self.pending_block = "ns:" + ("::".join(names) if names else "(anonymous)")
        return j

    def _name(self, i: int) -> int:
        """A name at `i`: declared through a protected namespace (flagged), or at global scope."""
        prev = self.at(i - 1)
        parts, j = qualified_name(self.toks, i)
        nxt = self.at(j)
        pointer = nxt == "(" and self.at(j + 1) in ("*", "&", "^")  # T (*p)(...): a type
        if parts and nxt in ("(", "[", "=", ";", "{", ",", ":") and \
                prev not in _USE_BEFORE and not pointer:
            first = self.aliases.get(parts[0], parts[0])
            if len(parts) > 1 and self.rules.protected_namespaces.match(first):
                self.flag(self.toks[i], first, "::".join(parts))
            elif len(parts) == 1 and all(k == "extern" for k in self.kinds):
                self.facts.declared_globals.add(parts[0])
        return max(j, i + 1)


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
