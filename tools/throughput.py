#!/usr/bin/env python3
"""The grader's throughput on this machine: the wall time of a full grade of the reference
with an empty reference cache (cold) and a filled one (warm), the GPU-seconds one
submission takes (from result.json), and the wall time of a batch of N submissions
(copies of the reference). Prints the device, then a short table.

Usage: python3 tools/throughput.py [--labs 01,04] [--batch N] [--jobs J] [--skip-cold]
                                   [--regrades K] [--against CHECKOUT] [--out DIR]
After the table, where the first warm grade's time went, lab by lab and stage by stage
(result.json's `stages`). Defaults: every lab, a batch of 4, the batch's own --jobs
default; about 6 to 9 minutes on a 16-core machine with one H100. Run it as root, like the
grader (student code then runs as an unprivileged user). --regrades K grades the reference
K times warm and shows the spread of the performance points per lab (the timing
protocol's reproducibility). --against CHECKOUT grades with another checkout of the
grader too (the code before a change), the two in turn on the same cache, so a cut is
measured as a ratio in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.commands._common import choose_labs
from grader.gpu import GPU_STAGES
from grader.rubric import load_rubric
from grader.tools import device_name


def reference_submission(labs, dest: Path) -> Path:
    """A folder laid out like the repository with every student file from solutions/."""
    for lab in labs:
        for rel in load_rubric(lab).student_files:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / rel.replace("labs/", "solutions/", 1), target)
    return dest


def grader(args: list[str], log: Path, root: Path = ROOT) -> float:
    """Runs `python3 -m grader ARGS` in the checkout `root`, its output into `log`; the
    wall time."""
    start = time.monotonic()
    with log.open("w") as f:
        proc = subprocess.run([sys.executable, "-m", "grader", *args], cwd=root, stdout=f,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - start
    if proc.returncode not in (0,):
        print(f"  (exit status {proc.returncode}; see {log})", file=sys.stderr)
    return seconds


def gpu_seconds(result: Path, key: str = "gpu_seconds") -> tuple[float, dict[str, float]]:
    """The grade's GPU-seconds and its labs' `key` (gpu_seconds, gpu_waited) per stage."""
    data = json.loads(result.read_text())
    stages: dict[str, float] = {}
    for lab in data.get("labs", []):
        for stage, s in (lab.get(key) or {}).items():
            stages[stage] = stages.get(stage, 0.0) + s
    return float(data.get("gpu_seconds") or sum(stages.values())), stages


STAGES = ("build", "static", *GPU_STAGES)  # a lab's stages, in their order


def where_time_goes(result: Path) -> list[str]:
    """Per lab: each stage's wall seconds (its GPU-seconds after a slash, where it has a GPU
    section), then the lab's wall, GPU-seconds, waits, processes, tool start-ups and the
    bench's floor (the device time of its timed calls); the grade's own stages last."""
    data = json.loads(result.read_text())
    head = ["lab", *STAGES, "wall", "GPU-s", "waited", "procs", "ncu", "sanit.", "floor"]
    rows = [head]
    for lab in data.get("labs", []):
        stages, gpu = lab.get("stages") or {}, lab.get("gpu_seconds") or {}
        cells = [lab["lab"][:2]]
        for stage in STAGES:
            wall = (stages.get(stage) or {}).get("wall_seconds")
            cell = "-" if wall is None else f"{wall:.1f}"
            cells.append(cell + (f"/{gpu[stage]:.1f}" if stage in gpu else ""))
        tools: dict[str, int] = {}
        for entry in stages.values():
            for tool, n in (entry.get("tool_starts") or {}).items():
                tools[tool] = tools.get(tool, 0) + n
        floor = (stages.get("bench") or {}).get("device_seconds")
        cells += [f"{lab.get('wall_seconds', 0):.1f}", f"{sum(gpu.values()):.1f}",
                  f"{sum((lab.get('gpu_waited') or {}).values()):.1f}",
                  str(sum(e.get("processes", 0) for e in stages.values())),
                  str(tools.get("ncu", 0)), str(tools.get("compute-sanitizer", 0)),
                  "-" if floor is None else f"{floor:.2f}"]
        rows.append(cells)
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in rows]
    own = data.get("stages") or {}
    if own:
        lines.append("before the labs: " + ", ".join(
            f"{k} {v.get('wall_seconds', 0):.1f} s ({v.get('processes', 0)} processes)"
            for k, v in own.items()))
    return lines


def perf_points(result: Path) -> dict[str, float]:
    data = json.loads(result.read_text())
    return {lab["lab"][:2]: sum(p["points"] for p in lab["parts"]
                                if p["kind"] == "performance")
            for lab in data.get("labs", [])}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--labs", default="", help="comma-separated labs (default: all)")
    p.add_argument("--batch", type=int, default=4, help="submissions in the batch (0: none)")
    p.add_argument("--jobs", default="auto", help="the batch's --jobs (default: its own)")
    p.add_argument("--skip-cold", action="store_true",
                   help="no cold grade (the cache in --out is used as it is, filled first "
                        "when empty, untimed)")
    p.add_argument("--regrades", type=int, default=1,
                   help="warm grades of the reference (0: none, e.g. a batch alone)")
    p.add_argument("--against", type=Path, default=None,
                   help="another checkout of the grader (say, the code before a change): "
                        "every warm grade is made with it too, the two in turn on the same "
                        "cache, and both are shown with their ratio")
    p.add_argument("--out", type=Path, default=None, help="keep everything here")
    p.add_argument("--seed", type=int, default=4242)
    args = p.parse_args()

    labs = choose_labs([args.labs] if args.labs else [])
    lab_arg = ",".join(lab.number for lab in labs)
    out = (args.out or Path(tempfile.mkdtemp(prefix="cml-throughput-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o755)  # student code runs as 'nobody' under here
    cache = out / "cache"
    sub = reference_submission(labs, out / "reference")
    common = ["--labs", lab_arg, "--cache", str(cache), "--seed", str(args.seed),
              "--format", ""]
    device = device_name()
    cpus = len(os.sched_getaffinity(0))
    print(f"throughput: {device}; {cpus} CPUs; labs {lab_arg}; out {out}", flush=True)
    rows: list[tuple[str, str]] = []

    if not args.skip_cold:
        shutil.rmtree(cache, ignore_errors=True)
        print("cold grade (empty reference cache) ...", flush=True)
        cold = grader(["grade", str(sub), "--out", str(out / "cold"), *common],
                      out / "cold.log")
        rows.append(("grade, cold (s)", f"{cold:.1f}"))
        print(f"  {cold:.1f} s", flush=True)
    # (label, checkout, the folder name of its warm grades): this checkout's keep "warm-K"
    trees = [("", ROOT, "warm")]
    if args.against:
        trees.append(("against", args.against.resolve(), "against"))
    for label, root, _ in trees:
        if label or not (cache / "entries").is_dir() or not any((cache / "entries").iterdir()):
            # the other checkout's entries are its own where its sources differ
            print(f"filling the reference cache{' for ' + label if label else ''} (not "
                  "timed) ...", flush=True)
            grader(["cache", "fill", "--cache", str(cache), "--labs", *lab_arg.split(",")],
                   out / f"fill{'-' + label if label else ''}.log", root)

    warm_times: dict[str, list[float]] = {name: [] for _, _, name in trees}
    points = []
    for k in range(max(0, args.regrades)):
        turn = trees if k % 2 else trees[::-1]  # in turn: the other checkout first, then this
        for label, root, name in turn:
            print(f"warm grade {k + 1}{' (' + label + ')' if label else ''} ...", flush=True)
            dest = out / f"{name}-{k + 1}"
            warm_times[name].append(grader(["grade", str(sub), "--out", str(dest), *common],
                                           out / f"{name}-{k + 1}.log", root))
            print(f"  {warm_times[name][-1]:.1f} s", flush=True)
            if not label and (dest / "result.json").is_file():
                points.append(perf_points(dest / "result.json"))
    results = []
    for label, _, name in trees:
        suffix = f" [{label}]" if label else ""
        if warm_times[name]:
            rows.append((f"grade, warm (s){suffix}",
                         " / ".join(f"{t:.1f}" for t in warm_times[name])))
        found = out / f"{name}-1" / "result.json"
        if not found.is_file():
            continue
        results.append((label, found))
        total, stages = gpu_seconds(found)
        rows.append((f"GPU-seconds per submission{suffix}", f"{total:.1f}"))
        rows.append(("  by stage (labs overlap)",
                     ", ".join(f"{k} {v:.1f}" for k, v in sorted(stages.items()))))
        _, waits = gpu_seconds(found, "gpu_waited")
        rows.append(("  waited to enter, by stage",
                     ", ".join(f"{k} {v:.1f}" for k, v in sorted(waits.items())) or "none"))
    if args.against and all(warm_times.values()):
        mine, theirs = (statistics.median(warm_times[n]) for n in ("warm", "against"))
        gpu = [gpu_seconds(r)[0] for _, r in results]
        rows.append(("this / against, warm (median)", f"{mine / theirs:.2f}"
                     + (f"; GPU-seconds {gpu[0] / gpu[1]:.2f}" if len(gpu) == 2 and gpu[1]
                        else "")))
    if len(points) > 1:
        spread = {lab: max(pt.get(lab, 0) for pt in points) - min(pt.get(lab, 0)
                                                                 for pt in points)
                  for lab in points[0]}
        rows.append(("speed points spread per lab", ", ".join(
            f"{lab} {s:.2f}" for lab, s in spread.items())))

    if args.batch > 0:
        subs = out / "batch-subs"
        shutil.rmtree(subs, ignore_errors=True)
        for i in range(args.batch):
            shutil.copytree(sub, subs / f"s{i + 1:02d}")
        jobs = [] if args.jobs == "auto" else ["--jobs", args.jobs]
        print(f"batch of {args.batch} ...", flush=True)
        shutil.rmtree(out / "batch", ignore_errors=True)
        seconds = grader(["batch", str(subs), "--out", str(out / "batch"), *jobs, *common],
                         out / "batch.log")
        rows.append((f"batch of {args.batch} (s)", f"{seconds:.1f}"))
        gpu = [gpu_seconds(r)[0] for r in sorted((out / "batch").glob("s*/result.json"))]
        if gpu:
            rows.append(("batch GPU-seconds, mean", f"{sum(gpu) / len(gpu):.1f}"))

    print(f"\n{'':2}{device}")
    if not rows:  # --skip-cold --regrades 0 --batch 0: the cache filled, nothing timed
        rows.append(("timed", "nothing (the reference cache is filled)"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")
    for label, result in results:
        print("\n  where a warm grade's time goes" + (f" [{label}]" if label else "")
              + " (s; stage wall/GPU-seconds; floor: the device time of the bench's timed "
              "calls)")
        for line in where_time_goes(result):
            print(f"  {line}")
    if args.out is None:
        print(f"(logs and results: {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
