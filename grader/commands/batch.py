"""`batch SUBMISSIONS --out DIR`: grades a class. Parallel builds, GPU stages one at a time
under a machine-wide lock, resumable; `--slurm` writes a job array instead of grading here,
`--collect DIR` merges the results into the gradebook and the summary.

Exit status: 0 when every submission was graded (whatever the scores); 1 on bad input or
when a submission could not be graded by the grader; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .. import batch
from ..exports import fmt_points
from ..paths import ROOT
from ..submissions import stage_download
from ..exports.table import use_color
from ._common import add_format_flag, add_grading_flags, labs_or_say

HELP = "grade many submissions (a folder or a CSV roster) into a gradebook"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("batch", help=HELP, description=" ".join(__doc__.split("\n\n")[0]
                                                                .split()))
    p.add_argument("submissions", type=Path, nargs="?",
                   help="a folder with one submission per student (a folder laid out like "
                        "the repository, or a git repository; the folder's name is the "
                        "student's), or a CSV roster with columns student,path")
    p.add_argument("--out", type=Path, help="the batch's folder: DIR/<student>/result.json, "
                   "gradebook.csv, summary.md, manifest.json")
    p.add_argument("-j", "--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 4),
                   help="submissions graded at the same time (default: CPUs / 4)")
    p.add_argument("--labs", default="", help="comma-separated lab numbers (default: all)")
    p.add_argument("--timeout", type=float, default=batch.DEFAULT_TIMEOUT,
                   help="wall-clock seconds per submission, time waiting for the GPU "
                        f"excluded (default {batch.DEFAULT_TIMEOUT:g})")
    add_grading_flags(p, "one seed for every submission (default: the batch's earlier seed, "
                         "else a fresh one)", "grade as on a machine without a GPU")
    add_format_flag(p, "exports written beside each result.json")
    p.add_argument("--gpu-lock", default=os.environ.get("CML_GPU_LOCK", batch.DEFAULT_LOCK),
                   help="the lock file GPU stages take, shared by every grader on this "
                        f"machine (default: $CML_GPU_LOCK or {batch.DEFAULT_LOCK})")
    p.add_argument("--force", action="store_true",
                   help="grade again even the submissions that have not changed")
    p.add_argument("--keep-work", action="store_true",
                   help="keep the build folders (DIR/.work) afterwards")
    p.add_argument("--slurm", action="store_true",
                   help="write DIR/slurm/grade.sbatch (a job array, one task per submission) "
                        "instead of grading here")
    p.add_argument("--slurm-time", type=float, default=None,
                   help="the job array's time limit per task in seconds (default: "
                        "--timeout + 15 minutes)")
    p.add_argument("--slurm-cpus", type=int, default=4, help="CPUs per array task (default 4)")
    p.add_argument("--slurm-parallel", type=int, default=None,
                   help="at most this many array tasks at once (%%N)")
    p.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                   help="an extra #SBATCH line, e.g. --sbatch=--partition=gpu (repeatable)")
    p.add_argument("--collect", type=Path, metavar="DIR",
                   help="merge DIR's results into DIR/gradebook.csv and DIR/summary.md")
    p.add_argument("--roster", type=Path, default=None,
                   help="the LMS's roster CSV (Canvas's or Moodle's export): its id, SIS, "
                        "e-mail and section columns are added to gradebook.csv")
    p.add_argument("--export", default="", help="also write gradebooks the LMS imports: "
                   "canvas (canvas-import.csv), moodle (moodle-import.csv), or both")
    p.add_argument("--task", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--work-dir", type=Path, default=None, help=argparse.SUPPRESS)
    return p


COLOURS = {"graded": "32", "kept": "36", "timeout": "33", "error": "31", "interrupted": "31"}


def progress_line(outcome: batch.Outcome, done: int, total: int, colour: bool) -> str:
    width = len(str(total))
    status = outcome.status
    if colour and status in COLOURS:
        status = f"\033[{COLOURS[status]}m{status}\033[0m"
    points = ("-" if outcome.points is None else
              f"{fmt_points(outcome.points)}/{fmt_points(outcome.max_points or 0)}")
    labs = " ".join(f"{lab[:2]}:{fmt_points(p)}" for lab, p in outcome.labs.items())
    took = "" if outcome.status == "kept" else f"  {outcome.seconds:.0f} s"
    return (f"[{done:>{width}}/{total}] {outcome.student:<20} {points:>11}  {status}"
            f"{'  ' + labs if labs else ''}{took}")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except batch.BatchError as err:
        print(f"batch: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("batch: interrupted; run the same command again to go on", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    if {e.strip() for e in args.export.split(",")} - {"", "canvas", "moodle"}:
        print(f"batch: --export takes canvas, moodle (got {args.export})", file=sys.stderr)
        return 1  # before grading anything
    if args.collect is not None:
        manifest = batch.collect(args.collect)
        return _lms_files(args, args.collect) or _report_collected(args.collect, manifest)
    if args.out is None:
        print("batch: --out DIR is required", file=sys.stderr)
        return 1
    out = args.out.resolve()
    if args.task is not None:  # one array task (also how the local batch runs each one)
        stamp = batch.run_task(out, args.task, args.work_dir, force=args.force)
        return 0 if stamp is None or stamp.status in batch.KEEP_ON_RESUME else 1
    if args.submissions is None:
        print("batch: give SUBMISSIONS (a folder or a CSV roster), or --collect DIR",
              file=sys.stderr)
        return 1
    labs = labs_or_say("batch", [args.labs] if args.labs else [])
    if labs is None:
        return 1
    formats = list(args.format)
    seed = args.seed
    if seed is None and (out / batch.PLAN_FILE).is_file():
        seed = batch.Plan.load(out).seed  # a resumed batch keeps its inputs
    plan = batch.Plan(repo=str(ROOT), labs=[lab.folder for lab in labs],
                      seed=seed if seed is not None else batch.new_seed(),
                      timeout=args.timeout,
                      submissions=batch.read_submissions(  # Canvas/Moodle downloads mapped
                          stage_download(args.submissions, out, labs)), formats=formats,
                      gpu_lock=args.gpu_lock, no_gpu=args.no_gpu,
                      build_timeout=args.build_timeout, test_timeout=args.test_timeout,
                      cache=None if args.no_cache else str(Path(args.cache).resolve()))
    plan.save(out)
    if args.slurm:
        limit = args.slurm_time or args.timeout + 900
        script = batch.write_slurm(plan, out, limit, args.slurm_cpus, args.sbatch,
                                   args.slurm_parallel)
        print(f"wrote {script} ({len(plan.submissions)} array tasks)")
        print(f"submit it with:   sbatch {script}")
        print(f"when it is done:  python3 -m grader batch --collect {out}")
        return 0
    colour = use_color(None)
    print(f"grading {len(plan.submissions)} submission(s), {args.jobs} at a time, labs "
          f"{', '.join(plan.labs)}, seed {plan.seed} -> {out}", file=sys.stderr, flush=True)
    import time
    start = time.monotonic()
    outcomes = batch.run_local(
        out, args.jobs, force=args.force, keep_work=args.keep_work,
        report=lambda o, done, total: print(progress_line(o, done, total, colour), flush=True))
    manifest = batch.collect(out)
    kept = sum(1 for o in outcomes if o.status == "kept")
    print(f"{len(outcomes) - kept} graded, {kept} unchanged (kept) in "
          f"{time.monotonic() - start:.1f} s")
    return _lms_files(args, out) or _report_collected(out, manifest)


def _lms_files(args: argparse.Namespace, out: Path) -> int:
    """--roster and --export: the gradebook joined to the LMS's roster, import files."""
    from ..exports import lms
    from ..rubric import load_rubric
    from ..submissions import read_info

    exports = [e.strip() for e in (args.export or "").split(",") if e.strip()]
    if not exports and args.roster is None:
        return 0
    unknown = [e for e in exports if e not in lms.EXPORTS]
    if unknown or (args.roster is not None and not args.roster.is_file()):
        print(f"batch: {'unknown --export ' + ', '.join(unknown) if unknown else 'no roster '}"
              f"{'' if unknown else str(args.roster)}", file=sys.stderr)
        return 1
    labs = [lms.LabColumn(lab.folder, (r := load_rubric(lab)).title, r.max_points)
            for lab in batch.Plan.load(out).lab_paths()]
    for warning in lms.write_files(out, labs, args.roster, exports, read_info(out)):
        print(f"batch: {warning}", file=sys.stderr)
    print("wrote " + ", ".join(str(Path(out) / lms.EXPORTS[e]) for e in exports)
          if exports else f"joined {args.roster} to {Path(out) / 'gradebook.csv'}")
    return 0


def _report_collected(out: Path, manifest: dict) -> int:
    students = manifest["students"]
    bad = [s for s, e in students.items() if e.get("status") not in batch.KEEP_ON_RESUME]
    print(f"wrote {Path(out) / 'gradebook.csv'}, {Path(out) / 'summary.md'}")
    if bad:
        print(f"not graded: {', '.join(bad)} (see DIR/<student>/grade.log; run the batch "
              "again to retry them)", file=sys.stderr)
        return 1
    return 0
