"""`batch SUBMISSIONS --out DIR`: grades a class. Parallel builds, GPU stages one at a time
under a machine-wide lock, resumable; `--slurm` writes a job array instead of grading here,
`--collect DIR` merges the results into the gradebook and the summary.

Exit status: 0 when every submission was graded (whatever the scores); 2 when the inputs
(roster, folders, names, extensions, deadlines, overrides, the LMS roster) have problems,
each told, nothing written; 1 on other bad input or when a submission could not be graded
by the grader; 130 when interrupted.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

from .. import batch
from ..cluster import job_options
from ..batch import regrades, schedule
from ..batch.node import node_problem
from ..exports import fmt_points
from ..paths import ROOT, LabPaths
from ..submissions import DownloadError, Staging, read_download, write_staging
from ..exports.common import print_verbatim
from ..exports.table import use_color
from ..gpu import visible_devices
from ..workspace import usable_cpus
from . import batch_flags
from ._common import Subcommands, labs_or_say

HELP = "grade many submissions (a folder or a CSV roster) into a gradebook"


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("batch", help=HELP, description=" ".join(__doc__.split("\n\n")[0]
                                                                .split()))
    p.add_argument("submissions", type=Path, nargs="?",
                   help="a folder with one submission per student (a folder laid out like "
                        "the repository, or a git repository; the folder's name is the "
                        "student's), or a CSV roster with columns student,path")
    batch_flags.add_all(p)
    p.add_argument("--task", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--work-dir", type=Path, default=None, help=argparse.SUPPRESS)
    # a regrade without SUBMISSIONS keeps the plan's settings where no flag is given
    p.set_defaults(plan_defaults={arg: p.get_default(arg) for arg in PLAN_SETTINGS})
    return p


# argument -> the Plan field a regrade of the existing plan keeps unless the flag is given
PLAN_SETTINGS = {"format": "formats", "timeout": "timeout", "no_gpu": "no_gpu",
                 "gpu_lock": "gpu_lock", "build_timeout": "build_timeout",
                 "test_timeout": "test_timeout", "deadline": "deadline",
                 "late_policy": "late_policy"}


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
    # without a GPU the points are not the grade: said on the line itself
    host_only = " (host parts only: provisional)" if outcome.host_only else ""
    return (f"[{done:>{width}}/{total}] {outcome.student:<20} {points:>11}  {status}"
            f"{host_only}{'  ' + labs if labs else ''}{took}")


def run(args: argparse.Namespace) -> int:
    # SIGINT and SIGTERM stop the batch from its first word on (KeyboardInterrupt, status
    # 130), whatever the batch inherited: a signal before the grading starts is not lost.
    saved = batch.listen() if threading.current_thread() is threading.main_thread() else None
    try:
        return _run(args)
    except batch.BatchProblems as err:
        for problem in err.problems:
            print(f"batch: {problem}", file=sys.stderr)
        print(f"batch: {len(err.problems)} problem(s) in the inputs; nothing written",
              file=sys.stderr)
        return 2
    except batch.BatchError as err:
        print(f"batch: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("batch: interrupted; run the same command again to go on", file=sys.stderr)
        return 130
    finally:
        if saved is not None:
            batch.restore(saved)


def _run(args: argparse.Namespace) -> int:
    if {e.strip() for e in args.export.split(",")} - {"", "canvas", "moodle"}:
        print(f"batch: --export takes canvas, moodle (got {args.export})", file=sys.stderr)
        return 1  # before grading anything
    if args.collect is not None:
        check_folder(args, args.collect)
        manifest = batch.collect(args.collect)
        return _lms_files(args, args.collect) or _report_collected(args.collect, manifest)
    if args.out is None:
        print("batch: --out DIR is required", file=sys.stderr)
        return 1
    out = args.out.resolve()
    if args.task is not None:  # one array task (also how the local batch runs each one)
        stamp = batch.run_task(out, args.task, args.work_dir, force=args.force)
        return 0 if stamp is None or stamp.status in batch.KEEP_ON_RESUME else 1
    if args.rescore:
        check_folder(args, out)
        done = regrades.rescore(out)
        print(f"rescored {len(done)} result(s) from the current rubrics")
        manifest = batch.collect(out)
        return _lms_files(args, out) or _report_collected(out, manifest)
    old = batch.Plan.load(out) if (out / batch.PLAN_FILE).is_file() else None
    if args.submissions is None and old is None:
        print("batch: give SUBMISSIONS (a folder or a CSV roster), or --collect DIR",
              file=sys.stderr)
        return 1
    if old is not None and args.submissions is None:  # a regrade of the plan as it is
        _keep_plan_settings(args, old)
    slurm = _slurm_options(args) if args.slurm else None
    if args.slurm and slurm is None:
        return 1  # nothing written
    plan = _plan(args, out, old)
    if plan is None:
        return 1
    only = (regrades.chosen(out, plan, args.only, args.only_status)
            if args.only or args.only_status else None)
    if only is not None and not only:
        print("batch: --only/--only-status chose nobody; nothing to grade", file=sys.stderr)
        return 0
    if slurm is not None:
        return _slurm(args, slurm, plan, out, only)
    problem = node_problem(plan)
    if problem is not None:
        print(f"batch: {problem}", file=sys.stderr)
        return 1
    colour = use_color(None)
    count = len(plan.submissions) if only is None else len(only)
    if args.jobs is None:
        gpus = 0 if plan.no_gpu else len(visible_devices())
        args.jobs = schedule.default_jobs(gpus, usable_cpus())
    print(f"grading {count} submission(s), {args.jobs} at a time, labs "
          f"{', '.join(plan.labs)}, seed {plan.seed} -> {out}", file=sys.stderr, flush=True)
    import time
    start = time.monotonic()
    outcomes = batch.run_local(
        out, args.jobs, force=args.force or only is not None, keep_work=args.keep_work,
        report=lambda o, done, total: print(progress_line(o, done, total, colour), flush=True),
        only=only)
    manifest = batch.collect(out)
    kept = sum(1 for o in outcomes if o.status == "kept")
    host_only = sum(1 for o in outcomes if o.host_only)
    print(f"{len(outcomes) - kept} graded, {kept} unchanged (kept) in "
          f"{time.monotonic() - start:.1f} s"
          + (f"; {host_only} with host parts only (no GPU): their points are provisional"
             if host_only else ""))
    return _lms_files(args, out) or _report_collected(out, manifest)


def _keep_plan_settings(args: argparse.Namespace, old: "batch.Plan") -> None:
    """The plan's settings for every PLAN_SETTINGS flag left at its default."""
    defaults = getattr(args, "plan_defaults", {})
    for arg, name in PLAN_SETTINGS.items():
        if arg in defaults and getattr(args, arg) == defaults[arg]:
            setattr(args, arg, getattr(old, name))
    if not args.require_tools:
        args.require_tools = ",".join(old.require_tools)


