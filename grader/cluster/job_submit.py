"""`check … --slurm` and `grade … --slurm`: the same command, run as one Slurm job on the
course's GPU partition, from a login node whose file system the nodes share.

The job runs the command exactly as it would run here, its stdout and stderr into a job
folder (`.grader/slurm/<stamp>/`), `check`'s results into that folder's `results/`. This side
submits it with the options `batch --slurm` takes (job_options.SlurmOptions; defaults
from the course file, course/course_file.py), shows a progress line while it waits (the job's state,
its place in the queue, the seconds since it was submitted; then the job's own progress lines),
and at the end prints what the job printed, copies `check`'s results to `.grader/last/`, and
exits with the job's exit status. Ctrl-C (or SIGTERM) cancels the job with `scancel`.

The pure parts (the job's command line and script; reading squeue and sinfo, slurm_output.py)
are functions of text; `run_job` is the one that submits and waits."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Callable, NoReturn

from ..course import course_file
from .. import refcache
from . import job_options
from ..paths import ROOT
from .slurm_output import (SQUEUE_FORMAT, JobState, default_partition, describe, has_gpu,
                           parse_scontrol_state, parse_squeue, partition_gres, queue_position)

POLL_S = 2.0
REPEAT_S = 30.0  # an unchanged state is said again this often
GRACE_S = 30.0  # a finished job's files may take this long to show on a shared file system


# --------------------------------------------------------------------------- the command line

def add_arguments(p: argparse.ArgumentParser) -> None:
    """--slurm and the options of the job (the names and meanings `batch --slurm` uses);
    each left out is the course file's (grader/course.toml, [slurm])."""
    g = p.add_argument_group("running on the course's Slurm cluster (from its login node)")
    g.add_argument("--slurm", action="store_true",
                   help="run this as a job on the course's GPU partition and wait for it "
                        "(Ctrl-C cancels it); the defaults are in grader/course.toml")
    g.add_argument("--allow-no-gpu", action="store_true",
                   help="submit even to a partition without GPUs (the GPU parts are then not "
                        "graded)")
    g.add_argument("--slurm-time", type=float, default=None,
                   help="the job's time limit in seconds (default: the course file's)")
    g.add_argument("--slurm-cpus", type=int, default=None,
                   help="CPUs for the job (default: the course file's)")
    g.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                   help="an extra sbatch option, e.g. --sbatch=--qos=short (repeatable)")
    job_options.add_arguments(g, one_job=True)
    p.set_defaults(slurm_gres=None, slurm_python=None)  # None: the course file's


def options_from(args: argparse.Namespace, course: course_file.Course
                 ) -> job_options.SlurmOptions:
    """The job's SlurmOptions: each --slurm-* option given, else the course file's."""
    d = course.slurm
    merged = argparse.Namespace(
        slurm_gres=args.slurm_gres or d.gres,
        slurm_cpus=args.slurm_cpus or d.cpus,
        slurm_mem=args.slurm_mem or d.mem,
        slurm_time=args.slurm_time or d.time_minutes * 60,
        slurm_partition=args.slurm_partition or d.partition,
        slurm_account=args.slurm_account or d.account,
        slurm_setup=[*d.setup, *args.slurm_setup],
        slurm_python=args.slurm_python or d.python,
        sbatch=[*d.sbatch, *args.sbatch])
    return job_options.from_args(merged, merged.slurm_time)


def _grading_flags(args: argparse.Namespace) -> list[str]:
    """The grading flags (add_grading_flags) as given, paths made absolute; the default
    cache left for the job to find as its own."""
    out = []
    if args.seed is not None:
        out += ["--seed", str(args.seed)]
    if args.no_gpu:
        out.append("--no-gpu")
    if getattr(args, "build_timeout", None) is not None:
        out += ["--build-timeout", f"{args.build_timeout:g}"]
    if getattr(args, "test_timeout", None) is not None:
        out += ["--test-timeout", f"{args.test_timeout:g}"]
    if getattr(args, "no_cache", False):
        out.append("--no-cache")
    elif getattr(args, "cache", None) and Path(args.cache) != refcache.default_dir():
        out += ["--cache", str(Path(args.cache).resolve())]  # else the node's own default
    return out


def job_argv(command: str, args: argparse.Namespace, results: Path | None = None,
             work: Path | None = None) -> list[str]:
    """The grader's arguments for the job: the command as given, without --slurm and its
    options, paths absolute; `check` writes its results to `results` and builds in `work`."""
    if command == "check":
        argv = ["check", *args.labs, *_grading_flags(args)]
        if args.html:
            argv.append("--html")
        if args.quiet:
            argv.append("-q")
        if results is not None:
            argv += ["--results", str(results)]
        if work is not None:
            argv += ["--work-dir", str(work)]
        return argv
    if command == "grade":
        argv = ["grade", str(Path(args.submission).resolve()), "--out",
                str(Path(args.out).resolve()), f"--format={','.join(args.format)}"]
        if args.labs:
            argv += ["--labs", args.labs]
        argv += _grading_flags(args)
        if args.html:
            argv.append("--html")
        if args.work_dir is not None:
            argv += ["--work-dir", str(Path(args.work_dir).resolve())]
        if args.quiet:
            argv.append("-q")
        return argv
    raise ValueError(f"no Slurm job for the command {command!r}")


