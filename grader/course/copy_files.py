"""What the student copy holds (releases.py): a list of top-level entries (the labs with
their skeletons, handouts, the common library, the grader, the build files, tools, docs);
anything else, new folders included, stays out unless added here. Left out besides: the
reference solutions with their hidden tests, the grader's own tests made from the solutions,
and, in a staged release, the other labs' folders, handouts and figures (`lab_of`). A lab
whose given code holds an earlier lab's answer says so (`declared_answers`, its
grading.toml's `contains_answers_of`)."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from ..paths import LAB_DIR_RE
from ..tomlreader import tomllib
from .head_tree import ReleaseError, Tree

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
RUBRIC = "grading.toml"
DECLARATION = "contains_answers_of"  # grading.toml: [release] or top level


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