def _plan(args: argparse.Namespace, out: Path, old: "batch.Plan | None") -> "batch.Plan | None":
    """The plan of this run, saved: the earlier plan's inputs kept (seed, other students),
    the submissions given now merged in, git submissions pinned to their due commit."""
    labs = (old.lab_paths() if old is not None and not args.labs else
            labs_or_say("batch", [args.labs] if args.labs else []))
    if labs is None:
        return None
    seed = args.seed if args.seed is not None else old.seed if old else None
    staging, subs = check_inputs(args, out, old, labs)  # BatchProblems: nothing written
    if staging is not None:
        subs = batch.read_submissions(write_staging(staging, out))
    extensions = {}
    for source in (args.submissions, args.roster):
        if source is not None and Path(source).is_file():
            extensions.update(regrades.read_extensions(Path(source)))
    fetched = regrades.read_fetched(args.fetched_at)
    for warning in regrades.pin_git(subs, out, args.deadline, extensions, args.late_policy,
                                    fetched):
        print(f"batch: {warning}", file=sys.stderr)
    plan = batch.Plan(repo=str(ROOT), labs=[lab.folder for lab in labs],
                      seed=seed if seed is not None else batch.new_seed(),
                      timeout=args.timeout, submissions=regrades.merge_plans(old, subs),
                      formats=list(args.format), gpu_lock=args.gpu_lock, no_gpu=args.no_gpu,
                      build_timeout=args.build_timeout, test_timeout=args.test_timeout,
                      require_tools=[t.strip() for t in args.require_tools.split(",")
                                     if t.strip()],
                      deadline=args.deadline, late_policy=args.late_policy,
                      cache=None if args.no_cache else str(Path(args.cache).resolve()))
    plan.save(out)
    return plan