def job_script(options: job_options.SlurmOptions, repo: str | Path, job_dir: str | Path,
               argv: list[str], lock: str | Path | None = None, color: bool = False) -> str:
    """The job: the grader's command in `repo`, stdout and stderr into `job_dir`, then its
    exit status into `job_dir/rc` (written last: its presence says the command is over).
    `lock`: a file the job holds with flock while it runs (the shared build folder)."""
    d = Path(job_dir)

    def q(path: str | Path) -> str:
        return shlex.quote(str(path))

    command = '"$PYTHON" -m grader ' + " ".join(shlex.quote(a) for a in argv)
    if lock is not None:
        command = f"flock {q(lock)} {command}"
    lines = ["#!/bin/bash",
             f"# python3 -m grader {argv[0]} --slurm: the command, run on a node",
             *options.header(f"cml-{argv[0]}", str(d / "slurm.out")),
             *options.prologue(repo)]
    if color:
        lines.append("export CLICOLOR_FORCE=1")
    lines += ["rc=0",
              f"{command} >{q(d / 'stdout')} 2>{q(d / 'stderr')} || rc=$?",
              f"echo \"$rc\" >{q(d / 'rc.part')}",
              f"mv {q(d / 'rc.part')} {q(d / 'rc')}"]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the checks

def _tool(name: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([name, *args], capture_output=True, text=True, timeout=timeout)


def refusals(options: job_options.SlurmOptions, no_gpu: bool, allow_no_gpu: bool,
             check_options: bool = True) -> tuple[list[str], list[str]]:
    """(reasons not to submit, notes): sbatch missing, a partition without GPUs (sinfo's
    GRES) unless --no-gpu or --allow-no-gpu, and what job_options.check_here finds.
    Sets options.gres to "none" where the job is to run without a GPU."""
    if not shutil.which("sbatch"):
        return [("sbatch is not on the PATH: --slurm submits a job from the cluster's login "
                 "node (ssh there, then run this again), or leave --slurm out to grade "
                 "here")], []
    notes: list[str] = []
    if no_gpu:
        options.gres = "none"  # nothing on the GPU is graded: ask for none
    elif shutil.which("sinfo"):
        proc = _tool("sinfo", "-h", "-o", "%P|%G")
        if proc.returncode != 0:
            return [f"sinfo could not reach Slurm: {proc.stderr.strip()[:200]}"], []
        table = partition_gres(proc.stdout)
        name = options.partition or default_partition(proc.stdout)
        if name is None:
            return ["the cluster has no default partition: name one with "
                    "--slurm-partition or in grader/course.toml ([slurm] partition)"], []
        if name not in table:
            return [f"partition {name} not found (sinfo lists "
                    f"{', '.join(table) or 'none'})"], []
        if not has_gpu(table[name]):
            if not allow_no_gpu:
                return [f"partition {name} has no GPU (sinfo's GRES: "
                        f"{', '.join(sorted(set(table[name])))}): name the course's GPU "
                        "partition with --slurm-partition, or give --no-gpu (or "
                        "--allow-no-gpu) to grade without the GPU parts"], []
            options.gres = "none"
            notes.append(f"partition {name} has no GPU: the GPU parts are not graded")
    else:
        notes.append("sinfo is not here: the partition's GPUs were not checked")
    if options.gres_line is None and not (no_gpu or allow_no_gpu):
        return ["the job asks for no GPU (gres none): give --no-gpu as well to grade "
                "without the GPU parts"], []
    if check_options:
        errors, note = job_options.check_here(options)
        if errors:
            return errors, []
        if note:
            notes.append(note)
    return [], notes


# --------------------------------------------------------------------------- submit and wait

class _Cancel(Exception):
    pass


def _raise_cancel(signum: int, frame: FrameType | None) -> NoReturn:
    raise _Cancel(signal.Signals(signum).name)


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"


def run_job(command: str, args: argparse.Namespace, root: Path = ROOT,
            last: Path | None = None) -> int:
    """Submits `command` as a job, waits, prints its output, copies `check`'s results to
    `last`; the job's exit status (1 when it could not run, 130 when cancelled here)."""
    progress_on = not args.quiet
    try:
        course = course_file.load(root)
    except course_file.CourseError as err:
        print(f"{command}: {err}", file=sys.stderr)
        return 1
    options = options_from(args, course)
    reasons, notes = refusals(options, args.no_gpu, args.allow_no_gpu,
                              check_options=not args.slurm_no_check)
    if reasons:
        for reason in reasons:
            print(f"{command}: slurm: {reason}", file=sys.stderr)
        print(f"{command}: nothing submitted", file=sys.stderr)
        return 1
    for note in notes:
        print(f"{command}: slurm: {note}", file=sys.stderr)
    jobs = Path(root) / ".grader" / "slurm"
    job_dir = jobs / _stamp()
    job_dir.mkdir(parents=True)
    results = job_dir / "results" if command == "check" else None
    work = jobs / "work" if command == "check" else None
    argv = job_argv(command, args, results, work)
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    script = job_dir / "job.sbatch"
    script.write_text(job_script(options, root, job_dir, argv,
                                 lock=jobs / "work.lock" if work else None, color=color))
    proc = _tool("sbatch", "--parsable", str(script))
    if proc.returncode != 0:
        print(f"{command}: slurm: sbatch refused the job: "
              f"{(proc.stderr or proc.stdout).strip()}", file=sys.stderr)
        return 1
    job_id = proc.stdout.strip().split(";")[0]
    from ..pipeline import Progress
    say = Progress(not progress_on)
    say(f"slurm job {job_id} submitted ({job_dir.relative_to(root)})")
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in saved:
        signal.signal(s, _raise_cancel)
    try:
        status = _wait(job_id, job_dir, options.partition, say)
    except (_Cancel, KeyboardInterrupt) as why:
        for s, handler in saved.items():
            signal.signal(s, handler)
        cancel = subprocess.run(["scancel", job_id], capture_output=True, text=True)
        done = "cancelled" if cancel.returncode == 0 else \
            f"could not cancel ({cancel.stderr.strip()}): scancel {job_id}"
        print(f"{command}: interrupted ({why}); slurm job {job_id} {done}", file=sys.stderr)
        return 130
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
    if status is None:  # the job ended without running the command to its end
        return 1
    sys.stdout.write((job_dir / "stdout").read_text(errors="replace"))
    sys.stdout.flush()
    if results is not None and last is not None and (results / "result.json").is_file():
        last.mkdir(parents=True, exist_ok=True)
        for path in results.iterdir():
            if path.is_file():
                shutil.copyfile(path, last / (path.name + ".part"))
                os.replace(last / (path.name + ".part"), last / path.name)
    shutil.rmtree(job_dir, ignore_errors=True)
    return status


def _wait(job_id: str, job_dir: Path, partition: str | None,
          say: Callable[[str], None]) -> int | None:
    """Until the job's `rc` shows: the job's exit status; None (after saying why) when the
    job ended without one."""
    rc_file, err_file = job_dir / "rc", job_dir / "stderr"
    shown, said_at, offset, gone_at = "", 0.0, 0, None
    while True:
        offset = _forward(err_file, offset)
        if rc_file.is_file():
            _forward(err_file, offset, final=True)
            return int(rc_file.read_text().strip() or 1)
        proc = _tool("squeue", "-h", "-j", job_id, "-o", SQUEUE_FORMAT)
        state = parse_squeue(proc.stdout) if proc.returncode == 0 else None
        if state is None or state.finished:
            if state is None:
                state = parse_scontrol_state(
                    _tool("scontrol", "show", "job", "-o", job_id).stdout) \
                    or JobState("gone from the queue")
            gone_at = gone_at or time.monotonic()
            if time.monotonic() - gone_at > GRACE_S:
                _forward(err_file, offset, final=True)
                log = job_dir / "slurm.out"
                tail = log.read_text(errors="replace").strip().splitlines()[-15:] \
                    if log.is_file() else []
                why = state.state.lower() + (f", {state.reason}" if state.reason else "")
                print(f"slurm job {job_id} ended ({why}) without finishing the command; "
                      f"its folder: {job_dir}"
                      + "".join(f"\n  {line}" for line in tail), file=sys.stderr)
                return None
        else:
            gone_at = None  # in the queue again: a later departure gets a grace of its own
            position = None
            if state.state == "PENDING":
                pending = ["-h", "-t", "PENDING", "-o", "%i", "-S", "-p,i"]
                if partition:
                    pending += ["-p", partition]
                queue = _tool("squeue", *pending)
                position = queue_position(queue.stdout, job_id) \
                    if queue.returncode == 0 else None
            text = describe(job_id, state, position, partition)
            now = time.monotonic()
            if text != shown or now - said_at >= REPEAT_S:
                say(text)
                shown, said_at = text, now
        time.sleep(POLL_S)


def _forward(path: Path, offset: int, final: bool = False) -> int:
    """Prints the job's new stderr lines (its progress lines and problems; whole lines, all
    that is left when `final`) on stderr; the new offset."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return offset
    if not final:
        data = data[:data.rfind(b"\n") + 1]
    if data:
        sys.stderr.write(data.decode(errors="replace"))
        sys.stderr.flush()
    return offset + len(data)
