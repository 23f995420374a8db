"""`doctor`: what this machine can grade — GPU(s), tools and versions — and what each
missing piece costs."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Mapping, TypedDict

from ..course import course_file
from .. import confine, device_limits, sandbox
from ..paths import ROOT
from ..tools import (Gpu, Toolchain, find_catch2, find_nlohmann_json, probe_toolchain,
                     query_gpus)
from ._common import Subcommands

HELP = "show this machine's GPU(s) and tools, and what a missing one means for grading"

# What grading loses without each piece.
COSTS = {
    "cmake": "nothing can be built or graded (CMake >= 3.25 for the presets, 3.24 without)",
    "ninja": "builds use Make instead (slower, otherwise the same)",
    "nvcc": "nothing can be built or graded (the CUDA toolkit's compiler is required)",
    "g++": "nothing can be built (the host compiler is required)",
    "nm": "the forbidden-function check on the compiled file is skipped (binutils)",
    "compute-sanitizer": "memory-safety parts are 'not measured' (no points either way)",
    "ncu": "profiler metrics are 'not measured' (no points either way)",
    "nvidia-smi": "device facts (clocks, temperature) are not recorded",
    "catch2": "the tests cannot be built (install Catch2 2.x or 3.x, or set CMAKE_PREFIX_PATH)",
    "nlohmann-json": "nothing can be built: the benches write their JSON with it (install "
                     "nlohmann-json3-dev, 3.10 or newer, or set CMAKE_PREFIX_PATH)",
}
JSON_MIN = (3, 10)  # the top-level CMakeLists.txt's find_package(nlohmann_json 3.10)


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("doctor", help=HELP, description=HELP)
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    return p


def run(args: argparse.Namespace) -> int:
    tc = probe_toolchain()
    catch_version, catch_where = find_catch2()
    json_version, json_where = find_nlohmann_json()
    gpus, why = query_gpus()
    found: dict[str, Any] = {"gpus": [g.as_dict() for g in gpus], "no_gpu_reason": why or None,
             "tools": {k: {"path": tc.paths.get(k), "version": v} for k, v in tc.versions.items()},
             "catch2": {"version": catch_version, "where": catch_where or None},
             "nlohmann_json": {"version": json_version, "where": json_where or None}}
    profiling = _profiling_allowed()
    found["profiler_counters"] = profiling
    isolation = sandbox.isolation()
    found["sandbox"] = isolation.as_dict()
    limits = device_limits.query()
    found["limits"] = limits.values or None
    feedback = gpu_feedback()
    found["gpu_feedback"] = feedback
    runner = runner_admission(os.environ)
    if runner is not None:
        found["runner"] = runner
    if args.json:
        print(json.dumps(found, indent=2))
        return 0 if _can_build(tc, json_version) else 1

    _print_gpus(gpus, why)
    _print_limits(limits)
    _print_tools(tc, (catch_version, catch_where), (json_version, json_where))
    _print_sandbox(isolation)
    if tc.paths.get("ncu") and gpus and profiling is False:
        print("  note  ncu is installed but GPU performance counters are restricted to admin "
              "users: metrics will be 'not measured' unless the grader runs with access")
    print("GPU feedback without a GPU here (grader/course.toml)")
    for line in feedback_lines(feedback):
        print(line)
    if runner is not None:
        print("This runner's job (GitHub Actions, a self-hosted runner)")
        for line in runner_lines(runner):
            print(line)
    ok = _can_build(tc, json_version)
    _print_verdict(ok, bool(gpus))
    return 0 if ok else 1


def _print_gpus(gpus: list[Gpu], why: str) -> None:
    """doctor's "GPU" section: each GPU nvidia-smi sees, or why there is none."""
    print("GPU")
    if gpus:
        for g in gpus:
            extra = []
            if g.memory_mib:
                extra.append(f"{g.memory_mib / 1024:.0f} GiB")
            if g.sm_clock_mhz:
                extra.append(f"SM clock now {g.sm_clock_mhz} MHz")
            if g.temperature_c is not None:
                extra.append(f"{g.temperature_c} C")
            print(f"  ok    GPU {g.index}: {g.name}, compute capability {g.compute_capability}, "
                  f"driver {g.driver}" + (f" ({', '.join(extra)})" if extra else ""))
    else:
        print(f"  --    no CUDA device: {why}")
        print("        costs: GPU tests, memory safety, timing and profiler metrics are "
              "'not graded'; host tests and static checks still run")


def _print_limits(limits: device_limits.Limits) -> None:
    """doctor's "Device limits" section: the first GPU's, as the handouts name them."""
    print("Device limits (what the handouts ask for; names as in cudaDeviceProp)")
    if limits.values:
        for line in device_limits.lines(limits):
            print(f"        {line}")
    else:
        print(f"  --    no CUDA GPU ({limits.error}): no limits to show; the handouts "
              "quote the grading H100's")