def check_inputs(args: argparse.Namespace, out: Path, old: "batch.Plan | None",
                 labs: list[LabPaths]) -> tuple["Staging | None", list["batch.Submission"]]:
    """Every input of a batch checked before anything is written: the deadline and the
    late policy, the submissions (a folder, a CSV roster or an LMS download: names, links,
    folders shared), extensions, --fetched-at, --only and --only-status, the LMS roster's
    join and overrides.csv. Returns the
    download to stage (None for a folder or a roster) and the submissions; raises
    BatchProblems with one line per problem."""
    from ..batch import deadlines
    from ..exports import lms
    problems: list[str] = []
    try:
        if args.deadline:
            deadlines.parse_time(args.deadline)
    except deadlines.DeadlineError as err:
        problems.append(f"--deadline: {err}")
    try:
        deadlines.LatePolicy.parse(args.late_policy)
    except deadlines.DeadlineError as err:
        problems.append(f"--late-policy: {err}")
    staging, subs = None, []
    if args.submissions is not None:
        try:
            staging = read_download(args.submissions, labs)
            subs = ([batch.Submission(d.student, "") for d in staging.downloads]
                    if staging is not None else batch.read_submissions(args.submissions))
        except DownloadError as err:
            problems += err.problems
        except batch.BatchProblems as err:
            problems += err.problems
    students = [s.student for s in regrades.merge_plans(old, subs)]
    for source in (args.submissions, args.roster):
        if source is not None and Path(source).is_file():
            problems += regrades.extension_problems(Path(source), students if subs else None)
    if args.roster is not None:
        if not args.roster.is_file():
            problems.append(f"--roster: no file {args.roster}")
        elif subs:
            info = staging.info if staging is not None else {}
            try:
                lms.join_roster([{"student": s} for s in students], lms.read_roster(args.roster)[1],
                                info, args.roster.name)
            except lms.RosterError as err:
                problems += err.problems
    problems += _fetch_problems(args, subs)
    from ..batch import regrade_rules
    for only, status in ((args.only, None), (None, args.only_status)):
        try:
            if only or status:
                regrade_rules.select_students(students, {}, only, status)
        except regrade_rules.RegradeError as err:
            problems.append(str(err))
    if old is not None and (out / regrades.OVERRIDES).is_file():
        problems += regrades.override_problems(out, old)
    if problems:
        raise batch.BatchProblems(problems)
    return staging, subs


def _fetch_problems(args: argparse.Namespace, subs: list["batch.Submission"]) -> list[str]:
    """--fetched-at: readable, naming students of the batch, and, under the cutoff policy,
    no fetch after the student's deadline."""
    from ..batch import deadlines
    try:
        fetched = regrades.read_fetched(args.fetched_at)
    except batch.BatchProblems as err:
        return err.problems
    if fetched is None:
        return []
    names = {s.student for s in subs}
    problems = [f"--fetched-at: {s!r} is not in this batch"
                for s in (fetched if isinstance(fetched, dict) else []) if s not in names]
    try:
        policy = deadlines.LatePolicy.parse(args.late_policy)
        extensions = {}
        for source in (args.submissions, args.roster):
            if source is not None and Path(source).is_file():
                extensions.update(regrades.read_extensions(Path(source)))
        for sub in subs:
            at = regrades.fetched_for(sub.student, fetched)
            due = deadlines.deadline_for(sub.student, args.deadline, extensions)
            if at and due and not policy.grades_newest and deadlines.parse_time(at) > due:
                problems.append(f"--fetched-at: {sub.student} was fetched at {at}, after "
                                f"the deadline {due.isoformat()}: under the cutoff policy "
                                "which commits were there at the deadline is only the "
                                "student's word (fetch at the deadline, or give a "
                                "--late-policy)")
    except deadlines.DeadlineError:
        pass  # told by the checks of the deadline, the policy and the extensions
    return problems


