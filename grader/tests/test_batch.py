"""The batch: rosters, resuming, the GPU lock, the gradebook and summary, the Slurm script.
Most tests grade no lab (a plan with no labs runs the whole task machinery in seconds); one
builds two real lab 04 submissions when the toolchain and the solutions are here."""

from __future__ import annotations

import csv
import fcntl
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
from unittest import mock

from grader import batch, gpu, pipeline
from grader.batch import fingerprint
from grader.cluster.job_options import SlurmOptions
from grader.paths import ROOT
from grader.result import (FAILED, GRADED, NOT_GRADED, PASSED, TIMEOUT, GradeResult,
                           LabResult, PartResult, TestResult)

from . import needs

LAB = "04_tiled_matmul"


def _plan(tmp: Path, students: list[str], labs: list[str] | None = None, **kw) -> batch.Plan:
    subs = []
    for name in students:
        (tmp / "subs" / name).mkdir(parents=True, exist_ok=True)
        subs.append(batch.Submission(name, str(tmp / "subs" / name)))
    kw.setdefault("no_gpu", True)  # no GPU in CI: the tasks refuse to grade otherwise
    return batch.Plan(repo=str(ROOT), labs=labs or [], seed=7, timeout=60, submissions=subs,
                      gpu_lock=str(tmp / "gpu.lock"), formats=["markdown"], **kw)


def _lab(points: float, parts=(), tests=(), build=None) -> LabResult:
    return LabResult(LAB, "Tiled", points, 100.0, list(parts), list(tests),
                     build=build or {"ok": True})


def _result(*labs: LabResult, errors=()) -> GradeResult:
    return GradeResult("sub", 7, "2025-01-01T00:00:00+00:00", "0.1.0", None, {}, list(labs),
                       sum(x.points for x in labs), 100.0 * len(labs), errors=list(errors))


def _store(out: Path, student: str, result: GradeResult, status: str = batch.GRADED) -> None:
    (out / student).mkdir(parents=True, exist_ok=True)
    (out / student / "result.json").write_text(result.to_json())
    stamp = batch.Stamp(student, "x", "k", {}, status, result.points, result.max_points, 3.0,
                        0.0, "2025-01-01T00:00:00+0000", "host")
    (out / student / batch.STAMP_FILE).write_text(json.dumps(stamp.__dict__))


