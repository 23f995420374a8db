"""A batch's regrades, overrides, deadlines and integrity report, through the command and the
batch's folder (grading itself replaced by stored results, so no toolchain is needed)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import batch
from grader.batch import regrades
from grader.commands import grade_class as command
from grader import pipeline
from grader.batch import regrade_rules
from grader.paths import ROOT
from grader.rubric import load_rubric
from grader.result import GRADED, NOT_GRADED, GradeResult, LabResult, PartResult

LAB = "04_tiled_matmul"


def _result(points: float, gpu: str = GRADED) -> GradeResult:
    parts = [PartResult("build", "Build", GRADED, 0.0, 0.0),
             PartResult("correctness", "host", GRADED, points, 25.0, "" if points == 25 else
                        "a test failed"),
             PartResult("correctness", "gpu", gpu, 0.0, 75.0, "no GPU")]
    lab = LabResult(LAB, "Tiled", points, 100.0, parts, [], build={"ok": True})
    return GradeResult("sub", 7, "2025-01-01T00:00:00+00:00", "0.1.0", None, {}, [lab],
                       points, 100.0)


def _store(out: Path, student: str, result: GradeResult, status: str = batch.GRADED) -> None:
    (out / student).mkdir(parents=True, exist_ok=True)
    (out / student / "result.json").write_text(result.to_json())
    stamp = batch.Stamp(student, "x", "k", {}, status, result.points, result.max_points, 1.0,
                        0.0, "2025-01-01T00:00:00", "host")
    (out / student / batch.STAMP_FILE).write_text(json.dumps(stamp.__dict__))


def _git(repo: Path, *args: str, when: str | None = None) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="s", GIT_AUTHOR_EMAIL="s@x", GIT_COMMITTER_NAME="s",
               GIT_COMMITTER_EMAIL="s@x")
    if when:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


class RegradeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-regrade-test-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.out = self.tmp / "out"
        self.subs = self.tmp / "subs"
        for name in ("ann", "ben", "cat"):
            (self.subs / name).mkdir(parents=True)

    def plan(self, names=("ann", "ben", "cat")) -> batch.Plan:
        plan = batch.Plan(repo=str(ROOT), labs=[LAB], seed=7, timeout=60,
                          submissions=[batch.Submission(n, str(self.subs / n)) for n in names],
                          formats=["markdown"], no_gpu=True)
        plan.save(self.out)
        return plan

    def rows(self) -> dict[str, dict[str, str]]:
        with (self.out / "gradebook.csv").open() as f:
            return {r["student"]: r for r in csv.DictReader(f)}

    def run_command(self, *argv: str) -> int:
        parser = __import__("argparse").ArgumentParser()
        command.add_parser(parser.add_subparsers())
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return command.run(parser.parse_args(["batch", *argv]))

    def test_a_run_for_one_student_keeps_the_others_and_only_status_picks(self):
        self.plan()
        _store(self.out, "ann", _result(25.0))
        _store(self.out, "ben", _result(0.0), status=batch.GRADER_ERROR)
        _store(self.out, "cat", _result(10.0))
        plan = batch.Plan.load(self.out)
        self.assertEqual(regrades.chosen(self.out, plan, None, "error"), {"ben"})
        self.assertEqual(regrades.chosen(self.out, plan, "cat", None), {"cat"})
        with self.assertRaises(batch.BatchError):
            regrades.chosen(self.out, plan, "zed", None)
        graded = []

        def fake_local(out, jobs, force=False, keep_work=False, report=None, only=None):
            graded.append((sorted(only), force))
            _store(out, "ben", _result(20.0))
            return []

        roster = self.tmp / "one.csv"
        roster.write_text("student,path\nben,subs/ben\n")
        with mock.patch.object(batch, "run_local", side_effect=fake_local):
            code = self.run_command(str(roster), "--out", str(self.out),
                                    "--only-status", "error", "--no-gpu", "--format",
                                    "markdown")
        self.assertEqual(code, 0)
        self.assertEqual(graded, [(["ben"], True)])
        rows = self.rows()
        self.assertEqual(sorted(rows), ["ann", "ben", "cat"])  # nobody dropped
        self.assertEqual((rows["ann"][LAB], rows["ben"][LAB], rows["cat"][LAB]),
                         ("25", "20", "10"))
        self.assertEqual(rows["ann"][f"{LAB} status"], "complete")

    def test_overrides_show_to_the_student_and_come_off_again(self):
        self.plan()
        for name in ("ann", "ben", "cat"):
            _store(self.out, name, _result(10.0, gpu=NOT_GRADED))
        (self.out / "overrides.csv").write_text(
            "student,lab,part,points,note\nann,04,host,20,regraded by hand: test was flaky\n")
        manifest = batch.collect(self.out)
        self.assertEqual(self.rows()["ann"][LAB], "20")
        self.assertEqual(self.rows()["ben"][f"{LAB} status"], "provisional")
        shown = (self.out / "ann" / "summary.md").read_text()
        self.assertIn("test was flaky", shown)
        self.assertIn("test was flaky", manifest["students"]["ann"]["overrides"][0])
        self.assertTrue((self.out / "ann" / regrades.GRADED_COPY).is_file())
        batch.collect(self.out)  # applied once, not twice
        self.assertEqual(len(regrade_history(self.out / "ann")), 1)
        (self.out / "overrides.csv").write_text("student,lab,part,points,note\n")
        batch.collect(self.out)
        self.assertEqual(self.rows()["ann"][LAB], "10")
        self.assertFalse((self.out / "ann" / regrades.GRADED_COPY).exists())

    def test_rescore_scales_points_to_the_current_rubric(self):
        plan = self.plan(["ann"])
        maxima = regrade_rules.rubric_maxima(load_rubric(plan.lab_paths()[0]))
        (kind, name), top = next(iter(maxima.items()))
        parts = [PartResult(k, n, GRADED, m / 2, m) for (k, n), m in maxima.items()]
        parts[0] = PartResult(kind, name, GRADED, top, top * 2)  # graded under an older rubric
        lab = LabResult(LAB, "Tiled", 0.0, 100.0, parts, [], build={"ok": True})
        _store(self.out, "ann", GradeResult("sub", 7, "2025-01-01T00:00:00+00:00", "0.1.0",
                                            None, {}, [lab], 0.0, 100.0))
        self.assertEqual(regrades.rescore(self.out), ["ann"])
        data = json.loads((self.out / "ann" / "result.json").read_text())
        first = data["labs"][0]["parts"][0]
        self.assertEqual((first["points"], first["max_points"]), (top / 2, top))
        self.assertEqual(data["max_points"], sum(maxima.values()))
        self.assertEqual(regrade_history(self.out / "ann")[-1]["reason"], "rescored")

    def test_a_git_submission_is_graded_at_its_last_commit_before_the_deadline(self):
        repo = self.tmp / "git" / "dan"
        rel = Path("labs") / LAB / "tiled_matmul.cu"
        (repo / rel).parent.mkdir(parents=True)
        _git(repo.parent, "init", "-q", "dan")
        (repo / rel).write_text("// on time\n")
        _git(repo, "add", ".")
        _git(repo, "commit", "-qm", "one", when="2026-03-01T10:00:00+00:00")
        (repo / rel).write_text("// late\n")
        _git(repo, "commit", "-qam", "two", when="2026-03-03T10:00:00+00:00")
        (repo / rel).write_text("// uncommitted\n")
        subs = [batch.Submission("dan", str(repo)), batch.Submission("eve", str(repo))]
        regrades.pin_git(subs, self.out, "2026-03-02T00:00:00+00:00",
                         {"eve": "2026-03-04"}, "cutoff")
        self.assertEqual((Path(subs[0].path) / rel).read_text(), "// on time\n")
        self.assertEqual((Path(subs[1].path) / rel).read_text(), "// late\n")  # extension
        self.assertTrue(subs[0].commit_time.startswith("2026-03-01T10:00:00"))
        self.assertEqual(len(subs[0].sha), 40)
        self.assertIn("1 later commit(s) ignored", subs[0].late)
        self.assertEqual(subs[0].source, str(repo))
        plan = batch.Plan(repo=str(ROOT), labs=[LAB], seed=7, timeout=60, submissions=subs,
                          formats=["markdown"], no_gpu=True, deadline="2026-03-02")
        plan.save(self.out)
        _store(self.out, "dan", _result(25.0))
        manifest = batch.collect(self.out)
        row = self.rows()["dan"]
        self.assertEqual(row["sha"], subs[0].sha)
        self.assertIn("on time", row["late"])
        self.assertEqual(list(row)[-1], "status")
        self.assertEqual(manifest["students"]["dan"]["sha"], subs[0].sha)
        # a policy that takes late work: the newest commit, 10 % off per started day
        late = [batch.Submission("dan", str(repo))]
        regrades.pin_git(late, self.out, "2026-03-02T00:00:00+00:00", {}, "per-day:10")
        self.assertEqual((Path(late[0].path) / rel).read_text(), "// late\n")
        self.assertEqual(late[0].late_factor, 0.8)  # 1.4 days late: two started days
        plan.submissions = late
        plan.save(self.out)
        batch.collect(self.out)
        self.assertEqual((self.rows()["dan"][LAB], self.rows()["dan"]["total"]), ("20", "20"))
        with mock.patch.object(pipeline, "grade") as grade:  # the task records the commit
            stamp = batch.run_task(self.out, 0, force=True, log=lambda text: None)
        self.assertEqual(grade.call_args[0][0].submission, Path(late[0].path))
        self.assertEqual((stamp.sha, stamp.commit_time), (late[0].sha, late[0].commit_time))

    def test_integrity_names_identical_submissions_and_skeleton_copies(self):
        rel = Path("labs") / LAB / "tiled_matmul.cu"
        for name in ("ann", "ben"):
            (self.subs / name / rel).parent.mkdir(parents=True)
            (self.subs / name / rel).write_text("int same() { return 1; }\n")
        (self.subs / "cat" / rel).parent.mkdir(parents=True)
        shutil.copy(ROOT / rel, self.subs / "cat" / rel)
        plan = self.plan()
        text = regrades.write_integrity(self.out, plan).read_text()
        self.assertIn("- Identical submissions: ann, ben", text)
        self.assertIn("- Equal to the untouched skeleton: cat", text)


class SlurmCommandTest(unittest.TestCase):
    """`batch --slurm`: the options checked before anything is written."""

    setUp = RegradeTest.setUp
    run_command = RegradeTest.run_command

    def test_gres_none_needs_no_gpu_and_a_misfit_writes_nothing(self):
        roster = self.tmp / "r.csv"
        roster.write_text("student,path\nann,subs/ann\nben,subs/ben\n")
        args = [str(roster), "--out", str(self.out), "--labs", "04", "--slurm"]
        self.assertEqual(self.run_command(*args, "--slurm-gres", "none"), 1)
        with mock.patch("grader.cluster.job_options.check_here",
                        return_value=(["time 45 min exceeds partition debug's MaxTime"], "")):
            self.assertEqual(self.run_command(*args, "--no-gpu"), 1)
        self.assertFalse((self.out / "slurm" / "grade.sbatch").exists())
        self.assertFalse((self.out / batch.PLAN_FILE).exists())  # nothing written at all
        with mock.patch("grader.cluster.job_options.check_here", return_value=([], "")):
            self.assertEqual(self.run_command(*args, "--no-gpu", "--slurm-gres", "none",
                                              "--slurm-setup", "module load cuda",
                                              "--no-slurm-prep"), 0)
        text = (self.out / "slurm" / "grade.sbatch").read_text()
        self.assertNotIn("--gres", text)
        self.assertIn("module load cuda", text.splitlines())
        self.assertFalse((self.out / "slurm" / "prep.sbatch").exists())
        _store(self.out, "ben", _result(0.0), status=batch.GRADER_ERROR)
        with mock.patch("grader.cluster.job_options.check_here", return_value=([], "")):
            self.assertEqual(self.run_command("--out", str(self.out), "--slurm",
                                              "--only-status", "error"), 0)  # --no-gpu kept
        text = (self.out / "slurm" / "grade.sbatch").read_text()
        self.assertIn("#SBATCH --array=1", text.splitlines())
        self.assertTrue(batch.Plan.load(self.out).no_gpu)
        self.assertIn("--force", text)
        self.assertIn("cache fill --labs 04_tiled_matmul",
                      (self.out / "slurm" / "prep.sbatch").read_text())


def regrade_history(student_dir: Path) -> list[dict]:
    """The grade history the batch wrote (regrade_rules.append_history), one record a line."""
    from grader.batch.regrade_rules import HISTORY_FILE
    path = student_dir / HISTORY_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] \
        if path.is_file() else []


if __name__ == "__main__":
    unittest.main()
