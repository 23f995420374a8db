"""The batch as a Slurm job array: one array task per submission, each running the same task
command as the local batch, so the output folder is laid out the same."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ..atomic import write_atomic
from .plan import Plan


def slurm_script(plan: Plan, out_dir: Path, time_limit: float, cpus: int,
                 extra: list[str], max_parallel: int | None = None) -> str:
    """A job array with one task per submission; each runs the same task command as the
    local batch, so the output folder is laid out the same."""
    out_dir = Path(out_dir).resolve()
    n = len(plan.submissions)
    minutes = max(1, int(-(-time_limit // 60)))
    array = f"0-{n - 1}" + (f"%{max_parallel}" if max_parallel else "")
    lines = ["#!/bin/bash",
             "# Grades one submission of the batch in " + str(out_dir) + " per array task:",
             "# task i grades submissions[i] of batch.json (listed in submissions.txt).",
             "# Submit: sbatch " + str(out_dir / "slurm" / "grade.sbatch"),
             "# Then:   python3 -m grader batch --collect " + str(out_dir),
             "#SBATCH --job-name=cml-grade",
             f"#SBATCH --array={array}",
             "#SBATCH --gres=gpu:1",
             f"#SBATCH --cpus-per-task={cpus}",
             f"#SBATCH --time={minutes // 60:d}:{minutes % 60:02d}:00",
             f"#SBATCH --output={out_dir / 'slurm' / 'logs' / '%A_%a.out'}",
             *[f"#SBATCH {arg}" for arg in extra],
             "set -euo pipefail",
             f"cd {_sh_quote(plan.repo)}",
             # a build folder on the node, removed when the task ends
             'work="$(mktemp -d "${TMPDIR:-/tmp}/cml-grade-${SLURM_ARRAY_JOB_ID:-0}-'
             '${SLURM_ARRAY_TASK_ID}-XXXXXX")"',
             'chmod 755 "$work"',
             "trap 'rm -rf \"$work\"' EXIT",
             f"{_sh_quote(sys.executable)} -m grader batch --task \"$SLURM_ARRAY_TASK_ID\" "
             f"--out {_sh_quote(str(out_dir))} --work-dir \"$work/build\""]
    return "\n".join(lines) + "\n"


def _sh_quote(text: str) -> str:
    return shlex.quote(str(text))


def write_slurm(plan: Plan, out_dir: Path, time_limit: float, cpus: int, extra: list[str],
                max_parallel: int | None = None) -> Path:
    out_dir = Path(out_dir).resolve()
    (out_dir / "slurm" / "logs").mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "slurm" / "submissions.txt",
                  "".join(f"{i}\t{s.student}\t{s.path}\n"
                          for i, s in enumerate(plan.submissions)))
    path = write_atomic(out_dir / "slurm" / "grade.sbatch",
                         slurm_script(plan, out_dir, time_limit, cpus, extra, max_parallel))
    path.chmod(0o755)
    return path
