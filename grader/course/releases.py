"""The student copy: this repository's committed tree without what only the grader may see.

What goes in is a list of top-level entries (the labs with their skeletons, handouts, the
common library, the grader, the build files, tools, docs); anything else, new folders
included, stays out unless added here. The copy's workflows are its own (student_copy.py):
none of the course's goes out, so the copy has none that uses a GPU runner or a secret.
Left out besides: the reference solutions with their hidden tests, the grader's own tests
made from the solutions, and, in a staged release (`labs`), the other labs' folders,
handouts and figures.

The copy is taken from HEAD only (`git ls-tree`, `git cat-file`): a file in a released path
that is modified, staged or untracked stops the release, naming it. Before anything is
written:

- each released lab's committed skeleton must be the one its reference generates;
- a lab whose given code holds an earlier lab's answer says so (`contains_answers_of`, in
  its grading.toml's [release] table) and goes out only with that
  lab, or after it (`earlier`);
- every released file is searched, wherever it is (handouts, common, grader, other labs, the
  skeletons), for each lab's answer lines (the lines of its reference's marked regions that
  its generated skeleton does not have), its hidden tests' lines (those the labs' public
  tests do not have) and its hidden test cases' names. Lines that prove nothing are skipped
  (see `secret_lines`); in a lab's own folder a file may share one line with its own answer
  (see `find_leaks`), and a lab's folder may hold the answers it declares.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from . import skeletonize, student_copy
from ..paths import LAB_DIR_RE, ROOT, lab_name_parts
from ..rubric import tomllib

# Top-level entries of the student copy (files or folders; folders whole unless below).
# CONTRIBUTING.md (how to work on the course itself) is not one of them.
# Not .github/: the course's workflows grade with its GPU runners and tokens.
INCLUDE_TOP = ("labs", "handouts", "common", "grader", "cmake", "docs", "tools", ".ci",
               "CMakeLists.txt", "CMakePresets.json", "README.md", "CHANGELOG.md", ".gitignore",
               "LICENSE*", ".clang-format", "mypy.ini")
# Left out although inside an included folder (glob patterns on the relative path).
EXCLUDE = (
    "solutions/*",
    "grader/tests/fixtures/*",  # submissions written as edits of the reference solution
    "grader/tests/lab_fixtures.py",  # makes those submissions from solutions/
    "grader/tests/test_e2e_lab04.py",  # grades them: needs the reference
    "grader/tests/test_fixtures.py",  # checks the recipes against the solutions
    "grader/tests/adversarial/*",  # the adversarial suite: its fair cases are whole answers
    "grader/tests/test_adversarial.py",
    "tools/adversarial_check.sh",
    "tools/grade_check.py",  # grades the reference: needs solutions/
    "tools/pr_latency.py",  # grades the reference with the course's grade-student-prs.yml
    "grader/tests/test_pr_latency.py",  # runs it
    "grader/tests/data/golden/*",  # the reference's and skeleton's graded results: hidden names
    "grader/tests/test_golden.py",  # grades the reference: needs solutions/
    "grader/tests/test_integrations.py",  # grades the reference on fake platform trees
    "grader/tests/test_refcache.py",  # fills the cache with the reference: needs solutions/
    "grader/tests/test_linking.py",  # grades with the reference cache: needs solutions/
    "grader/tests/test_python310.py",  # grades the reference on Python 3.10 (test_integrations)
    "grader/tests/test_docs.py",  # the instructor's README, .ci/run and integrations/
    "docs/student/*",  # the student copy's own README and workflows (student_copy.py)
    "*/__pycache__/*", "*.pyc",
)
MIN_LINE = 16  # shorter lines ("}", "return 0;") prove nothing
COMMON_FILES = 3  # a line the course repeats in this many public files is an idiom
OWN_LAB_SHARED = 1  # lines of its own answer a file in the lab's folder may share with it
RUBRIC = "grading.toml"
DECLARATION = "contains_answers_of"  # grading.toml: [release] or top level

# `int x;`, `Shape s = other;`, `d.size = prop.size;`: a declaration or a copy of one name or
# literal computes nothing.
_PLAIN = re.compile(r"^(?:[A-Za-z_][\w:<>,]*\s+)*[A-Za-z_][\w.]*(?:\s*=\s*[\w.]+)?;$")
_CASE_NAME = re.compile(r'\b(?:TEST_CASE|SCENARIO|TEMPLATE_TEST_CASE)\(\s*"((?:[^"\\]|\\.)+)"')


class ReleaseError(Exception):
    """The release cannot be made (a leak, uncommitted files, a bad output folder); the
    message says why."""


# --------------------------------------------------------------------- the committed tree

@dataclass
class Tree:
    """The files of HEAD: path -> (git mode, content)."""

    root: Path
    revision: str
    modes: dict[str, str]
    blobs: dict[str, bytes]

    def text(self, rel: str) -> str | None:
        """The file's text, or None for a binary (or absent) file."""
        data = self.blobs.get(rel)
        if data is None or b"\0" in data:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def labs(self) -> list[str]:
        """The lab folders (labs/NN_topic) of the tree, in order."""
        found = {rel.split("/")[1] for rel in self.modes
                 if rel.startswith("labs/") and rel.count("/") >= 2}
        return sorted(f for f in found if LAB_DIR_RE.match(f))

    def under(self, prefix: str) -> list[str]:
        return sorted(rel for rel in self.modes if rel.startswith(prefix))


