"""`doctor`: the device limits the handouts ask for (parsed from the CUDA runtime helper's
output, canned here), the one line it prints without a GPU (the handouts' side is in
test_handouts) and the nlohmann-json the build needs."""

from __future__ import annotations

import io
import tempfile
import unittest
from pathlib import Path
from argparse import Namespace
from contextlib import redirect_stdout

from grader import device_limits
from grader.commands import doctor
from grader.tools import Toolchain, find_nlohmann_json

H100 = """warpSize=32
multiProcessorCount=132
maxThreadsPerBlock=1024
maxThreadsPerMultiProcessor=2048
maxBlocksPerMultiProcessor=32
regsPerMultiprocessor=65536
regsPerBlock=65536
sharedMemPerBlock=49152
sharedMemPerBlockOptin=232448
sharedMemPerMultiprocessor=233472
reservedSharedMemPerBlock=1024
l2CacheSize=52428800
memoryBusWidth=5120
memoryClockRate=2619000
major=9
minor=0
devices=1
"""


class ParserTest(unittest.TestCase):
    def test_an_h100(self):
        limits = device_limits.parse(H100)
        self.assertEqual(limits.error, "")
        self.assertEqual(limits.compute_capability, "9.0")
        self.assertEqual(limits.values["sharedMemPerBlockOptin"], 232448)
        text = "\n".join(device_limits.lines(limits))
        self.assertIn("227 KB (232,448 bytes)", text)
        self.assertIn("50 MB (52,428,800 bytes)", text)
        self.assertIn("2,619 MHz", text)
        self.assertEqual(len(device_limits.lines(limits)), len(device_limits.FIELDS))

    def test_no_gpu_and_garbage(self):
        limits = device_limits.parse("error=no CUDA device\n")
        self.assertEqual((limits.values, limits.error), ({}, "no CUDA device"))
        self.assertEqual(device_limits.lines(limits), [])
        self.assertTrue(device_limits.parse("Segmentation fault\nwarpSize=x\n").error)


class DoctorTest(unittest.TestCase):
    def test_an_old_cmake_is_named(self):
        self.assertTrue(doctor._older("3.22.1", (3, 25)))  # Ubuntu 22.04's
        self.assertFalse(doctor._older("3.25.1", (3, 25)))
        self.assertFalse(doctor._older("4.0.2", (3, 25)))
        self.assertFalse(doctor._older(None, (3, 25)))

    def test_nlohmann_json_is_found_as_find_package_would_and_must_be_3_10(self):
        with tempfile.TemporaryDirectory() as tmp:
            where = Path(tmp) / "share" / "cmake" / "nlohmann_json"
            where.mkdir(parents=True)
            (where / "nlohmann_jsonConfigVersion.cmake").write_text(
                'set(PACKAGE_VERSION "3.9.1")\n')
            self.assertEqual(find_nlohmann_json(tmp), ("3.9.1", str(where)))
        tc = Toolchain(paths={"cmake": "/usr/bin/cmake", "nvcc": "/usr/bin/nvcc",
                              "g++": "/usr/bin/g++"})
        self.assertTrue(doctor._can_build(tc, "3.11.2"))
        self.assertTrue(doctor._can_build(tc, "3.10.5"))  # Ubuntu 22.04's
        self.assertFalse(doctor._can_build(tc, "3.9.1"))
        self.assertFalse(doctor._can_build(tc, None))

    def test_without_a_gpu_one_clear_line(self):
        if device_limits.query().values:
            self.skipTest("this machine has a GPU")
        out = io.StringIO()
        with redirect_stdout(out):
            status = doctor.run(Namespace(json=False))
        text = out.getvalue()
        section = text.split("Device limits")[1].split("\nTools")[0].splitlines()[1:]
        self.assertEqual(len(section), 1, section)
        self.assertIn("no CUDA GPU", section[0])
        self.assertNotIn("insufficient", text)
        self.assertIn(status, (0, 1))  # 1 only when cmake/nvcc/g++/nlohmann-json are missing


