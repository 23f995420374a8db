"""Student-linked executables made from a reference-cache entry, without the grade's own
build tree: the entry (grader/refcache.py) keeps, per lab, every object and library that
labNN_tests_student, labNN_hidden_student and labNN_bench_student are linked from (built
once, linked there with the skeleton's own labNN_student library) and each target's link
command as the build recorded it (`ninja -t commands`, its last command). A grade re-runs
that command in the entry's build folder with the skeleton's library replaced by the
student's (compiled in the jail) and the output put where the grade's tree would have put
it (workspace.binary(trees.build, lab, kind)). A command that cannot be rewritten safely
(not exactly one skeleton-library argument and one `-o`) is refused: the lab is then
configured and built in the grade's tree as without a cache.
"""

from __future__ import annotations

import functools
import json
import shlex
import shutil
import subprocess
from pathlib import Path

from . import parallel, sandbox, workspace
from .paths import LabPaths
from .static_checks import harness_objects
from .tools import find_tool

LINKED_KINDS = ("tests_student", "hidden_student", "bench_student", "runner")
LINKS_FILE = "links.json"  # in an entry: {"kinds": {kind: command}}
BUILD_DIR = "build"  # in an entry: the objects and libraries, at their build-tree paths
_SHELL = {"&&", "||", ";", "|", "&", ">", ">>", "<", "2>", "2>&1"}


def linked_kinds(lab: LabPaths) -> list[str]:
    """The student-linked executables `lab` has: public tests, hidden tests, bench."""
    kinds = ["tests_student"] if any(lab.lab_dir.glob("tests/*.c*")) else []
    kinds += ["hidden_student"] if any(lab.solution_dir.glob("tests/*.c*")) else []
    kinds += ["runner"] if runs_remote(lab) and kinds else []
    return kinds + (["bench_student"] if any(lab.lab_dir.glob("bench/*.c*")) else [])


# The checker that runs each kind of test binary's cases against the runner, when the lab's
# tests run as checker and runner (cml/remote.hpp): built by the grader, cached like the
# reference's executables.
CHECKERS = {"tests_student": "checker", "hidden_student": "hidden_checker"}


def tests_kind(kind: str, remote: bool) -> str:
    """The executable that runs the cases of `kind` (tests_student, hidden_student): its
    checker when the lab's tests run as checker and runner, else `kind` itself."""
    return CHECKERS[kind] if remote else kind


def runs_remote(lab: LabPaths) -> bool:
    """True when the lab lists its interface for the runner (tests/remote_calls.hpp): its
    tests then run in a checker and the student's object in a runner (cml/remote.hpp)."""
    return (lab.lab_dir / "tests" / "remote_calls.hpp").is_file() and \
        any(lab.lab_dir.glob("tests/*.c*"))


def skeleton_library(lab: LabPaths) -> str:
    """The skeleton's library as a cache entry's link command names it (relative)."""
    return f"labs/{lab.folder}/lib{lab.tag}_student.a"


def student_library(student_build: Path, lab: LabPaths) -> Path:
    """The student's library, as the jailed student build makes it."""
    return student_build / "labs" / lab.folder / f"lib{lab.tag}_student.a"


