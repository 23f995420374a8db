"""What a batch asks Slurm for, and whether a partition can give it (grader/README.md,
"Grading a class"). Pure functions: text in, text out; nothing is submitted here.

`SlurmOptions` makes the `#SBATCH` header, the setup lines (`module load …`) and the
interpreter line; `check_partition` reads `scontrol show partition P` (and, when given,
`scontrol show node` for each of its nodes) and lists what the partition would refuse or
leave pending for ever; `prep_script` is the job that fills the reference cache once, and
`array_script` the job array that depends on it (`--dependency=afterok:<prep id>`), each
task writing the student's whole log to `<out>/<student>/grade.log`.
"""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

NO_GRES = ("", "none", "no", "0")
LOG_NAME = "grade.log"


@dataclass
class SlurmOptions:
    gres: str | None = "gpu:1"  # None or "none": no --gres line
    cpus: int = 4
    mem: str | None = None  # as sbatch takes it: "8G", "16000M", "8000" (MB)
    time: int = 45  # minutes per array task
    partition: str | None = None
    account: str | None = None
    setup_lines: list[str] = field(default_factory=list)  # e.g. "module load cuda/12.4"
    python: str = "python3"  # the interpreter on the nodes
    extra: list[str] = field(default_factory=list)  # more sbatch options, "--qos=short"

    @property
    def gres_line(self) -> str | None:
        gres = (self.gres or "").strip()
        return None if gres.lower() in NO_GRES else gres

    def header(self, job_name: str, output: str, array: str | None = None,
               dependency: str | None = None) -> list[str]:
        """The #SBATCH lines (without the #! line)."""
        lines = [f"#SBATCH --job-name={job_name}"]
        if array:
            lines.append(f"#SBATCH --array={array}")
        if self.partition:
            lines.append(f"#SBATCH --partition={self.partition}")
        if self.account:
            lines.append(f"#SBATCH --account={self.account}")
        if self.gres_line:
            lines.append(f"#SBATCH --gres={self.gres_line}")
        lines.append(f"#SBATCH --cpus-per-task={self.cpus}")
        if self.mem:
            lines.append(f"#SBATCH --mem={self.mem}")
        lines.append(f"#SBATCH --time={format_minutes(self.time)}")
        lines.append(f"#SBATCH --output={output}")
        if dependency:
            lines.append(f"#SBATCH --dependency={dependency}")
        lines += [f"#SBATCH {arg}" for arg in self.extra]
        return lines

    def prologue(self, repo: str | Path) -> list[str]:
        """After the header: strict mode, the setup lines, the checkout, the interpreter
        (`$PYTHON`, overridable from the environment)."""
        return ["set -euo pipefail", *self.setup_lines,
                f"cd {shlex.quote(str(repo))}",
                f'PYTHON="${{CML_PYTHON:-{self.python}}}"']