def _git(args: list[str], cwd: Path, data: bytes | None = None) -> bytes:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True,
                              timeout=300)
    except (OSError, subprocess.SubprocessError) as err:
        raise ReleaseError(f"git {args[0]} failed: {err}") from err
    if proc.returncode != 0:
        raise ReleaseError(f"git {' '.join(args[:2])} failed: "
                           f"{proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def read_head(root: Path = ROOT) -> Tree:
    """HEAD's files (symbolic links and submodules are left out)."""
    root = Path(root).resolve()
    if not shutil.which("git"):
        raise ReleaseError("git is not installed: the release is made from the committed tree")
    top = _git(["rev-parse", "--show-toplevel"], root).decode().strip()
    if Path(top).resolve() != root:
        raise ReleaseError(f"{root} is not the top of a git checkout (that is {top})")
    revision = _git(["rev-parse", "--verify", "HEAD^{commit}"], root).decode().strip()
    listing = _git(["ls-tree", "-r", "-z", "--full-tree", "HEAD"], root).decode()
    modes, oids = {}, {}
    for entry in filter(None, listing.split("\0")):
        meta, rel = entry.split("\t", 1)
        mode, kind, oid = meta.split()
        if kind == "blob" and mode in ("100644", "100755"):
            modes[rel], oids[rel] = mode, oid
    blobs: dict[str, bytes] = {}
    if oids:
        order = sorted(oids)
        out = _git(["cat-file", "--batch"], root, "".join(f"{oids[r]}\n" for r in order).encode())
        pos = 0
        for rel in order:
            header_end = out.index(b"\n", pos)
            size = int(out[pos:header_end].split()[2])
            blobs[rel] = out[header_end + 1:header_end + 1 + size]
            pos = header_end + 1 + size + 1
    return Tree(root, revision, modes, blobs)


def uncommitted(root: Path = ROOT) -> list[tuple[str, str]]:
    """(what, path) for every file that differs from HEAD: modified, staged, deleted,
    untracked (not ignored)."""
    out = _git(["status", "--porcelain=v1", "-z", "--untracked-files=all"], Path(root)).decode()
    entries = out.split("\0")
    found, i = [], 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        code, rel = entry[:2], entry[3:]
        if code[0] in "RC":
            i += 1  # the original path follows
        what = ("untracked" if code == "??" else "deleted" if "D" in code
                else "added" if "A" in code else "modified")
        found.append((what, rel))
    return found


# ---------------------------------------------------------------------- what goes in

def included(rel: str) -> bool:
    rel = rel.replace(os.sep, "/")
    if any(fnmatch.fnmatch(rel, pattern) for pattern in EXCLUDE):
        return False
    return any(rel == top or rel.startswith(top + "/") or fnmatch.fnmatch(rel, top)
               for top in INCLUDE_TOP)


def lab_folder(rel: str) -> str | None:
    """The lab folder a path is in (labs/NN_topic/...), else None."""
    parts = rel.split("/")
    if len(parts) >= 3 and parts[0] == "labs" and LAB_DIR_RE.match(parts[1]):
        return parts[1]
    return None


def lab_of(rel: str, folders: list[str]) -> str | None:
    """The lab a path belongs to: its folder, its handout (handouts/NN_topic.md) or one of
    its figures (handouts/figures/NN_*); None for the rest (common, grader, the template)."""
    parts = rel.split("/")
    if parts[0] == "labs":
        return lab_folder(rel)
    if len(parts) == 2 and parts[0] == "handouts" and Path(parts[1]).stem in folders:
        return Path(parts[1]).stem
    if len(parts) == 3 and parts[:2] == ["handouts", "figures"]:
        return next((f for f in folders if parts[2].startswith(f[:3])), None)
    return None


def choose(keys: list[str] | str | None, folders: list[str]) -> list[str]:
    """Lab folders by number or folder ("4", "04", "lab04", "04_tiled_matmul"), comma-
    separated; all of them when empty. Raises ReleaseError naming the labs there are."""
    if isinstance(keys, str):
        keys = [keys]
    wanted = [k.strip() for key in (keys or []) for k in key.split(",") if k.strip()]
    if not wanted:
        return list(folders)
    found = []
    for key in wanted:
        match = [f for f in folders
                 if key in (f, f[:2], f[:2].lstrip("0"), f"lab{f[:2]}")]
        if not match:
            raise ReleaseError(f"no lab '{key}' (labs here: {', '.join(folders) or 'none'})")
        if match[0] not in found:
            found.append(match[0])
    return sorted(found)


def declared_answers(tree: Tree, folder: str) -> list[str]:
    """The labs whose answers lab `folder`'s given code holds: its grading.toml's
    `contains_answers_of` ([release] table or top level)."""
    rel = f"labs/{folder}/{RUBRIC}"
    declared: list[str] = []
    text = tree.text(rel)
    if text is None:
        return declared
    try:
        doc = tomllib.loads(text)
    except ValueError as err:  # tomllib.TOMLDecodeError is a ValueError
        raise ReleaseError(f"{rel}: not valid TOML: {err}") from err
    table = doc.get("release")
    for where, value in (("the top level", doc.get(DECLARATION)),
                         ("[release]", table.get(DECLARATION) if isinstance(table, dict)
                          else None)):
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ReleaseError(f"{rel}: {where}.{DECLARATION} must be an array of lab folders")
        declared += value
    labs = tree.labs()
    out = []
    for name in declared:
        try:
            lab = choose(name, labs)[0]
        except ReleaseError as err:
            raise ReleaseError(f"{rel}: {DECLARATION}: {err}") from err
        if lab != folder and lab not in out:
            out.append(lab)
    return out


# ------------------------------------------------------------------ what must not go in

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


# --------------------------------------------------------------------------- the plan

@dataclass
class Release:
    files: list[str]  # relative paths, in the copy
    left_out: list[str]  # committed files excluded by a rule (or by the lab selection)
    leaks: list[str] = field(default_factory=list)  # "path: line" found in a released file
    problems: list[str] = field(default_factory=list)  # anything else that stops it
    labs: list[str] = field(default_factory=list)  # the lab folders released
    revision: str = ""

    @property
    def ok(self) -> bool:
        return not self.leaks and not self.problems


def plan_release(root: Path = ROOT, labs: list[str] | str | None = None,
                 earlier: list[str] | str | None = None, tree: Tree | None = None) -> Release:
    """What a release of `labs` (default: all) would hold, and what stops it. `earlier`:
    labs an earlier release already gave the students."""
    tree = tree or read_head(root)
    folders = tree.labs()
    chosen = choose(labs, folders)
    before = choose(earlier, folders) if earlier else []
    committed = sorted(tree.modes)
    files = [r for r in committed if included(r) and lab_of(r, folders) in (None, *chosen)]
    left_out = [r for r in committed if r not in set(files)]
    files = sorted({*files, *student_copy.overlay(tree, chosen)})  # README, workflows
    release = Release(files, left_out, labs=chosen, revision=tree.revision)

    # Only what is committed goes out: say which released paths differ from HEAD.
    dirty = [(what, rel) for what, rel in uncommitted(tree.root)
             if included(rel) and lab_of(rel, folders) in (None, *chosen)]
    if dirty:
        release.problems.append(
            "not committed (the release takes HEAD only; commit or remove them): "
            + ", ".join(f"{rel} ({what})" for what, rel in dirty))

    if not any(r.startswith("solutions/") for r in committed):
        release.problems.append("HEAD has no solutions/: this is not the course repository "
                                "(a student copy cannot be released again)")
    skeletons = generated_skeletons(tree)
    for folder in chosen:
        topic = lab_name_parts(folder)[1]
        rel = f"labs/{folder}/{topic}.cu"
        if folder in skeletons and tree.text(rel) != skeletons[folder]:
            release.problems.append(
                f"{rel} is not the skeleton solutions/{folder}/{topic}.cu generates "
                "(run python3 -m grader skeleton --write, review, commit)")

    allowed: dict[str, set[str]] = {}
    for folder in chosen:
        holds = declared_answers(tree, folder)
        missing = [lab for lab in holds if lab not in chosen and lab not in before]
        if missing:
            numbers = ",".join(sorted(f[:2] for f in {*chosen, *missing}))
            release.problems.append(
                f"labs/{folder} holds the answer of {', '.join(missing)} in its given code "
                f"({DECLARATION}): release it with that lab (--labs {numbers}) or after it "
                f"(--earlier {','.join(f[:2] for f in missing)}, when an earlier release "
                "gave it to the students)")
        allowed[folder] = set(holds)

    secret = secret_lines(tree, chosen, skeletons)
    release.leaks = find_leaks(tree, files, secret, hidden_case_names(tree), allowed)
    return release


def _describe(release: Release) -> str:
    """The problems, then the leaks by file (the first few lines of each)."""
    parts = list(release.problems)
    if release.leaks:
        by_file: dict[str, list[str]] = {}
        for leak in release.leaks:
            by_file.setdefault(leak.split(": ", 1)[0], []).append(leak)
        shown = []
        for leaks in by_file.values():
            shown += leaks[:3]
            if len(leaks) > 3:
                shown.append(f"… and {len(leaks) - 3} more in {leaks[0].split(': ', 1)[0]}")
        parts.append(f"{len(release.leaks)} solution line(s) in {len(by_file)} file(s) would "
                     "be in the student copy:\n  " + "\n  ".join(shown))
    return "nothing was written:\n" + "\n".join(f"- {p}" for p in parts)


def make_release(out_dir: Path, root: Path = ROOT, force: bool = False, commit: bool = True,
                 labs: list[str] | str | None = None,
                 earlier: list[str] | str | None = None) -> Release:
    """Writes the student copy of HEAD into `out_dir` (a new or empty folder; with `force`
    an existing one is replaced) as a fresh git repository with one commit."""
    out_dir = Path(out_dir).resolve()
    root = Path(root).resolve()
    if out_dir == root or root in out_dir.parents:
        raise ReleaseError(f"{out_dir} is inside the repository; choose a folder outside it")
    tree = read_head(root)
    release = plan_release(root, labs, earlier, tree)
    if not release.ok:
        raise ReleaseError(_describe(release))
    if out_dir.exists() and any(out_dir.iterdir()):
        if not force:
            raise ReleaseError(f"{out_dir} exists and is not empty (use --force to replace it)")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    replaced = student_copy.overlay(tree, release.labs)
    for rel in release.files:
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(replaced.get(rel, tree.blobs.get(rel, b"")))
        target.chmod(0o755 if tree.modes.get(rel) == "100755" else 0o644)
    if commit:
        _git(["init", "-q"], out_dir)
        _git(["add", "-A"], out_dir)
        who = []
        try:
            _git(["config", "user.email"], out_dir)
        except ReleaseError:
            who = ["-c", "user.name=Course staff", "-c", "user.email=staff@localhost"]
        labs_note = "" if release.labs == tree.labs() else f" (labs {', '.join(release.labs)})"
        message = f"CUDA Memory Labs: student copy of {release.revision[:12]}{labs_note}"
        _git([*who, "commit", "-q", "-m", message], out_dir)
    return release


__all__ = ["Release", "ReleaseError", "Tree", "make_release", "plan_release", "read_head",
           "secret_lines", "hidden_case_names", "find_leaks", "included", "lab_of",
           "declared_answers", "uncommitted", "INCLUDE_TOP", "EXCLUDE"]
