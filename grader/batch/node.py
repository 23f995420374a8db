"""Whether this machine (or Slurm node) may grade the plan: a GPU unless the plan says
`--no-gpu`, and every tool of `--require-tools`, so that the maximum a student can earn never
depends on the node a task ran on."""

from __future__ import annotations

import os

from ..tools import find_tool, query_gpus
from .plan import Plan


def node_problem(plan: Plan) -> str | None:
    """Why this machine cannot grade the plan, one sentence; None when it can."""
    host = os.uname().nodename
    if not plan.no_gpu:
        gpus, why = query_gpus()
        if not gpus:
            return (f"no CUDA GPU on {host} ({why or 'none found'}): the GPU parts could not "
                    "be graded and would count as lost points. Grade on a GPU node, or give "
                    "--no-gpu to grade without them (the gradebook then says 'provisional')")
    missing = [tool for tool in plan.require_tools if not find_tool(tool)]
    if missing:
        return (f"{', '.join(missing)} not found on {host} (--require-tools): the parts that "
                "need them would not be graded here while other nodes grade them")
    return None
