"""`new-lab NN_topic`: a new lab pair made from the template, names substituted.

Copies labs/_template to labs/NN_topic and solutions/_template to solutions/NN_topic (the
template's README.md stays behind), renames the files called `topic.*`, `test_topic.*`,
`bench_topic.*` after the topic, and writes handouts/NN_topic.md as a stub. In every file
`labNN` (namespace, test tag, TODO marker) becomes e.g. `lab08`, `NN_topic` the folder,
`NN` the number, `topic` the topic and `Topic` the title. The student's file is then
generated from the solution, as every lab's is. CMake and the grader find the new lab by
its folder: nothing else in the repository changes.
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

from ..course import skeletonize
from ..paths import LAB_DIR_RE, ROOT, LabPaths, discover_labs, lab_name_parts
from ._common import Subcommands

HELP = "make a new lab pair (labs/, solutions/, handouts/) from labs/_template"
TEMPLATE = "_template"
LEFT_BEHIND = {"README.md"}  # the template's own instructions

_NAMES = re.compile(r"labNN|NN_topic|\bNN\b|(?<![A-Za-z0-9])topic\b|\bTopic\b")


class NewLabError(ValueError):
    """A lab that cannot be made; the message says why."""


def substitute(text: str, folder: str, title: str) -> str:
    """`text` of a template file with the template's names replaced by the new lab's."""
    number, topic = lab_name_parts(folder)
    names = {"labNN": f"lab{number}", "NN_topic": folder, "NN": number, "topic": topic,
             "Topic": title}
    return _NAMES.sub(lambda hit: names[hit.group(0)], text)


def _copy(source: Path, dest: Path, folder: str, title: str) -> list[Path]:
    topic = lab_name_parts(folder)[1]
    written = []
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if path.is_dir() or rel.as_posix() in LEFT_BEHIND:
            continue
        target = dest / rel.parent / re.sub(r"(?<![A-Za-z0-9])topic(?=\.)", topic, rel.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(substitute(path.read_text(encoding="utf-8"), folder, title),
                          encoding="utf-8")
        written.append(target)
    return written


def handout_stub(folder: str, title: str) -> str:
    number, topic = lab_name_parts(folder)
    return (f"# Lab {number} — {title}\n\n"
            "What the lab teaches and why it matters on a GPU: the prediction the student "
            "makes on the CPU, and the measurement that confirms it (or explains why not).\n\n"
            f"You edit one file: `labs/{folder}/{topic}.cu`. The interface you implement is "
            f"`labs/{folder}/{topic}.cuh`.\n\n"
            "## 1. Predict\n\n"
            "The model, with a worked example and a question to answer before coding.\n\n"
            "## 2. Write the kernel\n\n"
            "What each function does, and the sizes the tests try.\n\n"
            "## 3. Measure\n\n"
            f"What the bench compares, and how to run it: `python3 -m grader check {number}`.\n")


def make_lab(folder: str, title: str | None = None, root: Path = ROOT) -> list[Path]:
    """Makes labs/`folder`, solutions/`folder` and handouts/`folder`.md under `root` from the
    template; returns the files written. Raises NewLabError when the name is not NN_topic,
    or the lab, its number or any of its files already exists."""
    m = LAB_DIR_RE.match(folder)
    if not m:
        raise NewLabError(f"'{folder}' is not a lab folder name: two digits, an underscore and "
                          "a topic in lower case, digits and underscores (e.g. 08_streams)")
    number, topic = m.groups()
    for lab in discover_labs(root):
        if lab.number == number:
            raise NewLabError(f"lab {number} exists already: labs/{lab.folder}")
    handout = root / "handouts" / f"{folder}.md"
    for path in (root / "labs" / folder, root / "solutions" / folder, handout):
        if path.exists():
            raise NewLabError(f"{path.relative_to(root)} exists already")
    for part in ("labs", "solutions"):
        if not (root / part / TEMPLATE).is_dir():
            raise NewLabError(f"the template {part}/{TEMPLATE} is missing")
    title = title or topic.replace("_", " ").capitalize()

    written = []
    try:
        for part in ("labs", "solutions"):
            written += _copy(root / part / TEMPLATE, root / part / folder, folder, title)
        handout.parent.mkdir(parents=True, exist_ok=True)
        handout.write_text(handout_stub(folder, title), encoding="utf-8")
        written.append(handout)
        skeletonize.write([LabPaths(folder, number, topic, root)])
    except BaseException:  # leave no half-made lab behind
        for part in ("labs", "solutions"):
            shutil.rmtree(root / part / folder, ignore_errors=True)
        handout.unlink(missing_ok=True)
        raise
    return written


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("new-lab", help=HELP, description=HELP)
    p.add_argument("folder", metavar="NN_topic", help="the new lab's folder name, e.g. 08_streams")
    p.add_argument("--title", help="the lab's title (default: from the topic, e.g. 'Streams')")
    return p


def run(args: argparse.Namespace) -> int:
    try:
        written = make_lab(args.folder, args.title)
    except (NewLabError, OSError) as err:
        print(f"new-lab: {err}")
        return 1
    for path in written:
        print(f"wrote {path.relative_to(ROOT)}")
    number = args.folder[:2]
    print(f"next: write solutions/{args.folder}, then `python3 -m grader skeleton --write`; "
          f"`cmake --preset default && cmake --build build --target lab{number}_tests_solution` "
          f"builds it and `ctest --preset default -L lab{number}` tests it")
    return 0