def rewrite(command: str, skeleton_lib: str, student_lib: str, output: str) -> list[str] | None:
    """The link command `command` (as `ninja -t commands` prints it, CMake's `: && ... && :`
    around it or not) as an argument list, with the one `skeleton_lib` argument replaced by
    `student_lib` and the one `-o` output by `output`; None when it cannot be rewritten
    safely: not exactly one of each, a joined `-oFILE`, or more than one command.
    The linker's dependency file (`-Wl,--dependency-file=...`, which CMake 3.27 and later
    ask for, for the build tool's own relinking) is left out: it would be written into the
    entry, which a grade only reads, in a folder the entry need not have."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        return None
    if tokens[:2] == [":", "&&"] and tokens[-2:] == ["&&", ":"]:
        tokens = tokens[2:-2]
    tokens = [t for t in tokens if not t.startswith("-Wl,--dependency-file")]
    if not tokens or any(t in _SHELL for t in tokens):
        return None
    if tokens.count(skeleton_lib) != 1:
        return None
    outs = [i for i, t in enumerate(tokens) if t == "-o"]
    if len(outs) != 1 or outs[0] + 1 >= len(tokens) \
            or any(t.startswith("-o") and t != "-o" for t in tokens):
        return None
    tokens[tokens.index(skeleton_lib)] = student_lib
    tokens[outs[0] + 1] = output
    return tokens


def recorded_command(build: Path, target: str) -> str | None:
    """The last command ninja would run for `target` in the configured tree `build` (its
    link), or None (no Ninja tree)."""
    ninja = find_tool("ninja")
    if not ninja or not (build / "build.ninja").is_file():
        return None
    try:
        out = subprocess.run([ninja, "-C", str(build), "-t", "commands", target],
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
    return lines[-1] if out.returncode == 0 and lines else None


def save(build: Path, lab: LabPaths, dest: Path) -> dict[str, str]:
    """Into the entry folder `dest`: the link command of each student-linked target of `lab`
    that `build` made, and every file they (and the static checks' harness_objects) read,
    at the same paths under dest/build. Returns the commands by kind (none when a command
    cannot be rewritten: the lab is then built in the grade's tree)."""
    skeleton = skeleton_library(lab)
    commands: dict[str, str] = {}
    files: set[str] = set()
    for kind in LINKED_KINDS:
        if workspace.binary(build, lab, kind) is None:
            continue
        command = recorded_command(build, f"{lab.tag}_{kind}")
        if not command:
            return {}
        argv = rewrite(command, skeleton, "STUDENT", "OUT")
        if not argv:
            return {}
        commands[kind] = command
        files |= {t for t in argv if not t.startswith(("-", "/")) and t not in ("STUDENT", "OUT")
                  and (build / t).is_file()}
    if not commands:
        return {}
    files |= {str(p.relative_to(build)) for p in harness_objects(build, lab.folder, lab.tag)}
    for rel in sorted(files):
        (dest / BUILD_DIR / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(build / rel, dest / BUILD_DIR / rel)
    (dest / LINKS_FILE).write_text(json.dumps({"kinds": commands}, indent=1) + "\n")
    return commands


def commands(entry_path: Path) -> dict[str, str]:
    """The recorded link commands of an entry by kind (empty: none recorded)."""
    try:
        kinds = json.loads((entry_path / LINKS_FILE).read_text()).get("kinds", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return {k: v for k, v in kinds.items() if k in LINKED_KINDS and isinstance(v, str)}


def plan(entry_path: Path | None, lab: LabPaths, student_build: Path,
         out_build: Path) -> dict[str, list[str]] | None:
    """The link of each student-linked executable of `lab` (kind -> argv, run in the entry's
    build folder), or None when the entry cannot make every one of them."""
    if entry_path is None or not (entry_path / BUILD_DIR).is_dir():
        return None
    recorded = commands(entry_path)
    wanted = linked_kinds(lab)
    if not wanted or set(recorded) != set(wanted):
        return None
    out: dict[str, list[str]] = {}
    for kind in wanted:
        argv = rewrite(recorded[kind], skeleton_library(lab),
                       str(student_library(student_build, lab)),
                       str(workspace.binary_path(out_build, lab, kind)))
        if argv is None:
            return None
        out[kind] = argv
    return out


def link_labs(work: list[tuple[LabPaths, Path, dict[str, list[str]], float]],
              env: dict[str, str]) -> dict[str, workspace.BuildOutcome]:
    """Runs the links of every (lab, entry path, plan, time limit) at once, with as many
    at a time as the CPUs the process may use; the outcome per lab folder (ok when each of
    its links succeeded; the log as a build's: a failed link's command and the linker's
    output). The links run as the grader: linking runs none of the student's code. An
    interrupt kills them (grader/parallel.py)."""
    runs = [(lab, entry, kind, argv, limit) for lab, entry, planned, limit in work
            for kind, argv in planned.items()]
    done = parallel.run_all([functools.partial(_link, *r, env) for r in runs])
    outcomes: dict[str, workspace.BuildOutcome] = {}
    for lab, _entry, _planned, _limit in work:
        mine = [o for (lab2, *_), o in zip(runs, done) if lab2.folder == lab.folder]
        ok = all(o.ok for o in mine)
        outcomes[lab.folder] = workspace.BuildOutcome(
            ok, max((o.seconds for o in mine), default=0.0), any(o.timed_out for o in mine),
            [], "\n".join(o.log_tail for o in mine if not o.ok or ok))
    return outcomes


def _link(lab: LabPaths, entry: Path, kind: str, argv: list[str], limit: float,
          env: dict[str, str]) -> workspace.BuildOutcome:
    rel = f"labs/{lab.folder}/{lab.tag}_{kind}"
    output = Path(argv[argv.index("-o") + 1])
    output.parent.mkdir(parents=True, exist_ok=True)
    output.unlink(missing_ok=True)  # never an earlier grade's executable, whatever happens
    try:
        out = sandbox.run(argv, cwd=entry / BUILD_DIR, timeout=limit, env=env)
    except sandbox.StartError as err:
        return workspace.BuildOutcome(False, 0.0, False, [], f"FAILED: {rel}\n{err}\n")
    ok = out.returncode == 0 and not out.timed_out
    if ok:
        return workspace.BuildOutcome(True, out.seconds, False, [], f"Linked {rel}\n")
    return workspace.BuildOutcome(False, out.seconds, out.timed_out, [],
                                  f"FAILED: {rel}\n: && {shlex.join(argv)} && :\n"
                                  f"{out.output_tail}")


__all__ = ["CHECKERS", "LINKED_KINDS", "linked_kinds", "tests_kind", "runs_remote", "rewrite",
           "recorded_command", "save", "commands", "plan", "link_labs", "skeleton_library",
           "student_library"]
