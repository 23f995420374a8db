"""Grades every adversarial case on this machine (with its GPU) and checks each grade against
the case's `[expect]` table (tools/adversarial_check.sh runs this).

    python3 -m grader.tests.adversarial.run [--out DIR] [--cases GLOB ...] [--labs 04,05]
                                           [--classes fair,...] [-j N] [--no-gpu] [--list]

The cases are made into submission folders under DIR/stage, one folder per lab, and graded
with `grader batch`, one batch per lab (the reference builds once per worker), all batches at
once with their GPU stages under one lock per GPU; with several GPUs the batches are spread
over them. Denial-of-service cases come last, each in a batch of its own with its own test
timeout, one at a time per GPU, and after each the machine is searched for processes of the
case that outlived their grade. Every result.json and export is checked; the table comes
last, then one line: "adversarial: X/Y as expected on <GPU>". Exit status 0 when every case
is as expected (or could not be checked here), 1 otherwise.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.paths import ROOT
from grader.tests.adversarial import suite

FORMATS = "gradescope,prairielearn,junit,markdown,html"


@dataclass
class Group:
    """One batch: cases of one lab graded together."""

    name: str
    lab: str
    cases: list[suite.Case]
    test_timeout: float | None = None
    gpu: int | None = None  # index into the visible GPUs, None: the default device
    seconds: float = 0.0
    status: int | None = None
    survivors: list[str] = field(default_factory=list)


def gpus() -> list[tuple[int, str]]:
    """(index, name) of the GPUs nvidia-smi lists (none without a driver)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=index,name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    found = []
    for line in out.splitlines():
        index, _, name = line.partition(",")
        if index.strip().isdigit():
            found.append((int(index), name.strip()))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        keep = [v.strip() for v in visible.split(",")]
        found = [(i, n) for i, n in found if str(i) in keep]
    return found


def plan(cases: list[suite.Case], n_gpus: int) -> tuple[list[Group], list[Group]]:
    """Batches: one per lab for the ordinary cases, one per denial-of-service case."""
    normal: dict[str, Group] = {}
    slow: list[Group] = []
    for c in cases:
        if c.denial_of_service:
            slow.append(Group(c.name, c.lab.number, [c], c.test_timeout))
        else:
            normal.setdefault(c.lab.number, Group(f"lab{c.lab.number}", c.lab.number, []))
            normal[c.lab.number].cases.append(c)
    groups = sorted(normal.values(), key=lambda g: -len(g.cases))
    for k, g in enumerate(groups + slow):
        g.gpu = k % n_gpus if n_gpus > 1 else None
    return groups, slow


def student(case: suite.Case) -> str:
    """The case's folder name in a batch: its name (a valid batch student name)."""
    return case.name


def stage(cases: list[suite.Case], groups: list[Group], out: Path) -> dict[str, Path]:
    """Each case as a submission folder: out/stage/<group>/<student(case)>/."""
    where = {}
    for g in groups:
        for c in g.cases:
            where[c.name] = suite.materialize(c, out / "stage" / g.name / student(c))
    os.chmod(out, 0o755)
    for root, dirs, _files in os.walk(out / "stage"):
        os.chmod(root, 0o755)
    return where


def _lock(out: Path, gpu: int | None) -> str:
    base = os.environ.get("CML_GPU_LOCK", "/tmp/cml-grader-gpu.lock")
    return base if gpu is None else f"{base}.gpu{gpu}"


def run_group(g: Group, out: Path, args: argparse.Namespace, log) -> None:
    cmd = [sys.executable, "-m", "grader", "batch", str(out / "stage" / g.name),
           "--out", str(out / "batches" / g.name), "--labs", g.lab, "-j", str(args.jobs),
           "--seed", str(args.seed), "--format", FORMATS, "--force",
           "--timeout", str(args.timeout), "--gpu-lock", _lock(out, g.gpu)]
    if g.test_timeout:
        cmd += ["--test-timeout", f"{g.test_timeout:g}"]
    if args.no_gpu:
        cmd.append("--no-gpu")
    env = dict(os.environ, NO_COLOR="1")
    if g.gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(g.gpu)
    start = time.monotonic()
    log_path = out / "logs" / f"{g.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as f:
        proc = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=env)
    g.seconds = time.monotonic() - start
    g.status = proc.returncode
    log(f"{g.name}: {len(g.cases)} case(s) graded in {g.seconds:.0f} s (batch exit {g.status})")


def survivors(lab: str) -> list[str]:
    """Processes of a lab's student binaries still alive (pid and command)."""
    found = []
    mine = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == mine:
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
        except OSError:
            continue
        if f"lab{lab}_" in cmdline and "_student" in cmdline:
            found.append(f"{entry} {cmdline.strip()[:120]}")
    return found


def end_survivors(found: list[str]) -> None:
    """Stops the processes a case left behind (this run started them), one by one."""
    for line in found:
        try:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        except (ProcessLookupError, PermissionError, ValueError):
            pass


