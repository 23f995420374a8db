"""integrations/github-runners/: the runner scale set's values (parsed with PyYAML where it is
installed, linted with yamllint where it is) and the runner image's Dockerfile (read line by
line: no Dockerfile linter is packaged for Debian), against what the guide,
docs/platforms/github-gpu-runners.md, promises of them."""

from __future__ import annotations

import re
import shutil
import subprocess
import unittest

from grader.paths import ROOT

HERE = ROOT / "integrations" / "github-runners"
GUIDE = ROOT / "docs" / "platforms" / "github-gpu-runners.md"

try:
    import yaml
except ImportError:  # Debian: python3-yaml
    yaml = None


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, pending = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") or (not pending and not line.strip()):
            continue  # comments, also between continuation lines, as Docker reads them
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        word, _, rest = whole.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


NOT_HERE = (None if HERE.is_dir() else
            "integrations/ is the course repository's (a student copy has none)")


@unittest.skipIf(NOT_HERE, NOT_HERE or "")
class DockerfileTest(unittest.TestCase):
    def setUp(self):
        self.steps = dockerfile_instructions((HERE / "Dockerfile").read_text())

    def test_it_builds_on_a_cuda_devel_image(self):
        self.assertEqual(self.steps[0][0], "FROM")
        self.assertRegex(self.steps[0][1], r"^nvidia/cuda:13\.\d+\.\d+-devel-ubuntu\d+\.\d+$")

    def test_it_installs_what_the_grader_uses(self):
        installs = " ".join(rest for word, rest in self.steps
                            if word == "RUN" and "apt-get install" in rest)
        packages = set(re.findall(r"[a-z0-9][a-z0-9.+-]+", installs))
        for package in ("cmake", "ninja-build", "g++", "binutils", "python3", "python3-tomli",
                        "catch2", "bubblewrap", "libseccomp2", "git"):
            self.assertIn(package, packages)
        self.assertRegex(installs, r"cuda-nsight-compute-13-0")
        self.assertIn("rm -rf /var/lib/apt/lists/*", installs)

    def test_it_runs_githubs_runner_as_an_unprivileged_user(self):
        runs = " ".join(rest for word, rest in self.steps if word == "RUN")
        self.assertRegex(runs, r"actions/runner/releases/download/v\$\{RUNNER_VERSION\}/"
                               r"actions-runner-linux-x64-\$\{RUNNER_VERSION\}\.tar\.gz")
        self.assertIn("./bin/installdependencies.sh", runs)
        users = [rest for word, rest in self.steps if word == "USER"]
        self.assertEqual(users[-1:], ["runner"])
        self.assertEqual(self.steps[-1], ("CMD", '["/home/runner/run.sh"]'))
        self.assertFalse([rest for word, rest in self.steps if word in ("COPY", "ADD")],
                         "the image holds nothing of the course")

    def test_the_reader_joins_continuations(self):
        steps = dockerfile_instructions("# c\nFROM a\nRUN x \\\n  # dropped\n  && y\n")
        self.assertEqual(steps, [("FROM", "a"), ("RUN", "x    && y")])


@unittest.skipIf(NOT_HERE, NOT_HERE or "")
@unittest.skipIf(yaml is None, "PyYAML is not installed (Debian: apt-get install python3-yaml)")
class ValuesTest(unittest.TestCase):
    def setUp(self):
        self.values = yaml.safe_load((HERE / "values.yaml").read_text())
        self.spec = self.values["template"]["spec"]
        self.runner = next(c for c in self.spec["containers"] if c["name"] == "runner")

    def test_the_scale_set(self):
        v = self.values
        self.assertEqual(v["runnerScaleSetName"], "cml-gpu")
        self.assertTrue(v["githubConfigUrl"].startswith("https://github.com/"))
        self.assertIsInstance(v["githubConfigSecret"], str)
        self.assertEqual(v["minRunners"], 0)
        self.assertGreaterEqual(v["maxRunners"], 1)

    def test_one_gpu_per_runner_and_the_image(self):
        self.assertEqual(self.runner["resources"]["limits"]["nvidia.com/gpu"], 1)
        self.assertEqual(self.runner["command"], ["/home/runner/run.sh"])
        self.assertRegex(self.runner["image"], r"cml-gpu-runner:")

    def test_what_the_jail_needs(self):
        self.assertIs(self.spec["hostUsers"], False)
        self.assertEqual(self.spec["securityContext"]["seccompProfile"]["type"], "Unconfined")
        self.assertEqual(self.spec["securityContext"]["appArmorProfile"]["type"], "Unconfined")
        ctx = self.runner["securityContext"]
        self.assertEqual(ctx["procMount"], "Unmasked")
        self.assertEqual(ctx["seccompProfile"]["type"], "Unconfined")
        self.assertNotIn("privileged", ctx)

    def test_the_guide_names_what_the_values_set(self):
        guide = GUIDE.read_text()
        for text in (self.values["runnerScaleSetName"], "nvidia.com/gpu: 1", "procMount",
                     "hostUsers: false", "seccompProfile", "appArmorProfile",
                     "grader doctor", "runs-on: cml-gpu", self.values["runnerGroup"],
                     "selected repositories", "selected workflows",
                     ".github/workflows/grade-student-prs.yml@refs/heads/main"):
            self.assertIn(text, guide)
        self.assertIn("runs-on: [self-hosted, linux, gpu]",
                      (ROOT / ".github" / "workflows" / "grade-student-prs.yml").read_text(),
                      "the guide quotes grade-student-prs.yml's runs-on line")

    def test_the_runner_says_which_workflow_it_is_for(self):
        # `grader doctor` on the runner compares the job with this (grader/commands/doctor.py)
        from grader.commands import doctor
        env = {e["name"]: e.get("value") for e in self.runner["env"]}
        self.assertRegex(env[doctor.RUNNER_WORKFLOW],
                         r"^[\w.-]+/[\w.-]+/" + re.escape(doctor.PR_WORKFLOW) + "$")
        # registered for the organisation, in a runner group the guide restricts
        self.assertRegex(self.values["githubConfigUrl"], r"^https://github\.com/[\w.-]+$")


@unittest.skipIf(NOT_HERE, NOT_HERE or "")
@unittest.skipIf(not shutil.which("yamllint"), "yamllint is not installed (Debian: yamllint)")
class YamllintTest(unittest.TestCase):
    def test_values_lint_clean(self):
        config = "{extends: default, rules: {line-length: {max: 100}, document-start: disable}}"
        proc = subprocess.run(["yamllint", "--strict", "-d", config,
                               str(HERE / "values.yaml")], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)


if __name__ == "__main__":
    unittest.main()