class TmpCase(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-batch-test-"))
        self.tmp.chmod(0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)


class RosterTest(TmpCase):
    def test_a_folder_gives_one_submission_per_student(self):
        for name in ("bob.git", "alice", ".hidden"):
            (self.tmp / name).mkdir()
        (self.tmp / "notes.txt").write_text("not a submission")
        subs = batch.read_submissions(self.tmp)
        self.assertEqual([s.student for s in subs], ["alice", "bob"])
        self.assertEqual(subs[0].path, str((self.tmp / "alice").resolve()))

    def test_a_roster_takes_paths_relative_to_itself(self):
        (self.tmp / "work" / "a1").mkdir(parents=True)
        (self.tmp / "roster.csv").write_text("Student,Path\nann,work/a1\n\n")
        subs = batch.read_submissions(self.tmp / "roster.csv")
        self.assertEqual([(s.student, s.path) for s in subs],
                         [("ann", str((self.tmp / "work" / "a1").resolve()))])

    def test_bad_rosters_are_refused_with_a_reason(self):
        (self.tmp / "a").mkdir()
        cases = {"name,folder\nx,a\n": "student,path", "student,path\nx,nowhere\n": "does not exist",
                 "student,path\nx,a\nx,a\n": "twice", "student,path\n../x,a\n": "folder name"}
        for text, why in cases.items():
            (self.tmp / "r.csv").write_text(text)
            with self.assertRaises(batch.BatchError) as err:
                batch.read_submissions(self.tmp / "r.csv")
            self.assertIn(why, str(err.exception))


class ResumeKeyTest(TmpCase):
    def test_the_key_follows_the_student_files_the_seed_and_the_grader(self):
        plan = _plan(self.tmp, ["ann"], labs=[LAB])
        sub = plan.submissions[0]
        rel = "labs/04_tiled_matmul/tiled_matmul.cu"
        target = Path(sub.path) / rel
        target.parent.mkdir(parents=True)
        target.write_text("int x;\n")
        (Path(sub.path) / "README.md").write_text("not a student file")
        hashes = batch.submission_hashes(plan, sub, self.tmp / "scratch")
        self.assertEqual(list(hashes), [rel])
        key = batch.grading_key(plan, hashes, "v1")
        (Path(sub.path) / "README.md").write_text("changed, but not graded")
        self.assertEqual(batch.grading_key(plan, batch.submission_hashes(
            plan, sub, self.tmp / "scratch"), "v1"), key)
        target.write_text("int y;\n")
        changed = batch.submission_hashes(plan, sub, self.tmp / "scratch")
        self.assertNotEqual(batch.grading_key(plan, changed, "v1"), key)
        self.assertNotEqual(batch.grading_key(plan, hashes, "v2"), key)
        plan.seed = 8
        self.assertNotEqual(batch.grading_key(plan, hashes, "v1"), key)
        target.unlink()
        self.assertEqual(batch.submission_hashes(plan, sub, self.tmp / "s")[rel], "missing")

    def test_the_fingerprint_covers_hidden_tests_but_not_student_files(self):
        plan = _plan(self.tmp, [], labs=[LAB])
        fp = batch.grader_fingerprint(plan)
        self.assertTrue(fp.startswith(pipeline.GRADER_VERSION + "+"))
        with mock.patch.object(fingerprint, "_hash_files") as hashed:
            batch.grader_fingerprint(plan)
        files = {str(p.relative_to(ROOT)) for p in hashed.call_args[0][0]}
        self.assertIn(f"labs/{LAB}/grading.toml", files)
        self.assertNotIn(f"labs/{LAB}/tiled_matmul.cu", files)
        self.assertIn("grader/pipeline.py", files)
        self.assertIn("grader/workspace.py", files)
        self.assertIn("grader/allowlist.toml", files)  # what the static checks allow
        self.assertFalse([f for f in files if f.startswith("grader/batch/")])  # not regraded
        self.assertNotIn("grader/course/releases.py", files)
        if (ROOT / "solutions" / LAB).is_dir():
            self.assertIn(f"solutions/{LAB}/tests/test_hidden.cpp", files)


class GpuLockTest(TmpCase):
    def held_elsewhere(self, path: Path) -> bool:
        fd = os.open(path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)

    def test_a_section_holds_the_lock_and_gives_it_back(self):
        path = self.tmp / "gpu.lock"
        lock = gpu.GpuLock(str(path))
        self.assertFalse(self.held_elsewhere(path))
        with lock.section("tests"):
            self.assertTrue(self.held_elsewhere(path))
            with lock.section("sanitizer"):  # nested: still held, not taken twice
                self.assertTrue(self.held_elsewhere(path))
            self.assertTrue(self.held_elsewhere(path))
        self.assertFalse(self.held_elsewhere(path))
        with self.assertRaises(RuntimeError):
            with lock.section("bench"):
                raise RuntimeError("the stage failed")
        self.assertFalse(self.held_elsewhere(path))  # given back on an exception too
        self.assertEqual(lock.waited, 0.0)

    def test_one_lock_file_per_device_can_be_derived(self):
        self.assertEqual(gpu.lock_path("/tmp/x.lock"), "/tmp/x.lock")
        self.assertEqual(gpu.lock_path("/tmp/x.lock", 1), "/tmp/x.gpu1.lock")
        self.assertNotEqual(gpu.lock_path("/tmp/x.lock", 0), gpu.lock_path("/tmp/x.lock", 1))

    def test_no_lock_is_a_section_that_holds_nothing(self):
        with gpu.no_lock("tests"):
            pass
        self.assertIs(pipeline.Options(Path("."), []).gpu_section, gpu.no_lock)

    def test_a_second_grader_waits_and_the_wait_is_not_counted(self):
        path = self.tmp / "gpu.lock"
        code = ("import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT);"
                "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(1.5)")
        other = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE,
                                 text=True)
        self.assertEqual(other.stdout.readline().strip(), "held")
        said = []
        lock = gpu.GpuLock(str(path), on_wait=said.append)
        start = time.monotonic()
        with lock.section("bench"):
            waited = time.monotonic() - start
        other.wait(10)
        other.stdout.close()
        self.assertGreater(waited, 0.5)
        self.assertGreater(lock.waited, 0.5)
        self.assertTrue(said and "waiting for the GPU" in said[0])

    def test_a_task_holds_the_lock_in_the_pipelines_gpu_sections_only(self):
        plan = _plan(self.tmp, ["ann"])
        out = self.tmp / "out"
        plan.save(out)
        held = []

        def fake_grade(opts, result):
            held.append(self.held_elsewhere(Path(plan.gpu_lock)))  # a build
            with opts.gpu_section("tests"):
                held.append(self.held_elsewhere(Path(plan.gpu_lock)))
            held.append(self.held_elsewhere(Path(plan.gpu_lock)))  # the next lab's build
            return result

        with mock.patch.object(pipeline, "grade", side_effect=fake_grade), \
                mock.patch.object(gpu, "visible_devices", return_value=[]):  # the whole lock
            batch.run_task(out, 0, log=lambda t: None)
        self.assertEqual(held, [False, True, False])
        self.assertFalse(self.held_elsewhere(Path(plan.gpu_lock)))


