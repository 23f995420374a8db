"""What must not go into the student copy, and the search for it (releases.py): each lab's
answer lines (the lines of its reference's marked regions that its generated skeleton does
not have), its hidden tests' lines (those the labs' public tests do not have) and its hidden
test cases' names, searched for in every released file wherever it is (handouts, common,
grader, other labs, the skeletons). Lines that prove nothing are skipped (`secret_lines`);
in a lab's own folder a file may share one line with its own answer, and a lab's folder may
hold the answers it declares (`find_leaks`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import skeletonize
from ..paths import lab_name_parts
from .copy_files import included, lab_folder
from .head_tree import ReleaseError, Tree

MIN_LINE = 16  # shorter lines ("}", "return 0;") prove nothing
COMMON_FILES = 3  # a line the course repeats in this many public files is an idiom
OWN_LAB_SHARED = 1  # lines of its own answer a file in the lab's folder may share with it

# `int x;`, `Shape s = other;`, `d.size = prop.size;`: a declaration or a copy of one name or
# literal computes nothing.
_PLAIN = re.compile(r"^(?:[A-Za-z_][\w:<>,]*\s+)*[A-Za-z_][\w.]*(?:\s*=\s*[\w.]+)?;$")
_CASE_NAME = re.compile(r'\b(?:TEST_CASE|SCENARIO|TEMPLATE_TEST_CASE)\(\s*"((?:[^"\\]|\\.)+)"')


@dataclass(frozen=True)
class Source:
    """Where a secret line comes from."""

    lab: str  # its lab folder
    path: str  # the solutions/ file
    kind: str  # "answer", "hidden test" or "grader-only" (other files under solutions/)


def _lines(text: str) -> set[str]:
    return {ln.strip() for ln in text.splitlines() if ln.strip()}


def _region_lines(text: str) -> set[str]:
    """The stripped lines inside the solution parts of the marked regions."""
    out: set[str] = set()
    state = "outside"
    for line in text.splitlines():
        if state == "outside":
            if skeletonize.BEGIN.match(line):
                state = "solution"
        elif skeletonize.END.match(line):
            state = "outside"
        elif skeletonize.STUB.match(line):
            state = "stub"
        elif state == "solution" and line.strip():
            out.add(line.strip())
    return out


def _proves_nothing(line: str) -> bool:
    """Short lines, comments, preprocessor lines, lines without a letter or digit, and
    plain declarations or copies (see _PLAIN) say nothing about an answer."""
    return (len(line) < MIN_LINE or line.startswith(("//", "/*", "*", "#"))
            or not re.search(r"[A-Za-z0-9]", line) or bool(_PLAIN.match(line)))


def generated_skeletons(tree: Tree) -> dict[str, str]:
    """Lab folder -> the skeleton its committed reference generates."""
    out = {}
    for folder in tree.labs():
        topic = lab_name_parts(folder)[1]
        rel = f"solutions/{folder}/{topic}.cu"
        text = tree.text(rel)
        if text is None:
            continue
        try:
            out[folder] = skeletonize.make_skeleton(text, rel)
        except skeletonize.MarkerError as err:
            raise ReleaseError(str(err)) from err
    return out


def secret_lines(tree: Tree, released: list[str] | None = None,
                 skeletons: dict[str, str] | None = None) -> dict[str, Source]:
    """Line -> where it comes from, for every line only the solutions have that proves
    something (lines are stripped; "has" means anywhere in a file's text):

    - a lab's answer lines: the solution parts of its reference's marked regions, less what
      its generated skeleton has;
    - its hidden tests' lines (any other file under solutions/NN_topic/), less what the
      labs' public tests have (they share helpers and style; a hidden case copied whole is
      caught by its name, see `hidden_case_names`);

    in both cases less what the generated skeletons of the `released` labs have (published
    by design), lines that `_proves_nothing`, and the course's idioms: lines found in
    COMMON_FILES or more files of a full release. The template's example is no lab's."""
    skeletons = generated_skeletons(tree) if skeletons is None else skeletons
    released = tree.labs() if released is None else released
    published = "\n".join(skeletons.get(folder, "") for folder in released)
    public_tests = "\n".join(tree.text(rel) or "" for rel in tree.under("labs/")
                              if "/tests/" in rel)
    secret: dict[str, Source] = {}
    for folder in tree.labs():
        topic = lab_name_parts(folder)[1]
        reference = f"solutions/{folder}/{topic}.cu"
        # The reference first: a line it shares with grader-only code is named as its answer.
        for rel in sorted(tree.under(f"solutions/{folder}/"), key=lambda r: r != reference):
            text = tree.text(rel)
            if text is None:
                continue
            if rel == reference:
                lines, given = _region_lines(text), skeletons.get(folder, "")
                source = Source(folder, rel, "answer")
            else:
                lines, given = _lines(text), public_tests
                source = Source(folder, rel, "hidden test" if "/tests/" in rel else "grader-only")
            for line in sorted(lines):
                if not (_proves_nothing(line) or line in given or line in published):
                    secret.setdefault(line, source)
    texts = [t for t in (tree.text(rel) for rel in tree.modes if included(rel)) if t]
    return {line: source for line, source in secret.items()
            if sum(1 for t in texts if line in t) < COMMON_FILES}


def hidden_case_names(tree: Tree) -> dict[str, str]:
    """Quoted test-case name -> hidden test file. (A hidden case cannot share its name with
    a public one: both are built into the reference's test executable.)"""
    names: dict[str, str] = {}
    for folder in tree.labs():
        for rel in tree.under(f"solutions/{folder}/"):
            for name in _CASE_NAME.findall(tree.text(rel) or ""):
                names.setdefault(f'"{name}"', rel)
    return names


def find_leaks(tree: Tree, files: list[str], secret: dict[str, Source],
               names: dict[str, str] | None = None,
               allowed: dict[str, set[str]] | None = None) -> list[str]:
    """"path: line (where it comes from)" for each secret line or hidden case name found in
    `files`. In a lab's own folder a file may share OWN_LAB_SHARED line(s) with that lab's
    answer (a baseline is a variant of the same kernel; a public test probes the same
    hardware); such a line is then published and found nowhere else either. `allowed`:
    lab folder -> the labs whose answers its folder may hold (declared in grading.toml)."""
    allowed = allowed or {}
    found: dict[str, list[tuple[str, Source]]] = {}
    for rel in files:
        text = tree.text(rel)
        if text is not None:  # binary: figures are SVG (text), so nothing to search here
            found[rel] = [(line, source) for line, source in secret.items() if line in text]
    shared: set[str] = set()
    for rel, hits in found.items():
        own = [line for line, source in hits
               if source.kind == "answer" and source.lab == lab_folder(rel)]
        if len(own) <= OWN_LAB_SHARED:
            shared.update(own)
    leaks = []
    for rel, hits in found.items():
        for line, source in hits:
            if line in shared or (source.kind == "answer"
                                  and source.lab in allowed.get(lab_folder(rel) or "", ())):
                continue
            leaks.append(f"{rel}: {line!r} ({source.kind} line of {source.path})")
        text = tree.text(rel) or ""
        for name, test_file in (names or {}).items():
            if name in text:
                leaks.append(f"{rel}: names the hidden test case {name} ({test_file})")
    return leaks
