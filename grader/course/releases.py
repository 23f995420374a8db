"""The student copy: this repository's committed tree without what only the grader may see.

What goes in is copy_files.py's list of top-level entries, less what it leaves out; the
copy's workflows and README are its own (student_copy.py): none of the course's goes out,
so the copy has none that uses a GPU runner or a secret. In a staged release (`labs`) the
other labs' folders, handouts and figures stay out too.

The copy is taken from HEAD only (head_tree.py: `git ls-tree`, `git cat-file`): a file in a
released path that is modified, staged or untracked stops the release, naming it. Before
anything is written:

- each released lab's committed skeleton must be the one its reference generates;
- a lab whose given code holds an earlier lab's answer says so (`contains_answers_of`, in
  its grading.toml's [release] table) and goes out only with that
  lab, or after it (`earlier`);
- every released file is searched, wherever it is (handouts, common, grader, other labs, the
  skeletons), for each lab's answer lines, its hidden tests' lines and its hidden test
  cases' names (answer_leaks.py says which lines prove nothing, and which a lab's own
  folder may hold).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from . import student_copy
from ..paths import ROOT, lab_name_parts
from .answer_leaks import find_leaks, generated_skeletons, hidden_case_names, secret_lines
from .copy_files import DECLARATION, choose, declared_answers, included, lab_of
from .head_tree import ReleaseError, Tree, git, read_head, uncommitted


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
        git(["init", "-q"], out_dir)
        git(["add", "-A"], out_dir)
        who = []
        try:
            git(["config", "user.email"], out_dir)
        except ReleaseError:
            who = ["-c", "user.name=Course staff", "-c", "user.email=staff@localhost"]
        labs_note = "" if release.labs == tree.labs() else f" (labs {', '.join(release.labs)})"
        message = f"CUDA Memory Labs: student copy of {release.revision[:12]}{labs_note}"
        git([*who, "commit", "-q", "-m", message], out_dir)
    return release