class TaskTest(TmpCase):
    def test_a_task_writes_result_exports_and_stamp_and_is_kept_next_time(self):
        plan = _plan(self.tmp, ["ann", "ben"])
        out = self.tmp / "out"
        plan.save(out)
        stamp = batch.run_task(out, 1, log=lambda t: None)
        self.assertEqual(stamp.status, batch.GRADED)
        for rel in ("ben/result.json", "ben/summary.md", "ben/stamp.json"):
            self.assertTrue((out / rel).is_file(), rel)
        self.assertEqual(json.loads((out / "ben/result.json").read_text())["seed"], 7)
        self.assertIsNone(batch.run_task(out, 1, log=lambda t: None))  # unchanged: kept
        self.assertIsNotNone(batch.run_task(out, 1, force=True, log=lambda t: None))
        with self.assertRaises(batch.BatchError):
            batch.run_task(out, 2)

    def test_without_a_gpu_a_task_refuses_unless_told_no_gpu(self):
        plan = _plan(self.tmp, ["ann"], no_gpu=False, require_tools=["no-such-tool-x"])
        out = self.tmp / "out"
        plan.save(out)
        with mock.patch("grader.batch.node.query_gpus", return_value=([], "none here")), \
                mock.patch.object(pipeline, "grade") as grade:
            stamp = batch.run_task(out, 0, log=lambda t: None)
        grade.assert_not_called()
        self.assertEqual(stamp.status, batch.GRADER_ERROR)
        errors = json.loads((out / "ann/result.json").read_text())["errors"]
        self.assertIn("--no-gpu", errors[0])
        plan.no_gpu = True
        plan.save(out)
        stamp = batch.run_task(out, 0, log=lambda t: None)
        errors = json.loads((out / "ann/result.json").read_text())["errors"]
        self.assertIn("no-such-tool-x not found", errors[0])
        self.assertEqual(len((out / "ann" / "history.jsonl").read_text().splitlines()), 2)

    def test_the_wall_clock_limit_stops_a_grade_and_says_so(self):
        plan = _plan(self.tmp, ["ann"])
        plan.timeout = 1
        out = self.tmp / "out"
        plan.save(out)

        def slow(opts, result):
            time.sleep(30)

        start = time.monotonic()
        with mock.patch.object(pipeline, "grade", side_effect=slow):
            stamp = batch.run_task(out, 0, log=lambda t: None)
        self.assertLess(time.monotonic() - start, 10)
        self.assertEqual(stamp.status, batch.TIMED_OUT)
        result = GradeResult.from_json((out / "ann/result.json").read_text())
        self.assertTrue(any("limit of 1 s" in e for e in result.errors))


