"""A single-node Slurm cluster on localhost for tests, made from Debian's packages
(`slurm-wlm`, `munge`): its own munge key, socket and daemon, its own slurm.conf, state and
spool folders and ports, all under one temporary folder; the daemons are started in the
background and stopped by their process ids.

    with SlurmCluster(max_minutes=10) as cluster:
        job = cluster.sbatch(["--wrap", "hostname"])
        cluster.wait([job])

`SlurmCluster.unavailable()` says why no cluster can be started here (None when one can);
tests skip with that reason. The client tools find the cluster through `cluster.env`
(`SLURM_CONF`)."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sacct", "scontrol")
FINISHED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
            "PREEMPTED", "BOOT_FAIL", "DEADLINE")


def _tool(name: str) -> str | None:
    return shutil.which(name) or next(
        (str(p) for p in (Path("/usr/sbin") / name, Path("/sbin") / name) if p.is_file()), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmError(RuntimeError):
    pass


class SlurmCluster:
    """slurmctld + slurmd + munged on localhost, partition `debug` (the default)."""

    def __init__(self, max_minutes: int = 10, cpus: int | None = None,
                 partition: str = "debug") -> None:
        self.max_minutes = max_minutes
        self.cpus = cpus or os.cpu_count() or 1
        self.partition = partition
        self.dir: Path | None = None
        self.procs: dict[str, subprocess.Popen] = {}
        self.env: dict[str, str] = {}

    # ------------------------------------------------------------------ can it start?
    @staticmethod
    def unavailable() -> str | None:
        """Why a cluster cannot start here (None when it can)."""
        if os.name != "posix":
            return "Slurm needs a POSIX system"
        missing = [t for t in ("munged", "slurmctld", "slurmd", "sbatch", "squeue",
                               "scontrol") if not _tool(t)]
        if missing:
            return (f"Slurm or munge is not installed (missing {', '.join(missing)}; "
                    "apt-get install slurm-wlm munge)")
        if os.geteuid() != 0:
            return "slurmd must run as root to start jobs as their user (not root here)"
        return None

    # ------------------------------------------------------------------ start / stop
    def __enter__(self) -> "SlurmCluster":
        self.start()
        return self

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    def start(self, timeout: float = 60.0) -> None:
        why = self.unavailable()
        if why:
            raise SlurmError(why)
        self.dir = Path(tempfile.mkdtemp(prefix="cml-slurm-"))
        self.dir.chmod(0o755)
        d = self.dir
        for sub in ("munge", "state", "spool", "log", "run"):
            (d / sub).mkdir()
        (d / "munge").chmod(0o700)
        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        sock = d / "munge" / "munge.socket"
        self._spawn("munged", [_tool("munged"), "--foreground", "--force",
                               f"--socket={sock}", f"--key-file={key}",
                               f"--pid-file={d / 'run' / 'munged.pid'}",
                               f"--log-file={d / 'log' / 'munged.log'}",
                               f"--seed-file={d / 'munge' / 'munged.seed'}"])
        self._wait_for(lambda: sock.exists(), timeout, "munged to open its socket")
        conf = d / "slurm.conf"
        conf.write_text(self.config(sock))
        self.env = dict(os.environ, SLURM_CONF=str(conf))
        self._spawn("slurmctld", [_tool("slurmctld"), "-D", "-i", "-f", str(conf)])
        self._wait_for(self._controller_up, timeout, "slurmctld to answer")
        self._spawn("slurmd", [_tool("slurmd"), "-D", "-N", "localhost", "-f", str(conf)])
        self._wait_for(self._node_idle, timeout, "the node to become idle")

    def config(self, munge_socket: Path) -> str:
        d = self.dir
        user = pwd.getpwuid(os.geteuid()).pw_name
        mem = 1024
        try:
            kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())[1])
            mem = max(256, kb // 1024 // 2)
        except (OSError, TypeError, ValueError):
            pass
        return "\n".join([
            "ClusterName=cmltest",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            f"SlurmUser={user}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={munge_socket}",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool'}",
            f"SlurmctldPidFile={d / 'run' / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'run' / 'slurmd.pid'}",
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'log' / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=60",
            "MinJobAge=600",
            f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={mem} "
            "State=UNKNOWN",
            f"PartitionName={self.partition} Nodes=localhost Default=YES "
            f"MaxTime={self.max_minutes} State=UP",
            ""])

    def stop(self) -> None:
        """Stops the daemons by their process ids (slurmd, slurmctld, munged) and removes
        the cluster's folder."""
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for f in getattr(self, "_logs", []):
            f.close()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def _spawn(self, name: str, cmd: list) -> None:
        self._logs = getattr(self, "_logs", [])
        out = (self.dir / "log" / f"{name}.stdout").open("w")
        self._logs.append(out)
        self.procs[name] = subprocess.Popen([str(c) for c in cmd], stdout=out,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=self.env or None, start_new_session=True)

    def _wait_for(self, ready, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise SlurmError(f"{name} exited ({proc.returncode}) while waiting for "
                                     f"{what}:\n{self.logs()}")
            if ready():
                return
            time.sleep(0.5)
        raise SlurmError(f"timed out waiting for {what}:\n{self.logs()}")

    def logs(self, tail: int = 30) -> str:
        if self.dir is None:
            return ""
        out = []
        for path in sorted((self.dir / "log").iterdir()):
            lines = path.read_text(errors="replace").splitlines()[-tail:]
            if lines:
                out.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(out)

    # ------------------------------------------------------------------ client tools
    def run(self, tool: str, *args: str, check: bool = True, timeout: float = 60
            ) -> subprocess.CompletedProcess:
        proc = subprocess.run([_tool(tool) or tool, *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise SlurmError(f"{tool} {' '.join(args)}: {proc.stderr.strip() or proc.stdout}")
        return proc

    def _controller_up(self) -> bool:
        return self.run("scontrol", "ping", check=False, timeout=10).returncode == 0

    def _node_idle(self) -> bool:
        out = self.run("scontrol", "show", "node", "localhost", check=False, timeout=10).stdout
        return bool(re.search(r"State=IDLE", out))

    def sbatch(self, args: list[str], cwd: str | Path | None = None) -> str:
        """Submits a job; returns its id."""
        proc = subprocess.run([_tool("sbatch"), "--parsable", *args], env=self.env, cwd=cwd,
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise SlurmError(f"sbatch refused the job: {proc.stderr.strip()}")
        return proc.stdout.strip().split(";")[0]

    def states(self, job: str) -> dict[str, str]:
        """Array task (or job) id -> state, for the job's tasks the controller still knows."""
        out = self.run("scontrol", "show", "job", "-o", job, check=False).stdout
        states = {}
        for line in out.splitlines():
            jid = re.search(r"\bJobId=(\d+)", line)
            task = re.search(r"\bArrayTaskId=(\S+)", line)
            state = re.search(r"\bJobState=(\S+)", line)
            if jid and state:
                states[task[1] if task else jid[1]] = state[1]
        return states

    def wait(self, jobs: list[str], timeout: float = 600) -> dict[str, dict[str, str]]:
        """Waits until every task of `jobs` has finished; returns their states."""
        end = time.monotonic() + timeout
        while True:
            states = {job: self.states(job) for job in jobs}
            if all(s and all(v in FINISHED for v in s.values()) for s in states.values()):
                return states
            if time.monotonic() > end:
                raise SlurmError(f"jobs still running after {timeout:g} s: {states}\n"
                                 f"{self.logs()}")
            time.sleep(2)

    def partition_text(self) -> str:
        return self.run("scontrol", "show", "partition", self.partition).stdout

    def node_text(self) -> str:
        return self.run("scontrol", "show", "node", "localhost").stdout