class GpuFeedbackTest(unittest.TestCase):
    """doctor's "GPU feedback" section: both ways, and the one the course file chose."""

    def lines(self, text: str | None, sbatch: str | None, workflow: bool) -> list[str]:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            if text is not None:
                (root / "grader").mkdir()
                (root / "grader" / "course.toml").write_text(text)
            if workflow:
                (root / ".github" / "workflows").mkdir(parents=True)
                (root / doctor.PR_WORKFLOW).write_text("name: grade\n")
            found = doctor.gpu_feedback(root, which=lambda name: sbatch)
        return doctor.feedback_lines(found)

    def test_a_copy_set_up_for_slurm_off_the_cluster(self):
        lines = self.lines('[feedback]\ngpu_path = "slurm"\n[slurm]\npartition = "gpu"\n',
                           None, False)
        self.assertIn("set up for: the course's Slurm cluster", lines[0])
        self.assertTrue(lines[1].startswith("  --    Slurm (this copy's): no sbatch here"))
        self.assertEqual(lines[2], "  --    pull requests: not the way this copy is set up for")

    def test_on_the_login_node_and_with_runners(self):
        lines = self.lines('[feedback]\ngpu_path = "pr-runners"\n[slurm]\npartition = "gpu"\n',
                           "/usr/bin/sbatch", True)
        self.assertIn("set up for: pull requests graded by the course's repository on its GPU "
                      "runners", lines[0])
        self.assertIn("ok    Slurm: sbatch is here (/usr/bin/sbatch)", lines[1])
        self.assertIn("on partition gpu", lines[1])
        self.assertTrue(lines[2].startswith("  ok    pull requests (this copy's): "))

    def test_a_student_copy_set_up_for_pull_requests(self):
        # The copy has no grading workflow: the course's own repository grades its PRs.
        lines = self.lines('[feedback]\ngpu_path = "pr-runners"\n', None, False)
        self.assertTrue(lines[2].startswith("  ok    pull requests (this copy's): open one; "
                                            "the course's own repository grades it"))

    def test_no_course_file_and_a_broken_one(self):
        self.assertIn("neither", self.lines(None, None, True)[0])
        lines = self.lines("[feedback]\ngpu_path = 3\n", None, True)
        self.assertEqual(len(lines), 1)
        self.assertIn("gpu_path", lines[0])


COURSE = "course-org/cml-course/.github/workflows/grade-student-prs.yml"


class RunnerAdmissionTest(unittest.TestCase):
    """On a self-hosted runner, doctor warns where the job it runs in shows that the runner
    group admits more than the course's grading workflow."""

    def env(self, **changes: str) -> dict:
        env = {"GITHUB_ACTIONS": "true", "RUNNER_ENVIRONMENT": "self-hosted",
               "GITHUB_REPOSITORY": "course-org/cml-course", "GITHUB_EVENT_NAME": "schedule",
               "GITHUB_WORKFLOW_REF": f"{COURSE}@refs/heads/main",
               "CML_RUNNER_WORKFLOW": COURSE}
        env.update(changes)
        return {k: v for k, v in env.items() if v}

    def test_the_course_workflow_is_fine(self):
        found = doctor.runner_admission(self.env())
        self.assertEqual(found["warnings"], [])
        self.assertIn("ok    the job is the course's grading workflow",
                      "\n".join(doctor.runner_lines(found)))
        self.assertEqual(doctor.runner_admission(self.env(GITHUB_EVENT_NAME="workflow_dispatch"))
                         ["warnings"], [])

    def test_not_in_a_job_or_on_a_github_hosted_runner(self):
        self.assertIsNone(doctor.runner_admission({}))
        self.assertIsNone(doctor.runner_admission(self.env(RUNNER_ENVIRONMENT="github-hosted")))

    def test_a_student_repository_on_the_runner(self):
        # the course's workflow copied into a student's repository, run by a pull request
        student = "course-org/labs-alice"
        found = doctor.runner_admission(self.env(
            GITHUB_REPOSITORY=student, GITHUB_EVENT_NAME="pull_request",
            GITHUB_WORKFLOW_REF=f"{student}/.github/workflows/grade-pr.yml@refs/pull/3/merge"))
        text = "\n".join(found["warnings"])
        self.assertIn(f"repository {student}, not course-org/cml-course", text)
        self.assertIn("selected repositories", text)
        self.assertIn("selected workflows", text)
        self.assertIn("started by 'pull_request'", text)
        self.assertIn("refs/pull/3/merge's, not a branch's", text)
        self.assertEqual(len(found["warnings"]), 4)

    def test_another_workflow_of_the_course(self):
        found = doctor.runner_admission(self.env(
            GITHUB_WORKFLOW_REF="course-org/cml-course/.github/workflows/build.yml"
                                "@refs/heads/main", GITHUB_EVENT_NAME="push"))
        self.assertEqual(len(found["warnings"]), 2, found["warnings"])
        self.assertIn("not course-org/cml-course/.github/workflows/grade-student-prs.yml",
                      found["warnings"][0])

    def test_a_runner_that_does_not_say(self):
        found = doctor.runner_admission(self.env(CML_RUNNER_WORKFLOW=""))
        self.assertEqual(len(found["warnings"]), 1)
        self.assertIn("set CML_RUNNER_WORKFLOW=", found["warnings"][0])
        self.assertTrue(doctor.runner_lines(found)[-1].startswith("  warn  "))


if __name__ == "__main__":
    unittest.main()
