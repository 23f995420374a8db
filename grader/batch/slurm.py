"""The batch as Slurm jobs: a prep job that fills the reference cache, then a job array with
one task per submission, each running the same task command as the local batch, so the
output folder is laid out the same. What is asked of Slurm (gres, CPUs, memory, time,
partition, account, setup lines, interpreter) is a `job_options.SlurmOptions`."""

from __future__ import annotations

from pathlib import Path

from ..atomic import write_atomic
from ..cluster.job_options import SlurmOptions, array_script, prep_script, submit_line
from .plan import Plan


def write_slurm(plan: Plan, out_dir: Path, options: SlurmOptions,
                max_parallel: int | None = None, prep: bool = True,
                indices: list[int] | None = None, force: bool = False
                ) -> tuple[Path | None, Path]:
    """Writes `slurm/submissions.txt`, `slurm/prep.sbatch` (unless `prep` is False) and
    `slurm/grade.sbatch`; returns (prep script or None, array script)."""
    out_dir = Path(out_dir).resolve()
    (out_dir / "slurm" / "logs").mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "slurm" / "submissions.txt",
                 "".join(f"{i}\t{s.student}\t{s.path}\n"
                         for i, s in enumerate(plan.submissions)))
    prep_path = None
    if prep:
        prep_path = write_atomic(out_dir / "slurm" / "prep.sbatch",
                                 prep_script(options, plan.repo, out_dir, plan.labs,
                                             plan.cache))
        prep_path.chmod(0o755)
    else:
        (out_dir / "slurm" / "prep.sbatch").unlink(missing_ok=True)
    path = write_atomic(out_dir / "slurm" / "grade.sbatch",
                        array_script(options, plan.repo, out_dir, len(plan.submissions),
                                     max_parallel, indices=indices, force=force))
    path.chmod(0o755)
    return prep_path, path


__all__ = ["write_slurm", "submit_line", "SlurmOptions"]
