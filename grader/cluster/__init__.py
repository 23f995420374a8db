"""Slurm on the course's cluster: what a job asks for and whether a partition can give it
(job_options.py: the `#SBATCH` header, the partition checks, the batch's preparation job and
job array, used by `batch --slurm` too), and `check --slurm` / `grade --slurm`, the same
command run as one job from a login node whose file system the nodes share (job_submit.py;
what Slurm's commands print about it read by slurm_output.py)."""
