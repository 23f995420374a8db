"""Slurm options: the #SBATCH header, the prep job and the array after it, and the check of
the options against `scontrol show partition/node` (canned text from Slurm 22.05)."""

from __future__ import annotations

import unittest

from grader.cluster.job_options import (SlurmOptions, array_script, check_partition,
                                        duration_minutes, format_minutes, memory_mb, parse_scontrol,
                                        prep_script, submit_line)

DEBUG = """PartitionName=debug
   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL
   AllocNodes=ALL Default=YES QoS=N/A
   DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO
   MaxNodes=UNLIMITED MaxTime=00:30:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED
   Nodes=localhost
   PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO
   OverTimeLimit=NONE PreemptMode=OFF
   State=UP TotalCPUs=2 TotalNodes=1 SelectTypeParameters=NONE
   JobDefaults=(null)
   DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED
   TRES=cpu=2,mem=12052M,node=1,billing=2
"""

GPU = """PartitionName=gpu
   AllowGroups=ALL AllowAccounts=course1,staff AllowQos=ALL
   MaxNodes=UNLIMITED MaxTime=1-00:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=16
   Nodes=g[01-02]
   State=UP TotalCPUs=128 TotalNodes=2 SelectTypeParameters=NONE
   DefMemPerNode=UNLIMITED MaxMemPerNode=64000
   TRES=cpu=128,mem=1000G,node=2,billing=128,gres/gpu=8,gres/gpu:h100=8
"""

NODE_CPU = """NodeName=localhost Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=2.72
   Gres=(null)
   NodeAddr=127.0.0.1 NodeHostName=localhost Version=22.05.8
   OS=Linux 6.18.44 #1 SMP PREEMPT_DYNAMIC @0
   RealMemory=12052 AllocMem=0 FreeMem=21321 Sockets=2 Boards=1
   State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
"""

NODE_GPU = """NodeName=g01 Arch=x86_64 CoresPerSocket=32
   CPUAlloc=0 CPUEfctv=64 CPUTot=64 CPULoad=0.10
   Gres=gpu:h100:4(S:0-1),shard:8
   RealMemory=500000 AllocMem=0 FreeMem=400000 Sockets=2 Boards=1
   State=IDLE ThreadsPerCore=1
"""


class HeaderTest(unittest.TestCase):
    def test_defaults_ask_for_one_gpu_four_cpus_and_45_minutes(self):
        lines = SlurmOptions().header("cml-grade", "/o/%A_%a.out", array="0-2%2")
        self.assertEqual(lines, ["#SBATCH --job-name=cml-grade", "#SBATCH --array=0-2%2",
                                 "#SBATCH --gres=gpu:1", "#SBATCH --cpus-per-task=4",
                                 "#SBATCH --time=0:45:00", "#SBATCH --output=/o/%A_%a.out"])

    def test_every_option_has_its_line_and_none_drops_the_gres(self):
        opts = SlurmOptions(gres="none", cpus=2, mem="8G", time=90, partition="debug",
                            account="cs101", extra=["--qos=short"])
        lines = opts.header("j", "/o", dependency="afterok:12")
        self.assertFalse(any("--gres" in line for line in lines))
        for line in ("#SBATCH --partition=debug", "#SBATCH --account=cs101",
                     "#SBATCH --mem=8G", "#SBATCH --time=1:30:00", "#SBATCH --cpus-per-task=2",
                     "#SBATCH --dependency=afterok:12", "#SBATCH --qos=short"):
            self.assertIn(line, lines)
        self.assertIsNone(SlurmOptions(gres=None).gres_line)
        self.assertEqual(SlurmOptions(gres=" gpu:h100:2 ").gres_line, "gpu:h100:2")

    def test_times(self):
        self.assertEqual(format_minutes(45), "0:45:00")
        self.assertEqual(format_minutes(0.2), "0:01:00")
        self.assertEqual(format_minutes(1500), "1-1:00:00")
        self.assertIsNone(duration_minutes("UNLIMITED"))
        self.assertEqual(duration_minutes("00:30:00"), 30)
        self.assertEqual(duration_minutes("1-00:00:00"), 1440)
        self.assertEqual(duration_minutes("45"), 45)
        self.assertEqual(memory_mb("8G"), 8192)
        self.assertEqual(memory_mb("16000"), 16000)
        with self.assertRaises(ValueError):
            memory_mb("lots")


