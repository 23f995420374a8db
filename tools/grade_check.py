#!/usr/bin/env python3
"""Grades the reference solutions and the untouched skeletons of every lab, each in one
`grader grade`, and fails unless every lab's reference scores full marks and every skeleton
scores 0 on every part that needs the student's work. With --regrades N the reference is
graded N times and each lab's speed points must stay within --speed-spread of each other.
With --busy-grades K the first K of those grades run while every CPU of the machine spins in
a busy loop (a shared node, a batch with many jobs): the reference must keep full marks.

Run it on a machine with a GPU (without one, the GPU parts are "not graded" and it says so).
Usage: python3 tools/grade_check.py [--labs 04,06] [--regrades 3] [--busy-grades 1] [--out DIR]
Prints a table last; the exit status is 0 when every check holds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.paths import discover_labs
from grader.rubric import load_rubric

# Parts a skeleton may score on: none. A part that earns points on the untouched skeleton
# rewards nothing the student did.


def make_submission(dest: Path, labs, kind: str) -> None:
    for lab in labs:
        for rel in load_rubric(lab).student_files:
            source = ROOT / rel
            if kind == "reference":
                source = ROOT / "solutions" / Path(rel).relative_to("labs")
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def grade(sub: Path, labs, out: Path, work: Path, seed: int) -> tuple[dict, float]:
    cmd = [sys.executable, "-m", "grader", "grade", str(sub), "--labs",
           ",".join(lab.number for lab in labs), "--out", str(out), "--work-dir", str(work),
           "--seed", str(seed), "--format", "", "-q"]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - start
    (out / "grade.log").parent.mkdir(parents=True, exist_ok=True)
    (out / "grade.log").write_text(proc.stdout + proc.stderr)
    try:
        return json.loads((out / "result.json").read_text()), seconds
    except (OSError, ValueError):
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise SystemExit(f"grader grade failed for {sub} (exit {proc.returncode})")


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy_cpus(on: bool):
    """Every CPU this process may use spins in a busy loop of its own while the block runs."""
    procs = []
    if on:
        for _ in range(len(os.sched_getaffinity(0))):
            proc = multiprocessing.Process(target=_spin, daemon=True)
            proc.start()
            procs.append(proc)
    try:
        yield len(procs)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join()


def part_points(lab: dict, kind: str) -> float | None:
    parts = [p for p in lab["parts"] if p["kind"] == kind]
    return sum(p["points"] for p in parts) if parts else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--labs", default="", help="comma-separated lab numbers (default: all)")
    ap.add_argument("--regrades", type=int, default=1, help="grades of the reference")
    ap.add_argument("--busy-grades", type=int, default=0,
                    help="the first K reference grades run with every CPU busy")
    ap.add_argument("--speed-spread", type=float, default=1.0,
                    help="largest allowed spread of a lab's speed points over the regrades")
    ap.add_argument("--out", type=Path, default=None, help="keep results here")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    labs = discover_labs()
    if args.labs:
        wanted = {n.strip().zfill(2) for n in args.labs.split(",")}
        labs = [lab for lab in labs if lab.number in wanted]
    out = (args.out or Path(tempfile.mkdtemp(prefix="cml-grade-check-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o755)  # as root, student code runs as 'nobody', who must reach the work folder
    work = out / "work"
    subs = {kind: out / f"sub-{kind}" for kind in ("reference", "skeleton")}
    for kind, path in subs.items():
        shutil.rmtree(path, ignore_errors=True)
        make_submission(path, labs, kind)

    refs = []
    busy_notes = []
    for i in range(args.regrades):
        with busy_cpus(i < args.busy_grades) as spinning:
            refs.append(grade(subs["reference"], labs, out / f"reference-{i + 1}", work,
                              args.seed + i))
        busy_notes.append(f"{spinning} CPUs busy" if spinning else "idle")
    skeleton, skel_seconds = grade(subs["skeleton"], labs, out / "skeleton", work, args.seed)

    device = (refs[0][0].get("device") or {}).get("name", "no GPU")
    failures: list[str] = []
    rows = []
    shown_log = False
    for lab in labs:
        ref_labs = [next((l for l in r["labs"] if l["lab"] == lab.folder), None)
                    for r, _ in refs]
        skel = next((l for l in skeleton["labs"] if l["lab"] == lab.folder), None)
        if any(r is None for r in ref_labs) or skel is None:
            failures.append(f"{lab.folder}: missing from a result")
            if not shown_log:  # the grader's own words say why
                shown_log = True
                for path in sorted(out.glob("*/grade.log")):
                    print(f"--- {path} (last lines)")
                    print("\n".join(path.read_text().splitlines()[-15:]))
            continue
        first = ref_labs[0]
        speeds = [part_points(r, "performance") for r in ref_labs]
        speeds = [s for s in speeds if s is not None]
        spread = (max(speeds) - min(speeds)) if speeds else 0.0
        short = [p for p in first["parts"] if p["points"] < p["max_points"] - 1e-6]
        for r in ref_labs:
            if r["points"] < r["max_points"] - 1e-6:
                lost = "; ".join(f"{p['name']}: {p['points']:g}/{p['max_points']:g} "
                                 f"({p['reason'][:120]})" for p in r["parts"]
                                 if p["points"] < p["max_points"] - 1e-6)
                failures.append(f"{lab.folder} reference {r['points']:g}/{r['max_points']:g}: "
                                f"{lost}")
        if spread > args.speed_spread:
            failures.append(f"{lab.folder}: reference speed points vary by {spread:.2f} "
                            f"over {len(speeds)} grades ({speeds})")
        earned = [p for p in skel["parts"] if p["points"] > 0]
        for p in earned:
            failures.append(f"{lab.folder} skeleton earns {p['points']:g} on {p['name']}")
        unmeasured = [p["name"] for p in first["parts"] if p["status"] != "graded"]
        rows.append((lab.folder, first["points"], first["max_points"],
                     " ".join(f"{s:.2f}" for s in speeds) or "-", skel["points"],
                     skel["max_points"], len(short), unmeasured))

    print()
    print(f"{'lab':<22} {'reference':>13} {'speed pts (regrades)':>22} {'skeleton':>12}  not graded")
    for folder, p, m, speeds, sp, sm, _short, unmeasured in rows:
        print(f"{folder:<22} {p:>6.2f}/{m:<6.2f} {speeds:>22} {sp:>5.2f}/{sm:<6.2f}  "
              + (", ".join(unmeasured) or "-"))
    total_ref = refs[0][0]["points"], refs[0][0]["max_points"]
    times = ", ".join(f"{s:.0f} s ({note})" for (_, s), note in zip(refs, busy_notes))
    print(f"grade times: reference {times}; "
          f"skeleton {skel_seconds:.0f} s; results in {out}")
    for f in failures:
        print("FAIL", f)
    verdict = "PASS" if not failures else f"FAIL ({len(failures)} problems)"
    print(f"grade check: reference {total_ref[0]:g}/{total_ref[1]:g}, skeleton "
          f"{skeleton['points']:g}/{skeleton['max_points']:g} on {device}: {verdict}")
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
