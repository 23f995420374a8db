"""`check --slurm` and `grade --slurm` (cluster/job_submit.py) without a cluster: the job's command
line and script, reading squeue and sinfo, the course file, and whole runs against stand-in
`sbatch`, `squeue`, `sinfo`, `scontrol` and `scancel` scripts on the PATH (the stand-in
sbatch runs the job script itself, with a stand-in interpreter in place of the grader).
The real Slurm run is test_slurm_real's."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import unittest
from pathlib import Path
from unittest import mock

from grader.course import course_file
from grader.cluster import job_submit, slurm_output
from grader.__main__ import build_parser
from grader.cluster.job_options import SlurmOptions

COURSE = """
[feedback]
gpu_path = "slurm"
[slurm]
partition = "gpu"
gres = "gpu:1"
cpus = 2
mem = "8G"
time_minutes = 20
setup = ["module load cuda"]
sbatch = ["--qos=short"]
"""

# The stand-in tools. $FAKE is their folder: `state` is what squeue says of the job,
# `queue` the pending ids, `gres` what sinfo prints, `log` every call.
SBATCH = r"""#!/bin/bash
echo "sbatch $*" >> "$FAKE/log"
script="${@: -1}"
cp "$script" "$FAKE/submitted.sbatch"
if [ -n "${FAKE_RUN:-}" ]; then
  ( sleep "${FAKE_DELAY:-0}"; echo "RUNNING|None|0:01|node7" > "$FAKE/state"
    bash "$script" > "$FAKE/job.out" 2>&1; : > "$FAKE/state" ) > /dev/null 2>&1 &
fi
echo "4242;cluster"
"""
SQUEUE = r"""#!/bin/bash
echo "squeue $*" >> "$FAKE/log"
case " $* " in
  *" PENDING "*) cat "$FAKE/queue" ;;
  *) cat "$FAKE/state" ;;
esac
"""
SINFO = r"""#!/bin/bash
echo "sinfo $*" >> "$FAKE/log"
cat "$FAKE/gres"
"""
SCONTROL = r"""#!/bin/bash
echo "scontrol $*" >> "$FAKE/log"
if [ "$1 $2" = "show partition" ]; then
  echo "PartitionName=gpu"
  echo "   Default=NO MaxTime=00:10:00 State=UP TotalCPUs=8 TotalNodes=1 Nodes=(null)"
  echo "   TRES=cpu=8,mem=64000M,node=1,gres/gpu=2"
elif [ "$1 $2" = "show job" ]; then
  echo "JobId=$4 JobState=${FAKE_FINAL:-COMPLETED} Reason=None"