class ScriptTest(unittest.TestCase):
    def test_setup_lines_and_interpreter_come_before_the_task(self):
        opts = SlurmOptions(gres=None, setup_lines=["module load cuda/12.4"],
                            python="/opt/py/bin/python3")
        text = array_script(opts, "/shared/course", "/shared/out", 3, max_parallel=2,
                            dependency="afterok:41")
        lines = text.splitlines()
        self.assertEqual(lines[0], "#!/bin/bash")
        self.assertIn("#SBATCH --array=0-2%2", lines)
        self.assertIn("#SBATCH --dependency=afterok:41", lines)
        order = [lines.index(x) for x in ("set -euo pipefail", "module load cuda/12.4",
                                          "cd /shared/course",
                                          'PYTHON="${CML_PYTHON:-/opt/py/bin/python3}"')]
        self.assertEqual(order, sorted(order))
        task = lines[-1]
        self.assertTrue(task.startswith('"$PYTHON" -m grader batch --task '
                                        '"$SLURM_ARRAY_TASK_ID" --out /shared/out'), task)
        self.assertTrue(task.endswith('| tee /shared/out/"$student"/grade.log'), task)
        self.assertIn("/shared/out/slurm/submissions.txt", text)
        self.assertIn('/shared/out/"$student"/grade.log', task)

    def test_the_prep_job_fills_the_cache_and_the_array_waits_for_it(self):
        text = prep_script(SlurmOptions(), "/c", "/o", ["01_warp_sizing", "04_tiled_matmul"])
        self.assertIn('"$PYTHON" -m grader cache fill --labs 01_warp_sizing 04_tiled_matmul',
                      text)
        self.assertIn("#SBATCH --job-name=cml-prep", text)
        self.assertEqual(submit_line("/o/slurm/prep.sbatch", "/o/slurm/grade.sbatch"),
                         "prep=$(sbatch --parsable /o/slurm/prep.sbatch) && "
                         "sbatch --dependency=afterok:${prep%%;*} /o/slurm/grade.sbatch")
        self.assertEqual(submit_line(None, "/o/g.sbatch"), "sbatch /o/g.sbatch")


class CheckTest(unittest.TestCase):
    def test_parse(self):
        rec = parse_scontrol(DEBUG)
        self.assertEqual(len(rec), 1)
        self.assertEqual((rec[0]["PartitionName"], rec[0]["MaxTime"]), ("debug", "00:30:00"))
        self.assertEqual(len(parse_scontrol(NODE_CPU + "\n" + NODE_GPU)), 2)
        one_line = "PartitionName=a MaxTime=5 State=UP\nPartitionName=b MaxTime=9 State=UP\n"
        self.assertEqual([r["MaxTime"] for r in parse_scontrol(one_line)], ["5", "9"])

    def test_the_defaults_do_not_fit_a_small_cpu_partition(self):
        errors = check_partition(SlurmOptions(partition="debug"), DEBUG, [NODE_CPU])
        text = "\n".join(errors)
        self.assertIn("time 45 min exceeds partition debug's MaxTime 30 min", text)
        self.assertIn("4 CPUs per task: no node of partition debug has more than 2", text)
        self.assertIn("gres gpu:1: partition debug cannot give it", text)
        self.assertEqual(len(errors), 3)

    def test_options_that_fit_give_no_error(self):
        opts = SlurmOptions(gres="none", cpus=2, time=20, mem="4G", partition="debug")
        self.assertEqual(check_partition(opts, DEBUG, [NODE_CPU]), [])
        self.assertEqual(check_partition(opts, DEBUG), [])  # the totals of a 1-node partition

    def test_gpus_from_nodes_or_from_the_partition_tres(self):
        opts = SlurmOptions(gres="gpu:1", cpus=8, time=60, account="course1")
        self.assertEqual(check_partition(opts, GPU, [NODE_GPU]), [])
        self.assertEqual(check_partition(opts, GPU), [])
        opts.gres = "gpu:h100:4"
        self.assertEqual(check_partition(opts, GPU, [NODE_GPU]), [])
        opts.gres = "gpu:a100:1"
        self.assertIn("cannot give it", check_partition(opts, GPU, [NODE_GPU])[0])
        opts.gres = "gpu:5"
        self.assertIn("4 gpu", check_partition(opts, GPU, [NODE_GPU])[0])

    def test_account_cpus_memory_state_and_a_missing_partition(self):
        opts = SlurmOptions(cpus=32, mem="100G", time=60, account="other")
        text = "\n".join(check_partition(opts, GPU.replace("State=UP", "State=DOWN")))
        for part in ("account other may not use partition gpu", "MaxCPUsPerNode 16",
                     "memory 100G exceeds partition gpu's MaxMemPerNode 64000 MB",
                     "partition gpu is DOWN"):
            self.assertIn(part, text)
        self.assertEqual(check_partition(SlurmOptions(partition="nope"),
                                         "Partition nope not found\n"),
                         ["partition nope not found (Partition nope not found)"])


if __name__ == "__main__":
    unittest.main()


class CommandLineTest(unittest.TestCase):
    def test_from_args_and_check_here_with_a_fake_scontrol(self):
        import argparse

        from grader.cluster import job_options
        p = argparse.ArgumentParser()
        p.add_argument("--slurm-time", type=float)
        p.add_argument("--slurm-cpus", type=int, default=4)
        p.add_argument("--sbatch", action="append", default=[])
        job_options.add_arguments(p)
        args = p.parse_args(["--slurm-gres", "none", "--slurm-cpus", "2", "--slurm-setup",
                             "module load cuda", "--sbatch=--qos=x"])
        opts = job_options.from_args(args, timeout=600)
        self.assertEqual((opts.gres_line, opts.cpus, opts.time, opts.setup_lines, opts.extra),
                         (None, 2, 25, ["module load cuda"], ["--qos=x"]))
        calls = []

        def fake(cmd):
            calls.append(cmd[1:])
            return 0, DEBUG if cmd[2] == "partition" else NODE_CPU

        self.assertEqual(job_options.check_here(opts, run=fake), ([], ""))
        self.assertEqual(calls, [["show", "partition"], ["show", "node", "localhost"]])
        opts.time = 60
        errors, _ = job_options.check_here(opts, run=fake)
        self.assertIn("MaxTime 30 min", errors[0])
