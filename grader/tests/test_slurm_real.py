"""A batch on a real Slurm: a single-node cluster on localhost (slurm_cluster.py) grades two
lab 01 submissions as a job array without GPUs, and the collected gradebook is the same,
byte for byte, as a local batch's of the same submissions. And `check 01 --slurm --no-gpu`,
run in a copy of the checkout, prints what a local `check 01 --no-gpu` prints and leaves the
same `.grader/last/result.json`, cold (a fresh build folder) and warm.

Skipped with the reason where Slurm cannot start (not installed, not root) or where the
toolchain or the solutions are missing. About two grades' time each way (a few minutes on
two cores)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

from grader.paths import ROOT
from grader.cluster.job_options import SlurmOptions, array_script, prep_script, submit_line

from . import needs

from .slurm_cluster import SlurmCluster

LAB = "01_warp_sizing"
STUDENT_FILE = f"labs/{LAB}/warp_sizing.cu"


def _missing() -> str:
    return needs.missing(solutions_of=LAB)


def _has_cache_fill() -> bool:
    """Whether this grader has `cache fill` (the prep job's command)."""
    return subprocess.run([sys.executable, "-m", "grader", "cache", "--help"], cwd=ROOT,
                          capture_output=True).returncode == 0


def _why_skip() -> str | None:
    if os.environ.get("CML_SKIP_SLURM"):
        return "CML_SKIP_SLURM is set"
    return SlurmCluster.unavailable() or (
        f"a real batch needs these, missing here: {_missing()}" if _missing() else None)


@unittest.skipIf(_why_skip(), f"no real Slurm test: {_why_skip()}")
class RealSlurmTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-slurm-test-"))
        self.tmp.chmod(0o755)  # the jailed student code (user nobody) passes through
        self.addCleanup(shutil.rmtree, self.tmp, True)
        subs = self.tmp / "subs"
        for student, source in (("ann", ROOT / "solutions" / LAB / "warp_sizing.cu"),
                                ("ben", ROOT / STUDENT_FILE)):  # the untouched skeleton
            (subs / student / STUDENT_FILE).parent.mkdir(parents=True)
            shutil.copy(source, subs / student / STUDENT_FILE)
        self.subs = subs
        self.env = dict(os.environ, NO_COLOR="1")

    def batch(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "grader", "batch", *args]
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                              env=self.env)

    def common(self, out: Path) -> list[str]:
        return [str(self.subs), "--out", str(out), "--labs", LAB[:2], "--no-gpu", "--seed",
                "5", "--gpu-lock", str(self.tmp / f"{out.name}.lock"), "--format", "markdown"]

    def test_a_job_array_without_gpus_gives_the_local_batch_gradebook(self):
        local = self.tmp / "local"
        proc = self.batch(*self.common(local), "-j", "1")  # one worker: one reference build
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

        cluster_out = self.tmp / "slurm"
        with SlurmCluster(max_minutes=10) as cluster:
            self.env = dict(cluster.env, NO_COLOR="1")
            # the stock options (gpu:1, 45 minutes) do not fit a small CPU partition: refused
            # before anything is written, each reason said
            proc = self.batch(*self.common(cluster_out), "--slurm")
            self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
            self.assertIn("exceeds partition debug's MaxTime 10 min", proc.stderr)
            self.assertIn("gres gpu:1", proc.stderr)
            self.assertFalse((cluster_out / "slurm" / "grade.sbatch").exists())
            # what `grader batch --slurm` writes, submitted as it says, without edits
            prep = "--slurm-prep" if _has_cache_fill() else "--no-slurm-prep"
            proc = self.batch(*self.common(cluster_out), "--slurm", "--slurm-gres", "none",
                              "--slurm-cpus", "1", "--slurm-time", "600", "--slurm-python",
                              sys.executable, prep)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            submit = next(line.split(":", 1)[1].strip() for line in proc.stdout.splitlines()
                          if line.startswith("submit with:"))
            done = subprocess.run(["bash", "-c", submit], env=cluster.env, cwd=self.tmp,
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            job = done.stdout.split()[-1]
            states = cluster.wait([job], timeout=1200)[job]
            logs = "\n".join(p.read_text(errors="replace") for p in
                             sorted((cluster_out / "slurm" / "logs").glob("*.out")))
            self.assertEqual(sorted(states.values()), ["COMPLETED", "COMPLETED"],
                             f"{states}\n{logs}\n{cluster.logs()}")

        proc = self.batch("--collect", str(cluster_out), timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        here = (local / "gradebook.csv").read_text()
        there = (cluster_out / "gradebook.csv").read_text()
        self.assertEqual(there, here)
        self.assertIn("ann,", here)
        rows = dict(line.split(",", 1) for line in here.splitlines()[1:])
        self.assertNotEqual(rows["ann"], rows["ben"])  # the solution and the skeleton differ
        for student in ("ann", "ben"):
            log = (cluster_out / student / "grade.log").read_text()
            self.assertIn("building", log)  # each task's whole log, per student
            self.assertIn("build output", log)  # with the compiler's whole output
            a = json.loads((local / student / "result.json").read_text())
            b = json.loads((cluster_out / student / "result.json").read_text())
            self.assertEqual([(t["name"], t["status"], t["points"]) for x in a["labs"]
                              for t in x["tests"]],
                             [(t["name"], t["status"], t["points"]) for x in b["labs"]
                              for t in x["tests"]])

    def test_check_slurm_prints_what_a_local_check_prints(self):
        repo = self.tmp / "repo"  # a copy: the checks write its .grader/
        shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(
            ".git", "build", "build-*", ".grader", "__pycache__"))
        cache = self.tmp / "cache"
        common = ["check", "01", "--no-gpu", "--seed", "5", "--cache", str(cache)]

        def check(*more: str, env=None) -> tuple[subprocess.CompletedProcess, float]:
            start = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "grader", *common, *more], cwd=repo,
                                  capture_output=True, text=True, timeout=900,
                                  env=env or self.env)
            return proc, time.monotonic() - start

        def tests(path: Path) -> list[tuple]:
            doc = json.loads(path.read_text())
            return [(lab["lab"], t["name"], t["status"], t["points"]) for lab in doc["labs"]
                    for t in lab["tests"]]

        local, _ = check()
        self.assertEqual(local.returncode, 0, local.stdout + local.stderr)
        last = repo / ".grader" / "last" / "result.json"
        here = tests(last)
        last.unlink()
        seconds = {}
        with SlurmCluster(max_minutes=10) as cluster:
            env = dict(cluster.env, NO_COLOR="1")
            # the partition has no GPU: refused without --no-gpu or --allow-no-gpu
            proc = subprocess.run([sys.executable, "-m", "grader", "check", "01", "--slurm",
                                   "--slurm-time", "600"], cwd=repo, capture_output=True,
                                  text=True, timeout=120, env=env)
            self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
            self.assertIn("partition debug has no GPU", proc.stderr)
            for run in ("cold", "warm"):
                proc, seconds[run] = check("--slurm", "--slurm-time", "600", "--slurm-mem",
                                           "1G", "--slurm-cpus", "1", "--slurm-python",
                                           sys.executable, env=env)
                self.assertEqual(proc.returncode, 0, f"{proc.stdout}\n{proc.stderr}\n"
                                                     f"{cluster.logs()}")
                self.assertEqual(_masked(proc.stdout), _masked(local.stdout))
                self.assertRegex(proc.stderr, r"slurm job \d+ submitted")
                self.assertIn("01_warp_sizing: building your code", proc.stderr)
                self.assertEqual(tests(last), here)
                last.unlink()
        self.assertIn("failed", local.stdout)  # the skeleton fails its host tests
        print(f"\ncheck 01 --slurm --no-gpu, submit to printed feedback: cold "
              f"{seconds['cold']:.1f} s, warm {seconds['warm']:.1f} s", file=sys.stderr)

    def test_the_array_waits_for_the_prep_job_and_logs_per_student(self):
        """The scripts' shell as Slurm runs it, with a stand-in interpreter ($CML_PYTHON):
        the prep job's "cache fill" leaves a mark, and every array task fails without it."""
        out = self.tmp / "out"
        (out / "slurm" / "logs").mkdir(parents=True)
        (out / "slurm" / "submissions.txt").write_text("0\tann\t/x\n1\tben\t/y\n")
        mark = self.tmp / "cache-filled"
        stub = self.tmp / "python"
        stub.write_text("#!/bin/bash\n"
                        f'if [ "$3" = cache ]; then sleep 3; touch {mark}; exit 0; fi\n'
                        f'[ -e {mark} ] || {{ echo "no cache" >&2; exit 1; }}\n'
                        'echo "graded task $5"\n')
        stub.chmod(0o755)
        options = SlurmOptions(gres="none", cpus=1, time=5, setup_lines=["echo setup ran"])
        prep = out / "slurm" / "prep.sbatch"
        prep.write_text(prep_script(options, ROOT, out, [LAB]))
        grade = out / "slurm" / "grade.sbatch"
        grade.write_text(array_script(options, ROOT, out, 2))
        with SlurmCluster(max_minutes=5) as cluster:
            env = dict(cluster.env, CML_PYTHON=str(stub))
            proc = subprocess.run(["bash", "-c", submit_line(prep, grade)], env=env,
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            array = proc.stdout.split()[-1]
            prep_id = str(int(array) - 1)
            states = cluster.wait([prep_id, array], timeout=120)
        self.assertEqual(states[prep_id], {prep_id: "COMPLETED"})
        self.assertEqual(sorted(states[array].values()), ["COMPLETED", "COMPLETED"],
                         (out / "slurm" / "logs").iterdir() and "\n".join(
                             p.read_text() for p in (out / "slurm" / "logs").iterdir()))
        for i, student in enumerate(("ann", "ben")):
            log = (out / student / "grade.log").read_text()
            self.assertEqual(log, f"graded task {i}\n")


def _masked(text: str) -> str:
    """Output with its durations masked ("12.3 s", "4.5 ms")."""
    return re.sub(r"\d+(?:\.\d+)?\s?(?:ms|us|s)\b", "<time>", text)


if __name__ == "__main__":
    unittest.main()