class CollectTest(TmpCase):
    def test_gradebook_and_summary(self):
        out = self.tmp / "out"
        plan = _plan(self.tmp, ["ann", "ben", "cat", "dan", "eve", "fay", "gus"], labs=[LAB])
        plan.save(out)
        host = TestResult("t", "g", "host", False, PASSED, 25.0, 25.0)
        ng = PartResult("correctness", "gpu", NOT_GRADED, 0.0, 75.0, "no GPU")
        _store(out, "ann", _result(_lab(25.0, [ng], [host])))
        _store(out, "ben", _result(_lab(0.0, [PartResult("build", "Build", GRADED, 0, 0,
                                                         "Your code does not compile: x")])))
        _store(out, "cat", _result(_lab(0.0, [PartResult("build", "Build", GRADED, 0, 0, ""),
                                             PartResult("static", "Static checks", GRADED,
                                                        0, 0, "Forbidden: system")])))
        _store(out, "dan", _result(_lab(15.0, [], [
            TestResult("t", "g", "host", False, TIMEOUT, 0.0, 10.0)])))
        _store(out, "eve", _result(_lab(5.0, [], [
            TestResult("t", "g", "host", False, FAILED, 0.0, 10.0)])))
        _store(out, "fay", _result(), status=batch.TIMED_OUT)
        manifest = batch.collect(out)
        with (out / "gradebook.csv").open() as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([r["student"] for r in rows], ["ann", "ben", "cat", "dan", "eve",
                                                        "fay", "gus"])
        self.assertEqual(list(rows[0]), ["student", LAB, "total", "max_points",
                                         f"{LAB} status", "status"])
        self.assertEqual(rows[0][f"{LAB} status"], "provisional")
        self.assertEqual(rows[1][f"{LAB} status"], "complete")
        self.assertEqual((rows[0][LAB], rows[0]["total"], rows[0]["status"]),
                         ("25", "25", "graded"))
        self.assertEqual((rows[5]["status"], rows[6]["status"]), ("timeout", "not graded yet"))
        summary = (out / "summary.md").read_text()
        for kind, who in (("compile error", "ben (04)"), ("static violation", "cat (04)"),
                          ("timeout", "dan (04)"), ("wrong results", "eve (04)")):
            self.assertRegex(summary, rf"\| {kind} \| \d+ \| [^|]*{re.escape(who)}")
        self.assertIn("| 04_tiled_matmul | 5 | 0 | 5 | 25 | 100 |", summary)
        self.assertIn("Not graded yet: gus", summary)
        self.assertIn("**not graded**", summary)
        self.assertIn("**provisional** (host parts only)", summary)
        self.assertEqual(manifest["students"]["fay"]["status"], "timeout")
        self.assertEqual(json.loads((out / "manifest.json").read_text())["seed"], 7)

    def test_each_status_means_one_thing(self):
        """An empty submission is "no submission" (never "complete" with 0 points) and full
        host marks without a GPU are "provisional" (never "incomplete"): issue 36, item 5."""
        out = self.tmp / "out"
        _plan(self.tmp, ["ann", "ben"], labs=[LAB]).save(out)
        empty = _lab(0.0, [PartResult("build", "Build", GRADED, 0, 0, "No submission")])
        empty.failure = "no_submission"
        _store(out, "ann", _result(empty))
        host = PartResult("correctness", "host", GRADED, 25.0, 25.0)
        pending = PartResult("performance", "Performance", NOT_GRADED, 0.0, 75.0, "no GPU")
        _store(out, "ben", _result(_lab(25.0, [host, pending])))
        batch.collect(out)
        with (out / "gradebook.csv").open() as f:
            rows = {r["student"]: r for r in csv.DictReader(f)}
        self.assertEqual((rows["ann"][f"{LAB} status"], rows["ann"]["status"]),
                         ("no submission", "no submission"))
        self.assertEqual((rows["ben"][f"{LAB} status"], rows["ben"]["status"]),
                         ("provisional", "graded"))
        self.assertRegex((out / "summary.md").read_text(), r"\| no submission \| 1 \| ann ")

    def test_histogram_bins_cover_the_range(self):
        lines = batch.histogram([0, 0, 49.9, 50, 100], 100)
        self.assertEqual(len(lines), 10)
        self.assertIn("   2 ", lines[0])
        self.assertIn("   1 ", lines[4])
        self.assertIn("   1 ", lines[9])
        self.assertTrue(lines[9].startswith("[ 90.0, 100.0]"))


class ProgressTest(TmpCase):
    def test_a_grade_without_a_gpu_says_host_parts_only_on_its_line(self):
        from grader.commands.grade_class import progress_line
        plan = _plan(self.tmp, ["ann", "ben"])
        out = self.tmp / "out"
        plan.save(out)
        host = PartResult("correctness", "host", GRADED, 45.0, 45.0)
        pending = PartResult("performance", "Performance", NOT_GRADED, 0.0, 55.0, "no GPU")
        _store(out, "ann", _result(_lab(45.0, [host, pending])))
        _store(out, "ben", _result(_lab(45.0, [host, PartResult("performance", "Performance",
                                                                 GRADED, 0.0, 55.0, "slow")])))
        for sub in plan.submissions:  # both current: kept, read back from their results
            stamp = json.loads((out / sub.student / batch.STAMP_FILE).read_text())
            stamp["key"] = batch.submission_key(plan, sub, batch.grader_fingerprint(plan))[1]
            (out / sub.student / batch.STAMP_FILE).write_text(json.dumps(stamp))
        lines = []
        batch.run_local(out, 1, report=lambda o, done, total: lines.append(
            progress_line(o, done, total, False)))
        self.assertEqual(len(lines), 2)
        self.assertRegex(lines[0], r"ann +45/100 +kept \(host parts only: provisional\)")
        self.assertNotIn("host parts only", lines[1])