def check_folder(args: argparse.Namespace, out: Path) -> None:
    """Before a collect or a rescore writes anything: overrides.csv and the join of the
    plan's students to --roster checked (BatchProblems, one line per problem)."""
    from ..exports import lms
    from ..submissions import read_info
    plan = batch.Plan.load(out)
    problems = regrades.override_problems(Path(out), plan)
    if args.roster is not None and args.roster.is_file():
        try:
            lms.join_roster([{"student": s.student} for s in plan.submissions],
                            lms.read_roster(args.roster)[1], read_info(out), args.roster.name)
        except lms.RosterError as err:
            problems += err.problems
    if problems:
        raise batch.BatchProblems(problems)


def _slurm_options(args: argparse.Namespace) -> "job_options.SlurmOptions | None":
    """The --slurm-* options, checked against the partition; None after saying why not."""
    opts = job_options.from_args(args, args.timeout)
    if opts.gres_line is None and not args.no_gpu:
        print("batch: --slurm-gres none gives the tasks no GPU: give --no-gpu as well to "
              "grade without the GPU parts (the gradebook then says 'provisional')",
              file=sys.stderr)
        return None
    if not args.slurm_no_check:
        errors, note = job_options.check_here(opts)
        for error in errors:
            print(f"batch: slurm: {error}", file=sys.stderr)
        if errors:
            print("batch: nothing written; change the --slurm-* options (or give "
                  "--slurm-no-check)", file=sys.stderr)
            return None
        if note:
            print(f"batch: {note}", file=sys.stderr)
    return opts


def _slurm(args: argparse.Namespace, opts: "job_options.SlurmOptions", plan: "batch.Plan",
           out: Path, only: set[str] | None) -> int:
    """--slurm: the prep job and the array after it."""
    indices = (None if only is None else
               [i for i, s in enumerate(plan.submissions) if s.student in only])
    prep, script = batch.write_slurm(plan, out, opts, args.slurm_parallel,
                                     prep=args.slurm_prep, indices=indices,
                                     force=args.force or only is not None)
    count = len(plan.submissions) if indices is None else len(indices)
    print(f"wrote {script} ({count} array tasks)" + (f" and {prep}" if prep else ""))
    print_verbatim(f"submit with:      {job_options.submit_line(prep, script)}")
    print_verbatim(f"when it is done:  python3 -m grader batch --collect {out}")
    return 0


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
    try:
        warnings = lms.write_files(out, labs, args.roster, exports, read_info(out))
    except lms.RosterError as err:
        raise batch.BatchProblems(err.problems) from None
    for warning in warnings:
        print(f"batch: {warning}", file=sys.stderr)
    print("wrote " + ", ".join(str(Path(out) / lms.EXPORTS[e]) for e in exports)
          if exports else f"joined {args.roster} to {Path(out) / 'gradebook.csv'}")
    return 0


def _report_collected(out: Path, manifest: dict[str, Any]) -> int:
    students = manifest["students"]
    bad = [s for s, e in students.items() if e.get("status") not in batch.KEEP_ON_RESUME]
    print(f"wrote {Path(out) / 'gradebook.csv'}, {Path(out) / 'summary.md'}")
    if bad:
        print(f"not graded: {', '.join(bad)} (see DIR/<student>/grade.log; run the batch "
              "again to retry them)", file=sys.stderr)
        return 1
    return 0
