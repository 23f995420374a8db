"""What Slurm's commands print, read for `check … --slurm` and `grade … --slurm`
(job_submit.py): a job's state from squeue (or from scontrol once squeue no longer lists it),
its place among the jobs waiting, each partition's GRES from sinfo and whether they hold a
GPU, and the progress line made of them. Functions of text: nothing here runs Slurm."""

from __future__ import annotations

import re
from dataclasses import dataclass

FINISHED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
            "PREEMPTED", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED")


@dataclass
class JobState:
    state: str  # PENDING, RUNNING, COMPLETING, COMPLETED, ...
    reason: str = ""  # why it is pending ("Priority", "Resources"); "" when none
    elapsed: str = ""  # squeue's run time, "0:00" while pending
    node: str = ""

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


SQUEUE_FORMAT = "%T|%r|%M|%N"


def parse_squeue(text: str) -> JobState | None:
    """`squeue -h -j ID -o '%T|%r|%M|%N'`: the job's state; None when squeue no longer
    lists it."""
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 2 and parts[0]:
            reason = parts[1] if parts[1] not in ("None", "(null)") else ""
            return JobState(parts[0], reason, parts[2] if len(parts) > 2 else "",
                            parts[3] if len(parts) > 3 and parts[3] != "(null)" else "")
    return None


def parse_scontrol_state(text: str) -> JobState | None:
    """`scontrol show job -o ID`: the state of a job squeue no longer lists."""
    state = re.search(r"\bJobState=(\S+)", text)
    if not state:
        return None
    reason = re.search(r"\bReason=(\S+)", text)
    return JobState(state[1], reason[1] if reason and reason[1] != "None" else "")


def queue_position(text: str, job_id: str) -> tuple[int, int] | None:
    """`squeue -h -t PENDING -o %i -S -p,i` (highest priority first): (the job's place,
    how many wait); None when the job is not among them."""
    ids = [line.strip().split("_")[0] for line in text.splitlines() if line.strip()]
    return (ids.index(job_id) + 1, len(ids)) if job_id in ids else None


def partition_gres(text: str) -> dict[str, list[str]]:
    """`sinfo -h -o '%P|%G'`: partition -> the GRES of its node groups (the default
    partition's '*' dropped)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "|" not in line:
            continue
        name, gres = line.strip().split("|", 1)
        out.setdefault(name.rstrip("*"), []).append(gres.strip())
    return out


def default_partition(text: str) -> str | None:
    """The partition sinfo marks with '*'."""
    for line in text.splitlines():
        name = line.split("|", 1)[0].strip()
        if name.endswith("*"):
            return name[:-1]
    return None


def has_gpu(gres: list[str]) -> bool:
    """Whether a node group offers a `gpu` GRES ("gpu:h100:4(S:0-1)", "gpu:2,shard:8")."""
    for text in gres:
        for item in re.split(r",(?![^(]*\))", text):
            if item.strip().split(":")[0] == "gpu":
                return True
    return False


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def describe(job_id: str, state: JobState, position: tuple[int, int] | None = None,
             partition: str | None = None) -> str:
    """The progress line's text."""
    text = f"slurm job {job_id}: {state.state.lower()}"
    if state.reason:
        text += f" ({state.reason})"
    if position:
        text += (f", {ordinal(position[0])} of {position[1]} waiting"
                 + (f" in partition {partition}" if partition else ""))
    if state.node and state.state != "PENDING":
        text += f" on {state.node}"
    return text