def _print_tools(tc: Toolchain, catch2: tuple[str | None, str],
                 nlohmann_json: tuple[str | None, str]) -> None:
    """doctor's "Tools" section: each tool's version and path, or what its absence costs;
    `catch2` and `nlohmann_json` are (version, where) as tools.py finds them."""
    (catch_version, catch_where), (json_version, json_where) = catch2, nlohmann_json
    print("Tools")
    for name in ("cmake", "ninja", "nvcc", "g++", "nm", "compute-sanitizer", "ncu",
                 "nvidia-smi", "python3"):
        version = tc.versions.get(name)
        path = tc.paths.get(name)
        if path and name == "cmake" and _older(version, (3, 25)):
            print(f"  old   {name:<18} {version or '?':<12} {path}: the presets need 3.25 "
                  "(python3 -m pip install --user cmake, or apt.kitware.com)")
        elif path:
            print(f"  ok    {name:<18} {version or '?':<12} {path}")
        else:
            print(f"  --    {name:<18} missing: {COSTS.get(name, '')}")
    if catch_version:
        print(f"  ok    {'Catch2':<18} {catch_version:<12} {catch_where}")
    else:
        print(f"  --    {'Catch2':<18} not found by this check: {COSTS['catch2']}")
    if json_version and _older(json_version, JSON_MIN):
        print(f"  old   {'nlohmann-json':<18} {json_version:<12} {json_where}: the build needs "
              "3.10 (Debian 12 and Ubuntu 22.04 or newer ship it as nlohmann-json3-dev)")
    elif json_version:
        print(f"  ok    {'nlohmann-json':<18} {json_version:<12} {json_where}")
    else:
        print(f"  --    {'nlohmann-json':<18} not found by this check: {COSTS['nlohmann-json']}")


def _print_sandbox(isolation: sandbox.Isolation) -> None:
    """doctor's "Sandbox" section: how student code is contained here, or what is missing."""
    print("Sandbox")
    if isolation.jailed:
        print(f"  ok    student code is compiled and run in a jail ({isolation.tool}): no "
              "network, no view of the checkout, solutions or outputs")
        if isolation.seccomp:
            print("  ok    jailed programs run under a system-call filter (seccomp): no new "
                  "processes, network sockets or ptrace")
        else:
            print(f"  --    no system-call filter: {isolation.seccomp_why}")
        mark = "ok" if isolation.landlock >= 6 else "--"
        print(f"  {mark:<5} tools' logs: {confine.what_it_walls(isolation.landlock)}")
    else:
        print(f"  --    no jail: {isolation.why}")
        print("        costs: grading still works, with a scrubbed environment, limits and "
              "(as root) an unprivileged user only; result.json records this")


def _print_verdict(can_build: bool, has_gpu: bool) -> None:
    """doctor's "Verdict": what of a lab can be graded here."""
    print("Verdict")
    if can_build and has_gpu:
        print("  everything can be graded here")
    elif can_build:
        print("  builds, host tests and static checks can be graded here; GPU parts cannot")
    else:
        print("  nothing can be built here until the missing required tools are installed")


PR_WORKFLOW = ".github/workflows/grade-student-prs.yml"  # the course repository's
RUNNER_WORKFLOW = "CML_RUNNER_WORKFLOW"  # set on the GPU runner: OWNER/REPO/<PR_WORKFLOW>
RUNNER_EVENTS = ("schedule", "workflow_dispatch")


class RunnerJob(TypedDict):
    """The job a self-hosted runner is running, as runner_admission finds it."""

    workflow_ref: str | None  # OWNER/REPO/.github/workflows/F.yml@refs/heads/B
    repository: str | None
    event: str | None
    expected: str | None  # the workflow the runner says it is for ($CML_RUNNER_WORKFLOW)
    warnings: list[str]


def runner_admission(env: Mapping[str, str]) -> RunnerJob | None:
    """Inside a GitHub Actions job on a self-hosted runner (None elsewhere): whether the job
    is the one the GPU runners' group should admit, as far as the job's environment shows:
    the repository and workflow the runner says it is for ($CML_RUNNER_WORKFLOW, set in the
    runner's own environment), a scheduled or dispatched event, a branch's workflow file.
    This sees only the job it runs in: the runner group's settings are what keep every
    other workflow out."""
    if env.get("GITHUB_ACTIONS") != "true" or env.get("RUNNER_ENVIRONMENT") == "github-hosted":
        return None
    ref = env.get("GITHUB_WORKFLOW_REF", "")  # OWNER/REPO/.github/workflows/F.yml@refs/heads/B
    path, _, at = ref.partition("@")
    repo, event = env.get("GITHUB_REPOSITORY", ""), env.get("GITHUB_EVENT_NAME", "")
    expected = env.get(RUNNER_WORKFLOW, "").strip()
    warnings = []
    if not expected:
        warnings.append(f"the runner does not say which workflow it is for: set {RUNNER_WORKFLOW}"
                        f"=OWNER/REPO/{PR_WORKFLOW} in its environment to have this checked")
    else:
        course = expected.split("/.github/", 1)[0]
        if repo != course:
            warnings.append(f"this job is of the repository {repo or '(unknown)'}, not {course}: "
                            "the runner group must admit only the course's repository "
                            "(\"selected repositories\")")
        if path != expected:
            warnings.append(f"this job runs {path or '(an unknown workflow)'}, not {expected}: "
                            "the runner group must admit only that workflow (\"selected "
                            "workflows\")")
    if event not in RUNNER_EVENTS:
        warnings.append(f"this job was started by '{event or '(unknown)'}': a GPU runner should "
                        "only take the course's scheduled or dispatched grading (on a pull "
                        "request's event the pull request wrote the workflow that runs)")
    if at and not at.startswith("refs/heads/"):
        warnings.append(f"the workflow file that runs is {at}'s, not a branch's")
    return {"workflow_ref": ref or None, "repository": repo or None, "event": event or None,
            "expected": expected or None, "warnings": warnings}