def format_minutes(minutes: int | float) -> str:
    minutes = max(1, int(-(-minutes // 1)))
    days, rest = divmod(minutes, 24 * 60)
    text = f"{rest // 60:d}:{rest % 60:02d}:00"
    return f"{days}-{text}" if days else text


def minutes_for(seconds: float) -> int:
    """Whole minutes covering `seconds` (at least 1)."""
    return max(1, int(-(-seconds // 60)))


# --------------------------------------------------------------------------- scripts

def prep_command(labs: list[str], cache: str | Path | None = None) -> str:
    """The command the prep job runs: fills the reference cache (the batch's) for the labs."""
    where = f" --cache {shlex.quote(str(cache))}" if cache else ""
    return ('"$PYTHON" -m grader cache fill --labs '
            + " ".join(shlex.quote(lab) for lab in labs) + where)


def prep_script(options: SlurmOptions, repo: str | Path, out_dir: str | Path,
                labs: list[str], cache: str | Path | None = None) -> str:
    """One job that builds the references once (the array depends on it)."""
    out_dir = Path(out_dir)
    lines = ["#!/bin/bash", "# Fills the reference cache once before the grading array runs.",
             *options.header("cml-prep", str(out_dir / "slurm" / "logs" / "prep_%j.out")),
             *options.prologue(repo), prep_command(labs, cache)]
    return "\n".join(lines) + "\n"


def array_script(options: SlurmOptions, repo: str | Path, out_dir: str | Path, count: int,
                 max_parallel: int | None = None, dependency: str | None = None,
                 indices: list[int] | None = None, force: bool = False) -> str:
    """A job array, task i grading submissions[i] of the plan (listed in
    `<out>/slurm/submissions.txt` as `index<TAB>student<TAB>path`); each task's whole output
    goes to `<out>/<student>/grade.log` as well as to Slurm's log. `indices`: those tasks
    alone (a regrade of chosen students), `force`: graded again even when unchanged."""
    out_dir = Path(out_dir)
    out = shlex.quote(str(out_dir))
    array = (",".join(map(str, indices)) if indices is not None else f"0-{count - 1}") \
        + (f"%{max_parallel}" if max_parallel else "")
    lines = ["#!/bin/bash",
             f"# Grades one submission of the batch in {out_dir} per array task.",
             f"# Then: python3 -m grader batch --collect {out_dir}",
             *options.header("cml-grade", str(out_dir / "slurm" / "logs" / "%A_%a.out"),
                             array=array, dependency=dependency),
             *options.prologue(repo),
             f"student=\"$(awk -F'\\t' -v i=\"$SLURM_ARRAY_TASK_ID\" '$1 == i {{print $2}}' "
             f"{out}/slurm/submissions.txt)\"",
             f'mkdir -p {out}/"$student"',
             # a build folder on the node, open to the user that runs student code
             'work="$(mktemp -d "${TMPDIR:-/tmp}/cml-grade-${SLURM_ARRAY_JOB_ID:-0}-'
             '${SLURM_ARRAY_TASK_ID}-XXXXXX")"',
             'chmod 711 "$work"',
             "trap 'rm -rf \"$work\"' EXIT",
             f'"$PYTHON" -m grader batch --task "$SLURM_ARRAY_TASK_ID" --out {out} '
             f'--work-dir "$work/build"{" --force" if force else ""} 2>&1 '
             f'| tee {out}/"$student"/{LOG_NAME}']
    return "\n".join(lines) + "\n"


def submit_line(prep_path: str | Path | None, array_path: str | Path) -> str:
    """The shell line that submits the prep job and the array after it."""
    if prep_path is None:
        return f"sbatch {shlex.quote(str(array_path))}"
    return (f"prep=$(sbatch --parsable {shlex.quote(str(prep_path))}) && "
            f"sbatch --dependency=afterok:${{prep%%;*}} {shlex.quote(str(array_path))}")


# --------------------------------------------------------------------------- checking

def parse_scontrol(text: str) -> list[dict[str, str]]:
    """`scontrol show partition|node` output: one dict per record (records are separated
    by blank lines, or are one line each with -o)."""
    records: list[dict[str, str]] = []
    blocks = re.split(r"\n(?=\S)", text.strip())  # a record starts at column 0
    for block in blocks:
        fields = dict(re.findall(r"(?:^|\s)([A-Za-z][\w/]*)=(\S*)", block))
        if fields:
            records.append(fields)
    return records


def duration_minutes(text: str) -> float | None:
    """Slurm's [days-]hours:minutes:seconds (or minutes, or UNLIMITED) in minutes; None
    for no limit."""
    text = (text or "").strip()
    if not text or text.upper() in ("UNLIMITED", "INFINITE", "NONE", "N/A"):
        return None
    days = 0
    if "-" in text:
        d, text = text.split("-", 1)
        days = int(d)
    parts = [int(p) for p in text.split(":")]
    if len(parts) == 1:
        h, m, s = 0, parts[0], 0  # plain minutes
    elif len(parts) == 2:
        h, m, s = 0, parts[0], parts[1]
    else:
        h, m, s = parts[-3:]
    return days * 1440 + h * 60 + m + s / 60


def memory_mb(text: str | None) -> float | None:
    """"8G", "16000M", "8000" (MB), "1T" in MB; None for UNLIMITED/empty."""
    if not text or text.upper() in ("UNLIMITED", "0"):
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)B?", text.strip().upper())
    if not match:
        raise ValueError(f"cannot read the memory {text!r} (use e.g. 8G or 16000M)")
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[match[2]]
    return float(match[1]) * scale


def _gres_request(gres: str) -> tuple[str, str | None, int]:
    """"gpu:1" -> (gpu, None, 1); "gpu:h100:2" -> (gpu, h100, 2); "gpu" -> (gpu, None, 1)."""
    parts = gres.split(",")[0].split(":")
    count = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
    kind = parts[1] if len(parts) == 3 or (len(parts) == 2 and not parts[1].isdigit()) \
        else None
    return parts[0], kind, count


def _node_gres(text: str) -> dict[tuple[str, str | None], int]:
    """A node's Gres= value ("gpu:h100:4(S:0-1),shard:8") -> {(name, type): count}."""
    out: dict[tuple[str, str | None], int] = {}
    if not text or text == "(null)":
        return out
    for item in re.split(r",(?![^(]*\))", text):
        item = re.sub(r"\(.*?\)", "", item)
        parts = item.split(":")
        count = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
        kind = parts[1] if len(parts) >= 3 else None
        out[(parts[0], kind)] = out.get((parts[0], kind), 0) + count
    return out


def check_partition(options: SlurmOptions, partition_text: str,
                    node_texts: list[str] | None = None) -> list[str]:
    """What the partition would refuse (or leave pending for ever), one sentence each;
    empty when the options fit. `partition_text` is `scontrol show partition P`;
    `node_texts` the `scontrol show node N` of its nodes (for CPUs, memory and GPUs per
    node; without them the partition's totals are used)."""
    records = parse_scontrol(partition_text)
    name = options.partition or "(default)"
    if not records or "PartitionName" not in records[0]:
        why = partition_text.strip().splitlines()[0] if partition_text.strip() else "no output"
        return [f"partition {name} not found ({why})"]
    part = records[0]
    name = part.get("PartitionName", name)
    errors = []
    state = part.get("State", "UP")
    if state != "UP":
        errors.append(f"partition {name} is {state}, not UP: jobs would wait there")
    limit = duration_minutes(part.get("MaxTime", ""))
    if limit is not None and options.time > limit:
        errors.append(f"time {options.time:g} min exceeds partition {name}'s MaxTime "
                      f"{limit:g} min (give a time of at most {limit:g} min, or another "
                      "partition)")
    nodes = [r for text in node_texts or [] for r in parse_scontrol(text) if "NodeName" in r]
    per_node = part.get("MaxCPUsPerNode", "UNLIMITED")
    if per_node.isdigit() and options.cpus > int(per_node):
        errors.append(f"{options.cpus} CPUs per task exceed partition {name}'s "
                      f"MaxCPUsPerNode {per_node}")
    most: int | None
    if nodes:
        most = max(int(n.get("CPUTot", n.get("CPUEfctv", "0")) or 0) for n in nodes)
    else:
        total, node_count = part.get("TotalCPUs", ""), part.get("TotalNodes", "")
        most = int(total) if total.isdigit() and node_count == "1" else None
    if most is not None and options.cpus > most:
        errors.append(f"{options.cpus} CPUs per task: no node of partition {name} has more "
                      f"than {most}")
    try:
        want = memory_mb(options.mem)
    except ValueError as err:
        errors.append(str(err))
        want = None
    if want is not None:
        cap = memory_mb(part.get("MaxMemPerNode"))
        if cap is not None and want > cap:
            errors.append(f"memory {options.mem} exceeds partition {name}'s MaxMemPerNode "
                          f"{part['MaxMemPerNode']} MB")
        if nodes:
            real = max(float(n.get("RealMemory", "0") or 0) for n in nodes)
            if real and want > real:
                errors.append(f"memory {options.mem}: no node of partition {name} has more "
                              f"than {real:g} MB")
    if options.account:
        allowed = part.get("AllowAccounts", "ALL")
        if allowed != "ALL" and options.account not in allowed.split(","):
            errors.append(f"account {options.account} may not use partition {name} "
                          f"(AllowAccounts={allowed})")
    gres = options.gres_line
    if gres:
        kind, model, count = _gres_request(gres)
        if nodes:
            best = 0
            for n in nodes:
                have = _node_gres(n.get("Gres", ""))
                best = max(best, sum(c for (k, m), c in have.items()
                                     if k == kind and (model is None or m == model)))
        else:
            tres = dict(re.findall(r"gres/([\w:]+)=(\d+)", part.get("TRES", "")))
            key = f"{kind}:{model}" if model else kind
            best = int(tres.get(key, 0))
        if best < count:
            where = "its nodes have" if nodes else "its TRES lists"
            errors.append(f"gres {gres}: partition {name} cannot give it ({where} "
                          f"{best or 'no'} {kind}{':' + model if model else ''}); pass "
                          "gres none for a partition without GPUs (GPU parts are then "
                          "not graded)")
    return errors


# --------------------------------------------------------------------------- the command line

def add_arguments(parser: argparse._ActionsContainer, one_job: bool = False) -> None:
    """The options `batch --slurm` lacks today (it has --slurm-time in seconds,
    --slurm-cpus, --slurm-parallel and --sbatch), on `parser` or one of its argument groups;
    `from_args` reads them all. `one_job`: the words of `check --slurm` and `grade --slurm`
    (cluster/job_submit.py), one job whose options left out are the course file's, checked
    before it is submitted."""
    if one_job:
        each, default = "for the job", "default: the course file's"
        no_check = "submit the job without checking its options against scontrol first"
    else:
        each, default = "per array task", ""
        no_check = "write the scripts without checking them against scontrol"
    parser.add_argument("--slurm-gres", default="gpu:1",
                        help=f"generic resources {each} ({default or 'default gpu:1'}; 'none' "
                             "for a partition without GPUs)")
    parser.add_argument("--slurm-mem", default=None,
                        help=f"memory {each}, e.g. 16G" + (f" ({default})" if default else ""))
    parser.add_argument("--slurm-partition", default=None,
                        help="the partition" + (f" ({default})" if default else ""))
    parser.add_argument("--slurm-account", default=None,
                        help="the account to charge" + (f" ({default})" if default else ""))
    parser.add_argument("--slurm-setup", action="append", default=[], metavar="LINE",
                        help="a shell line run before grading, e.g. 'module load cuda' "
                             "(repeatable)")
    parser.add_argument("--slurm-python", default="python3",
                        help=f"the interpreter on the nodes ({default or 'default python3'})")
    parser.add_argument("--slurm-no-check", action="store_true", help=no_check)


def from_args(args: argparse.Namespace, timeout: float) -> SlurmOptions:
    """SlurmOptions from the parsed command line (attributes missing: the defaults)."""
    seconds = getattr(args, "slurm_time", None) or timeout + 900
    return SlurmOptions(gres=getattr(args, "slurm_gres", "gpu:1"),
                        cpus=getattr(args, "slurm_cpus", 4),
                        mem=getattr(args, "slurm_mem", None), time=minutes_for(seconds),
                        partition=getattr(args, "slurm_partition", None),
                        account=getattr(args, "slurm_account", None),
                        setup_lines=list(getattr(args, "slurm_setup", []) or []),
                        python=getattr(args, "slurm_python", "python3"),
                        extra=list(getattr(args, "sbatch", []) or []))


def check_here(options: SlurmOptions,
               run: Callable[[list[str]], tuple[int, str]] | None = None
               ) -> tuple[list[str], str]:
    """Runs `scontrol show partition` (the named one, else the default) and `scontrol show
    node` of its nodes, and checks the options: (errors, note). Without scontrol (writing
    the scripts on a machine outside the cluster) nothing is checked and the note says so."""
    import shutil
    import subprocess

    def scontrol(*args: str) -> tuple[int, str]:
        if run is not None:
            return run(["scontrol", *args])
        if not shutil.which("scontrol"):
            raise FileNotFoundError
        proc = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=60)
        return proc.returncode, proc.stdout + proc.stderr

    try:
        if options.partition:
            rc, text = scontrol("show", "partition", options.partition)
        else:
            rc, every = scontrol("show", "partition")
            if rc != 0:  # no controller to ask (scripts written off the cluster)
                return [], (f"scontrol could not reach Slurm ({every.strip()[:200]}): the "
                            "options were not checked against a partition")
            default = [r for r in re.split(r"\n(?=\S)", every.strip())
                       if re.search(r"\bDefault=YES\b", r)]
            if not default:
                return ["no default partition: name one with --slurm-partition"], ""
            text = default[0]
        nodes = (parse_scontrol(text) or [{}])[0].get("Nodes", "")
        node_texts = [scontrol("show", "node", nodes)[1]] if nodes and nodes != "(null)" \
            else []
    except FileNotFoundError:
        return [], "scontrol is not here: the options were not checked against a partition"
    return check_partition(options, text, node_texts), ""