fi
"""
SCANCEL = r"""#!/bin/bash
echo "scancel $*" >> "$FAKE/log"
"""
MODULE = r"""#!/bin/bash
echo "module $*" >> "$FAKE/log"
"""
# The grader as the job runs it: prints, writes its results where --results says, exits 3.
PYTHON = r"""#!/bin/bash
echo "args: $*"
echo "[   0.1 s] building lab 01" >&2
sleep 0.5  # running long enough for squeue to say so
while [ $# -gt 0 ]; do
  if [ "$1" = --results ]; then mkdir -p "$2"; echo '{"seed": 5}' > "$2/result.json"; fi
  shift
done
echo "grader: a problem of the grader's" >&2
exit 3
"""


class PureTest(unittest.TestCase):
    def test_squeue_and_scontrol_states(self):
        state = slurm_output.parse_squeue("PENDING|Priority|0:00|\n")
        self.assertEqual((state.state, state.reason, state.node), ("PENDING", "Priority", ""))
        state = slurm_output.parse_squeue("RUNNING|None|1:02|gpu07\n")
        self.assertEqual((state.state, state.reason, state.elapsed, state.node),
                         ("RUNNING", "", "1:02", "gpu07"))
        self.assertFalse(state.finished)
        self.assertIsNone(slurm_output.parse_squeue(""))
        self.assertTrue(slurm_output.parse_squeue("TIMEOUT|None|20:00|gpu07").finished)
        done = slurm_output.parse_scontrol_state("JobId=7 JobName=x JobState=CANCELLED "
                                               "Reason=None Dependency=(null)")
        self.assertEqual((done.state, done.reason, done.finished), ("CANCELLED", "", True))
        self.assertIsNone(slurm_output.parse_scontrol_state("slurm_load_jobs error: Invalid"))

    def test_queue_position_and_the_progress_text(self):
        queue = "40\n4242\n4243_[1-3]\n"
        self.assertEqual(slurm_output.queue_position(queue, "4242"), (2, 3))
        self.assertEqual(slurm_output.queue_position(queue, "4243"), (3, 3))
        self.assertIsNone(slurm_output.queue_position(queue, "99"))
        pending = slurm_output.JobState("PENDING", "Priority")
        self.assertEqual(slurm_output.describe("4242", pending, (2, 3), "gpu"),
                         "slurm job 4242: pending (Priority), 2nd of 3 waiting in partition gpu")
        running = slurm_output.JobState("RUNNING", "", "0:05", "gpu07")
        self.assertEqual(slurm_output.describe("4242", running), "slurm job 4242: running on gpu07")
        self.assertEqual([slurm_output.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 112)],
                         ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "112th"])

    def test_sinfo_gres(self):
        text = "debug*|(null)\ngpu|gpu:h100:4(S:0-1)\ngpu|(null)\nmixed|shard:8,gpu:2\n"
        table = slurm_output.partition_gres(text)
        self.assertEqual(slurm_output.default_partition(text), "debug")
        self.assertEqual(sorted(table), ["debug", "gpu", "mixed"])
        self.assertFalse(slurm_output.has_gpu(table["debug"]))
        self.assertTrue(slurm_output.has_gpu(table["gpu"]))
        self.assertTrue(slurm_output.has_gpu(table["mixed"]))
        self.assertFalse(slurm_output.has_gpu(["gpus_not:1", "shard:8"]))
        self.assertIsNone(slurm_output.default_partition("gpu|gpu:1\n"))

    def test_the_jobs_command_line_is_the_command_without_slurm(self):
        args = build_parser().parse_args(
            ["check", "01", "4", "--seed", "5", "--no-gpu", "--html", "--slurm",
             "--slurm-partition", "gpu", "--slurm-time", "600", "--sbatch=--qos=x",
             "--cache", "rel/cache"])
        argv = job_submit.job_argv("check", args, Path("/j/results"), Path("/j/work"))
        self.assertEqual(argv, ["check", "01", "4", "--seed", "5", "--no-gpu", "--cache",
                                str(Path("rel/cache").resolve()), "--html", "--results",
                                "/j/results", "--work-dir", "/j/work"])
        again = build_parser().parse_args(argv)  # the job's own command parses, not --slurm
        self.assertFalse(again.slurm)
        self.assertEqual((again.results, again.work_dir), (Path("/j/results"), Path("/j/work")))
        args = build_parser().parse_args(["grade", "subs/ann", "--labs", "01", "--out", "o",
                                          "--format", "", "--no-cache", "--slurm", "-q"])
        argv = job_submit.job_argv("grade", args)
        self.assertEqual(argv, ["grade", str(Path("subs/ann").resolve()), "--out",
                                str(Path("o").resolve()), "--format=", "--labs", "01",
                                "--no-cache", "-q"])
        self.assertEqual(build_parser().parse_args(argv).format, [])

    def test_options_come_from_the_course_file_unless_given(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "grader").mkdir()
            (Path(tmp) / "grader" / "course.toml").write_text(COURSE)
            c = course_file.load(Path(tmp))
        self.assertEqual(c.gpu_path, "slurm")
        args = build_parser().parse_args(["check", "01", "--slurm"])
        o = job_submit.options_from(args, c)
        self.assertEqual((o.partition, o.gres_line, o.cpus, o.mem, o.time, o.setup_lines,
                          o.python, o.extra),
                         ("gpu", "gpu:1", 2, "8G", 20, ["module load cuda"], "python3",
                          ["--qos=short"]))
        args = build_parser().parse_args(
            ["check", "01", "--slurm", "--slurm-partition", "a100", "--slurm-time", "300",
             "--slurm-cpus", "8", "--slurm-gres", "gpu:a100:1", "--slurm-python", "py3",
             "--sbatch=--qos=long", "--slurm-setup", "echo hi"])
        o = job_submit.options_from(args, c)
        self.assertEqual((o.partition, o.gres_line, o.cpus, o.time, o.python, o.extra,
                          o.setup_lines),
                         ("a100", "gpu:a100:1", 8, 5, "py3", ["--qos=short", "--qos=long"],
                          ["module load cuda", "echo hi"]))
        default = job_submit.options_from(build_parser().parse_args(["check", "1", "--slurm"]),
                                          course_file.Course())
        self.assertEqual((default.partition, default.gres_line, default.time), (None, "gpu:1", 30))

    def test_a_course_file_with_mistakes_is_refused(self):
        for text, said in (('[feedback]\ngpu_path = "modal"\n', "gpu_path"),
                           ('[slurm]\npartitions = "gpu"\n', "unknown key"),
                           ('[slurm]\nsetup = "module load cuda"\n', "list of strings"),
                           ('[slurm]\ncpus = "many"\n', "[slurm]")):
            with tempfile.TemporaryDirectory() as tmp:
                (Path(tmp) / "grader").mkdir()
                (Path(tmp) / "grader" / "course.toml").write_text(text)
                with self.assertRaises(course_file.CourseError) as err:
                    course_file.load(Path(tmp))
                self.assertIn(said, str(err.exception))

    def test_the_shipped_course_file_reads(self):
        c = course_file.load()
        self.assertIn(c.gpu_path, course_file.GPU_PATHS)
        self.assertIsNotNone(c.path)

    def test_job_script(self):
        options = SlurmOptions(gres="gpu:1", cpus=2, time=20, partition="gpu",
                               setup_lines=["module load cuda"], python="python3")
        text = job_submit.job_script(options, "/home/ann/labs", "/home/ann/labs/.grader/slurm/j",
                                     ["check", "01", "--seed", "5"], lock="/l/work.lock",
                                     color=True)
        lines = text.splitlines()
        self.assertEqual(lines[0], "#!/bin/bash")
        for line in ("#SBATCH --job-name=cml-check", "#SBATCH --partition=gpu",
                     "#SBATCH --gres=gpu:1", "#SBATCH --cpus-per-task=2",
                     "#SBATCH --time=0:20:00",
                     "#SBATCH --output=/home/ann/labs/.grader/slurm/j/slurm.out",
                     "module load cuda", "cd /home/ann/labs", "export CLICOLOR_FORCE=1",
                     'flock /l/work.lock "$PYTHON" -m grader check 01 --seed 5 '
                     ">/home/ann/labs/.grader/slurm/j/stdout "
                     "2>/home/ann/labs/.grader/slurm/j/stderr || rc=$?"):
            self.assertIn(line, lines)
        self.assertEqual(lines[-1], "mv /home/ann/labs/.grader/slurm/j/rc.part "
                                    "/home/ann/labs/.grader/slurm/j/rc")  # rc comes last
        plain = job_submit.job_script(SlurmOptions(gres="none"), "/r", "/r/j", ["grade", "x"])
        self.assertNotIn("--gres", plain)
        self.assertNotIn("CLICOLOR_FORCE", plain)
        self.assertNotIn("flock", plain)


class WaitTest(unittest.TestCase):
    """_wait's grace: a job that leaves the queue gets GRACE_S for its rc file to show,
    counted from when it left, not from an earlier poll that missed it."""

    def test_a_job_missed_by_the_first_poll_still_gets_its_grace(self):
        with tempfile.TemporaryDirectory() as tmp:
            job_dir = Path(tmp)
            clock = iter(range(1000, 10_000, 20))  # 20 s between any two readings
            # not in the queue yet, running for two polls, then gone; its rc shows at the
            # next poll (a shared file system's delay)
            states = iter(["", "RUNNING|None|0:01|node7\n", "RUNNING|None|0:41|node7\n", ""])

            def tool(name, *args, **kw):
                if name == "squeue":
                    out = next(states, "")
                    if not out and (job_dir / "seen").exists():
                        (job_dir / "rc").write_text("3\n")
                    if out:
                        (job_dir / "seen").touch()
                    return subprocess.CompletedProcess([name], 0, out, "")
                return subprocess.CompletedProcess([name], 0, "JobId=1 JobState=COMPLETED\n", "")

            with mock.patch.object(job_submit, "_tool", tool), \
                    mock.patch.object(job_submit.time, "monotonic", lambda: next(clock)), \
                    mock.patch.object(job_submit.time, "sleep", lambda s: None):
                self.assertEqual(job_submit._wait("1", job_dir, None, lambda text: None), 3)


class ColourTest(unittest.TestCase):
    def test_a_job_is_told_to_colour_its_table_by_clicolor_force(self):
        from grader.exports.table import use_color
        for env, want in (({}, False), ({"CLICOLOR_FORCE": "1"}, True),
                          ({"CLICOLOR_FORCE": "0"}, False),
                          ({"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, False)):
            clean = {k: v for k, v in os.environ.items()
                     if k not in ("NO_COLOR", "CLICOLOR_FORCE")}
            with mock.patch.dict(os.environ, {**clean, **env}, clear=True), \
                    mock.patch("sys.stdout", io.StringIO()):  # not a terminal
                self.assertIs(use_color(None), want, env)


class FakeSlurmTest(unittest.TestCase):
    """Whole runs of run_job against the stand-in tools."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-fake-slurm-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.fake = self.tmp / "bin"
        self.fake.mkdir()
        for name, text in (("sbatch", SBATCH), ("squeue", SQUEUE), ("sinfo", SINFO),
                           ("scontrol", SCONTROL), ("scancel", SCANCEL), ("module", MODULE),
                           ("python", PYTHON)):
            (self.fake / name).write_text(text)
            (self.fake / name).chmod(0o755)
        (self.fake / "state").write_text("PENDING|Priority|0:00|\n")
        (self.fake / "queue").write_text("40\n4242\n")
        (self.fake / "gres").write_text("debug*|(null)\ngpu|gpu:h100:4(S:0-1)\n")
        self.root = self.tmp / "repo"
        (self.root / "grader").mkdir(parents=True)
        (self.root / "grader" / "course.toml").write_text(COURSE)
        self.env = {"PATH": f"{self.fake}:{os.environ['PATH']}", "FAKE": str(self.fake),
                    "CML_PYTHON": str(self.fake / "python"), "NO_COLOR": "1"}
        for name, value in (("POLL_S", 0.05), ("GRACE_S", 0.5), ("REPEAT_S", 60.0)):
            patcher = mock.patch.object(job_submit, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)

    def run_job(self, argv: list[str], command: str = "check", **env: str):
        args = build_parser().parse_args(argv)
        out, err = io.StringIO(), io.StringIO()
        with mock.patch.dict(os.environ, {**self.env, **env}), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = job_submit.run_job(command, args, self.root, self.root / ".grader" / "last")
        return status, out.getvalue(), err.getvalue()

    def log(self) -> str:
        path = self.fake / "log"
        return path.read_text() if path.exists() else ""

    def test_a_check_runs_waits_prints_and_copies_the_results(self):
        status, out, err = self.run_job(["check", "01", "--seed", "5", "--slurm",
                                         "--slurm-no-check"], FAKE_RUN="1", FAKE_DELAY="0.5")
        self.assertEqual(status, 3, err)  # the job's exit status
        self.assertTrue(out.startswith("args: -m grader check 01 --seed 5 --results "), out)
        self.assertIn("--work-dir", out)
        self.assertIn("slurm job 4242 submitted", err)
        self.assertIn("slurm job 4242: pending (Priority), 2nd of 2 waiting in partition gpu",
                      err)
        self.assertIn("slurm job 4242: running on node7", err)
        self.assertIn("[   0.1 s] building lab 01", err)  # the job's own progress lines
        self.assertIn("grader: a problem of the grader's", err)
        self.assertEqual((self.root / ".grader" / "last" / "result.json").read_text(),
                         '{"seed": 5}\n')
        self.assertEqual([p.name for p in (self.root / ".grader" / "slurm").iterdir()],
                         ["work.lock"])  # the job's folder is gone, the lock stays
        script = (self.fake / "submitted.sbatch").read_text()
        for line in ("#SBATCH --partition=gpu", "#SBATCH --gres=gpu:1", "#SBATCH --qos=short",
                     "#SBATCH --mem=8G", "#SBATCH --time=0:20:00", "module load cuda"):
            self.assertIn(line, script.splitlines())
        self.assertIn("sbatch --parsable", self.log())
        self.assertIn("module load cuda", self.log())  # the course's setup line ran first

    def test_a_partition_without_gpus_is_refused_unless_asked(self):
        (self.fake / "gres").write_text("debug*|(null)\ngpu|(null)\n")
        status, out, err = self.run_job(["check", "01", "--slurm", "--slurm-no-check"])
        self.assertEqual(status, 1)
        self.assertIn("partition gpu has no GPU (sinfo's GRES: (null))", err)
        self.assertIn("nothing submitted", err)
        self.assertNotIn("sbatch", self.log())
        status, out, err = self.run_job(["check", "01", "--slurm", "--slurm-no-check",
                                         "--allow-no-gpu"], FAKE_RUN="1")
        self.assertEqual(status, 3, err)
        self.assertIn("partition gpu has no GPU: the GPU parts are not graded", err)
        self.assertNotIn("--gres", (self.fake / "submitted.sbatch").read_text())
        (self.fake / "submitted.sbatch").unlink()
        status, out, err = self.run_job(["check", "01", "--slurm", "--slurm-no-check",
                                         "--no-gpu"], FAKE_RUN="1")
        self.assertEqual(status, 3, err)
        self.assertIn("--no-gpu", out)
        self.assertNotIn("--gres", (self.fake / "submitted.sbatch").read_text())

    def test_an_unknown_partition_and_the_partitions_limits_are_said(self):
        status, _, err = self.run_job(["check", "01", "--slurm", "--slurm-partition", "h200",
                                       "--slurm-no-check"])
        self.assertEqual(status, 1)
        self.assertIn("partition h200 not found (sinfo lists debug, gpu)", err)
        # the course's 20 minutes exceed the partition's 10 (job_options.check_partition)
        status, _, err = self.run_job(["check", "01", "--slurm"])
        self.assertEqual(status, 1)
        self.assertIn("exceeds partition gpu's MaxTime 10 min", err)
        self.assertNotIn("sbatch", self.log())

    def test_without_sbatch_it_says_where_to_run(self):
        status, out, err = self.run_job(["check", "01", "--slurm"], PATH=str(self.tmp / "none"))
        self.assertEqual(status, 1)
        self.assertIn("sbatch is not on the PATH", err)
        self.assertIn("login node", err)
        self.assertEqual(out, "")

    def test_a_job_that_ends_without_its_command_is_an_error(self):
        (self.fake / "state").write_text("")  # gone from the queue at once, never ran
        status, out, err = self.run_job(["check", "01", "--slurm", "--slurm-no-check"],
                                        FAKE_FINAL="NODE_FAIL")
        self.assertEqual(status, 1)
        self.assertIn("slurm job 4242 ended (node_fail) without finishing the command", err)
        self.assertEqual(out, "")
        self.assertFalse((self.root / ".grader" / "last").exists())

    def test_ctrl_c_cancels_the_job(self):
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        self.addCleanup(timer.cancel)
        status, out, err = self.run_job(["check", "01", "--slurm", "--slurm-no-check"])
        self.assertEqual(status, 130)
        self.assertIn("scancel 4242", self.log())
        self.assertIn("slurm job 4242 cancelled", err)
        self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)

    def test_grade_runs_as_a_job_too(self):
        (self.root / "sub").mkdir()
        os.chdir(self.tmp)
        self.addCleanup(os.chdir, Path(__file__).resolve().parents[2])
        status, out, err = self.run_job(["grade", "repo/sub", "--out", "o", "--slurm",
                                         "--slurm-no-check", "--seed", "1"], "grade",
                                        FAKE_RUN="1")
        self.assertEqual(status, 3, err)
        self.assertIn(f"args: -m grader grade {self.root / 'sub'} --out {self.tmp / 'o'} "
                      "--format=gradescope,prairielearn,junit,markdown --seed 1", out)
        self.assertNotIn("--results", out)


if __name__ == "__main__":
    unittest.main()