def runner_lines(found: RunnerJob) -> list[str]:
    """doctor's section on the job this runner is running."""
    lines = [f"        workflow {found['workflow_ref'] or '(unknown)'}, event "
             f"{found['event'] or '(unknown)'}"]
    if not found["warnings"]:
        lines.append("  ok    the job is the course's grading workflow, as this runner is set "
                     "up for")
    lines += [f"  warn  {w}" for w in found["warnings"]]
    return lines


class SlurmFeedback(TypedDict):
    """The Slurm way to GPU feedback, as seen from here."""

    sbatch: str | None  # its path, None when it is not here
    partition: str | None  # the course file's, None for the cluster's default


class GpuFeedback(TypedDict, total=False):
    """The ways to GPU feedback (gpu_feedback): `error` alone beside `set_up_for` (None)
    when the course file cannot be read."""

    set_up_for: str | None  # the course file's gpu_path
    error: str
    slurm: SlurmFeedback
    pr_runners: dict[str, bool]  # "workflow": the course's grading workflow is here


def gpu_feedback(root: Path = ROOT,
                 which: Callable[[str], str | None] = shutil.which) -> GpuFeedback:
    """The two ways to GPU feedback, and the one the course file sets this copy up for."""
    try:
        course = course_file.load(root)
    except course_file.CourseError as err:
        return {"set_up_for": None, "error": str(err)}
    return {"set_up_for": course.gpu_path,
            "slurm": {"sbatch": which("sbatch"), "partition": course.slurm.partition},
            "pr_runners": {"workflow": (root / PR_WORKFLOW).is_file()}}


def feedback_lines(found: GpuFeedback) -> list[str]:
    """doctor's "GPU feedback" section."""
    if found.get("error"):
        return [f"  --    {found['error']}"]
    chosen = found["set_up_for"]
    assert chosen is not None  # None only beside an error
    lines = [f"  this copy is set up for: {course_file.GPU_PATHS[chosen]}"]
    slurm, runners = found["slurm"], found["pr_runners"]
    mark: Callable[[str], str] = lambda path: " (this copy's)" if chosen == path else ""
    where = f"partition {slurm['partition']}" if slurm["partition"] else \
        "the cluster's default partition"
    if slurm["sbatch"]:
        lines.append(f"  ok    Slurm{mark('slurm')}: sbatch is here ({slurm['sbatch']}): "
                     f"python3 -m grader check NN --slurm runs the check on {where}")
    else:
        lines.append(f"  --    Slurm{mark('slurm')}: no sbatch here; on the cluster's login "
                     "node, python3 -m grader check NN --slurm runs the check on a GPU node")
    if runners["workflow"]:
        lines.append(f"  ok    pull requests{mark('pr-runners')}: {PR_WORKFLOW} (here: this is "
                     "the course's repository) grades the students' pull requests on the "
                     "course's GPU runners and comments the score")
    elif chosen == "pr-runners":
        lines.append("  ok    pull requests (this copy's): open one; the course's own repository "
                     "grades it on its GPU runners and comments the score (nothing in this "
                     "copy runs that grading)")
    else:
        lines.append("  --    pull requests: not the way this copy is set up for")
    return lines


def _older(version: str | None, than: tuple[int, ...]) -> bool:
    try:
        return tuple(int(x) for x in (version or "").split(".")[:len(than)]) < than
    except ValueError:
        return False


def _can_build(tc: Toolchain, json_version: str | None) -> bool:
    """cmake, nvcc, g++ and an nlohmann-json the build takes (the top-level CMakeLists.txt
    refuses to configure without one)."""
    return (all(tc.paths.get(k) for k in ("cmake", "nvcc", "g++")) and json_version is not None
            and not _older(json_version, JSON_MIN))


def _profiling_allowed() -> bool | None:
    """False when the driver restricts performance counters to admins; None if unknown."""
    try:
        text = open("/proc/driver/nvidia/params").read()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("RmProfilingAdminOnly"):
            return line.split(":")[-1].strip() == "0"
    return None