def check(cases: list[suite.Case], groups: list[Group], out: Path, gpu: bool) -> list[dict]:
    rows = []
    by_case = {c.name: g for g in groups for c in g.cases}
    for c in cases:
        g = by_case[c.name]
        folder = out / "batches" / g.name / student(c)
        result_path = folder / "result.json"
        if not result_path.is_file():
            rows.append({"case": c.name, "lab": c.lab.number, "class": c.cls,
                         "expected": c.expected_text(), "got": "no result.json",
                         "verdict": "FAIL", "checks": []})
            continue
        result = json.loads(result_path.read_text())
        secrets = suite.secret_lines(c.lab.folder, own=suite.own_lines(
            out / "stage" / g.name / student(c), c))
        tree = [str(ROOT.resolve()), str((out / "batches" / g.name / ".work").resolve())]
        checks = suite.check_result(c, result, suite.output_files(folder), gpu=gpu,
                                    secrets=secrets, tree_paths=tree,
                                    survivors=g.survivors if c.denial_of_service else None)
        rows.append({"case": c.name, "lab": c.lab.number, "class": c.cls,
                     "expected": c.expected_text(), "got": suite.got_summary(result, c.lab.folder),
                     "verdict": suite.verdict(checks),
                     "checks": [vars(x) for x in checks]})
    return rows


def table(rows: list[dict]) -> str:
    head = ("case", "lab", "class", "expected", "got", "verdict")
    widths = [max([len(h)] + [len(str(r[h])) for r in rows]) for h in head]
    widths = [min(w, 60) for w in widths]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        cells = [str(r[h])[:w].ljust(w) for h, w in zip(head, widths)]
        lines.append("  ".join(cells).rstrip())
        for x in r["checks"]:
            if x["verdict"] == suite.FAIL:
                lines.append(f"    {x['key']}: {x['detail']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="adversarial_check", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=None,
                   help="working folder (default: a new one under /tmp, kept)")
    p.add_argument("--cases", nargs="*", default=None, help="case names or globs")
    p.add_argument("--labs", default="", help="comma-separated lab numbers")
    p.add_argument("--classes", default="", help="comma-separated classes: "
                   + ", ".join(suite.CLASSES))
    p.add_argument("-j", "--jobs", type=int, default=2, help="submissions per batch at once")
    p.add_argument("--parallel", type=int, default=None,
                   help="batches at once (default: enough for every lab, at most CPUs / 4)")
    p.add_argument("--seed", type=int, default=20261123)
    p.add_argument("--timeout", type=float, default=1800,
                   help="wall-clock seconds per submission (the batch's --timeout)")
    p.add_argument("--no-gpu", action="store_true", help="grade as without a GPU")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    args = p.parse_args(argv)

    cases = suite.select(suite.load_cases(), args.cases,
                         [x.strip() for x in args.labs.split(",") if x.strip()] or None,
                         [x.strip() for x in args.classes.split(",") if x.strip()] or None)
    if args.list:
        for c in cases:
            print(f"{c.name:34} {c.cls:18} {c.expected_text()}")
        print(f"{len(cases)} cases")
        return 0
    if not cases:
        print("no case matches", file=sys.stderr)
        return 1
    out = (args.out or Path(tempfile.mkdtemp(prefix="cml-adversarial-"))).resolve()
    if out == ROOT.resolve() or ROOT.resolve() in out.parents:
        print(f"--out {out} is inside the repository; choose a folder outside it",
              file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    devices = [] if args.no_gpu else gpus()
    gpu_name = devices[0][1] if devices else "no GPU"
    normal, slow = plan(cases, len(devices))
    stage(cases, normal + slow, out)
    say_lock = threading.Lock()

    def log(text: str) -> None:
        with say_lock:
            print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)

    log(f"{len(cases)} cases, {len(normal)} lab batches and {len(slow)} denial-of-service "
        f"batches, on {len(devices) or 'no'} GPU(s) ({gpu_name}); results in {out}")
    started = time.monotonic()
    width = args.parallel or max(1, min(len(normal), (os.cpu_count() or 4) // 4))
    with cf.ThreadPoolExecutor(width) as pool:
        list(pool.map(lambda g: run_group(g, out, args, log), normal))

    # One denial-of-service batch at a time per GPU, then a search for what it left running.
    lanes: dict[int | None, list[Group]] = {}
    for g in slow:
        lanes.setdefault(g.gpu, []).append(g)

    def lane(groups: list[Group]) -> None:
        for g in groups:
            run_group(g, out, args, log)
            time.sleep(3)
            g.survivors = survivors(g.lab)
            if g.survivors:
                log(f"{g.name}: {len(g.survivors)} process(es) outlived the grade; stopping them")
                end_survivors(g.survivors)

    if len(lanes) > 1:
        with cf.ThreadPoolExecutor(len(lanes)) as pool:
            list(pool.map(lane, lanes.values()))
    else:
        for groups in lanes.values():
            lane(groups)

    rows = check(cases, normal + slow, out, gpu=bool(devices))
    (out / "adversarial.json").write_text(json.dumps(
        {"gpu": gpu_name, "seconds": round(time.monotonic() - started), "cases": rows},
        indent=2) + "\n")
    print()
    print(table(rows))
    good = sum(1 for r in rows if r["verdict"] in ("PASS", "PART", "N/A"))
    partial = sum(1 for r in rows if r["verdict"] in ("PART", "N/A"))
    print()
    print(f"details: {out / 'adversarial.json'}; logs: {out / 'logs'}; "
          f"{time.monotonic() - started:.0f} s" +
          (f"; {partial} could be checked only in part here" if partial else ""))
    print(f"adversarial: {good}/{len(rows)} as expected on {gpu_name}")
    return 0 if good == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