class JobsTest(TmpCase):
    def test_two_submissions_per_gpu_at_most_one_per_four_cpus(self):
        from grader.batch import schedule
        for gpus, cpus, want in ((1, 16, 2), (4, 64, 8), (4, 16, 4), (8, 16, 4),
                                 (0, 2, 1), (0, 64, 16), (1, 2, 1)):
            self.assertEqual(schedule.default_jobs(gpus, cpus), want, (gpus, cpus))


class SlurmTest(TmpCase):
    def test_the_job_array_runs_the_same_task_command(self):
        out = self.tmp / "out"
        plan = _plan(self.tmp, ["ann", "ben", "cat"])
        plan.save(out)
        options = SlurmOptions(time=32, partition="gpu", python=sys.executable,
                               setup_lines=["echo module load cuda"])
        prep, script = batch.write_slurm(plan, out, options, 2)
        self.assertIn("-m grader cache fill --labs", prep.read_text())
        text = script.read_text()
        for line in ("#SBATCH --array=0-2%2", "#SBATCH --gres=gpu:1", "#SBATCH --time=0:32:00",
                     "#SBATCH --cpus-per-task=4", "#SBATCH --partition=gpu",
                     "echo module load cuda",
                     f"#SBATCH --output={out.resolve()}/slurm/logs/%A_%a.out"):
            self.assertIn(line, text.splitlines())
        self.assertIn('batch --task "$SLURM_ARRAY_TASK_ID"', text)
        self.assertEqual((out / "slurm" / "submissions.txt").read_text().splitlines()[1]
                         .split("\t")[:2], ["1", "ben"])
        # what one array task does, run here
        env = dict(os.environ, SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_JOB_ID="99",
                   TMPDIR=str(self.tmp))
        proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                              timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue((out / "ben" / "result.json").is_file())
        self.assertFalse((out / "ann").exists())
        self.assertEqual(list(self.tmp.glob("cml-grade-99-1-*")), [])  # build folder removed
        batch.collect(out)
        with (out / "gradebook.csv").open() as f:
            self.assertEqual([r["status"] for r in csv.DictReader(f)],
                             ["not graded yet", "graded", "not graded yet"])


def _missing() -> str:
    return needs.missing(solutions_of=LAB)


@unittest.skipIf(_missing(), f"a real batch needs these, missing here: {_missing()}")
class RealBatchTest(TmpCase):
    def test_two_lab04_submissions_then_a_resumed_run_that_regrades_nothing(self):
        from .lab_fixtures import make_submission
        subs = self.tmp / "subs"
        make_submission("solution", subs / "ann")
        make_submission("compile_error", subs / "ben")
        out = self.tmp / "out"
        cmd = [sys.executable, "-m", "grader", "batch", str(subs), "--out", str(out), "-j", "1",
               "--labs", "04", "--no-gpu", "--seed", "3", "--gpu-lock", str(self.tmp / "l"),
               *needs.cache_args()]
        env = dict(os.environ, NO_COLOR="1")
        first = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1500,
                               env=env)
        self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
        self.assertNotIn("\033[", first.stdout)
        with (out / "gradebook.csv").open() as f:
            rows = {r["student"]: r for r in csv.DictReader(f)}
        # ann: lab 04's host parts without a GPU (the load model 10, the tile chooser 5)
        self.assertEqual((rows["ann"][LAB], rows["ben"][LAB]), ("15", "0"))
        self.assertIn("| compile error | 1 | ben (04) |", (out / "summary.md").read_text())
        self.assertFalse((out / ".work").exists())
        again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300,
                               env=env)
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        self.assertIn("0 graded, 2 unchanged (kept)", again.stdout)


if __name__ == "__main__":
    unittest.main()
