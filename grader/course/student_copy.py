"""The files the student copy holds instead of the course's own (see releases.py):

- README.md, from docs/student/README.md.in: the student's quick start, one lab at a time,
  `grader check`, and the ways to get GPU feedback without a GPU, naming the one the course
  file (grader/course.toml, [feedback] gpu_path) sets this copy up for;
- .github/workflows/build.yml, from docs/student/workflows/build.yml: builds and runs the
  student's host tests, failing ones reported as such;
- .github/workflows/classroom.yml, generated here: GitHub Classroom's autograding actions,
  one test per correctness group of each lab that has public host cases, worth that group's
  host share of the points (a preliminary score: public host tests only);
- CMakePresets.json with the `student` label no longer left out of the default test preset
  (in the student copy the student tests *are* the lab tests: there is no solution to test).

Those two are the copy's only workflows: both run on GitHub-hosted runners without a GPU and
use no secret (the student writes every branch of the copy, so any workflow there runs what
the student wrote). GPU grades come from the course's own repository (`workflow_notes`).

Everything is made from HEAD (head_tree.Tree), so it is as committed as the rest.
"""

from __future__ import annotations

import json
import re
from typing import Protocol, TypedDict

from . import course_file
from ..catch2.spec import spec_matches
from ..paths import lab_name_parts
from ..tomlreader import tomllib as _tomllib  # tomllib, or tomli on Python 3.10
from ..workspace import MAX_STUDENT_FILE_TEXT

TEMPLATES = "docs/student"  # left out of the copy itself (releases.EXCLUDE)
README_TEMPLATE = f"{TEMPLATES}/README.md.in"
BUILD_WORKFLOW = f"{TEMPLATES}/workflows/build.yml"
# The first full build of a fresh student copy (`grader release`), all seven labs, measured
# on a 2-core machine without a GPU and with nothing else running (Debian 12, nvcc 13,
# Ninja, default architecture 75): `cmake --preset default` 3.3 s, then `cmake --build
# --preset default` (128 steps) 63 s; then the first `python3 -m grader check 01 --no-gpu`
# 27 s and the next 2.7 s. The README quotes them too.
BUILD_TIME = ("about a minute on a 2-core machine (measured: configure 3 s, build 63 s, "
              "with nothing else running); more cores build in parallel and take less.")
CHECK_TIME = ("about half a minute on a 2-core machine (measured: `python3 -m grader check 01 "
              "--no-gpu` 27 s, with nothing else running); later checks of the lab reuse that "
              "build (the next took 3 s).")
# What the README says this copy is set up for (grader/course.toml, [feedback] gpu_path).
GPU_PATH_TEXT = {
    "slurm": "the course's Slurm cluster (`python3 -m grader check NN --slurm`)",
    "pr-runners": "pull requests graded by the course's repository on its GPU runners",
    "none": ("neither: the course has set up no GPU path, so the first two ways below are "
             "not open to you, and only the last two can give you a score before the course "
             "grades the GPU parts (a host score, where the course uses them); ask your "
             "course staff how the GPU parts will be graded"),
}
_CASE = re.compile(r'\b(?:TEST_CASE|SCENARIO)\(\s*"((?:[^"\\]|\\.)*)"\s*,\s*"([^"]*)"', re.S)


class Files(Protocol):
    """The committed tree, as far as the student copy reads it (a releases.Tree)."""

    blobs: dict[str, bytes]

    def text(self, rel: str) -> str | None: ...

    def under(self, prefix: str) -> list[str]: ...


class HostGroup(TypedDict):
    """A correctness group with public host cases, as host_groups gives it."""

    name: str
    spec: str  # the group's tags and [host]
    points: int  # the group's host share of its points, rounded
    all_host: bool  # every public case of the group is a host case


def public_cases(tree: Files, folder: str) -> list[tuple[str, frozenset[str]]]:
    """(name, tags) of each test case in labs/<folder>/tests/ (lower-case tags)."""
    cases = []
    for rel in tree.under(f"labs/{folder}/tests/"):
        for name, tags in _CASE.findall(tree.text(rel) or ""):
            cases.append((name, frozenset(t.lower() for t in re.findall(r"\[([^\]]+)\]", tags))))
    return cases


def host_groups(tree: Files, folder: str) -> list[HostGroup]:
    """The correctness groups with public host cases: name, spec, points, host share."""
    doc = _tomllib.loads(tree.text(f"labs/{folder}/grading.toml") or "")
    cases = public_cases(tree, folder)
    out: list[HostGroup] = []
    for group in doc.get("correctness", []):
        spec = group.get("tests", "")
        matched = [tags for name, tags in cases if spec_matches(spec, name, tags)]
        host = [tags for tags in matched if "host" in tags]
        if host and re.fullmatch(r"(\[[^\],~]+\])+", spec):  # plain tags: "...[host]" ANDs
            share = float(group.get("points", 0)) * len(host) / len(matched)
            out.append({"name": group.get("name", spec), "spec": spec + "[host]",
                        "points": round(share), "all_host": len(host) == len(matched)})
    return out


def render_readme(tree: Files, labs: list[str]) -> str:
    template = tree.text(README_TEMPLATE)
    if template is None:
        raise ValueError(f"{README_TEMPLATE} is not committed")
    presets = json.loads(tree.text("CMakePresets.json") or "{}")
    need = presets.get("cmakeMinimumRequired", {})
    rows = []
    for folder in labs:
        topic = lab_name_parts(folder)[1]
        title = _tomllib.loads(tree.text(f"labs/{folder}/grading.toml") or "").get(
            "lab", {}).get("title", topic)
        rows.append(f"| {folder[:2]} | [{title}](handouts/{folder}.md) | "
                    f"`labs/{folder}/{topic}.cu` |")
    example = "04_tiled_matmul" if "04_tiled_matmul" in labs else labs[0]
    course = course_file.parse(tree.text(str(course_file.COURSE_FILE)) or "")
    values = {"LAB_ROWS": "\n".join(rows), "EX_NN": example[:2], "EX_FOLDER": example,
              "EX_TOPIC": lab_name_parts(example)[1], "BUILD_TIME": BUILD_TIME,
              "CHECK_TIME": CHECK_TIME,
              "CMAKE_MIN": f"{need.get('major', 3)}.{need.get('minor', 25)}",
              "GPU_PATH": GPU_PATH_TEXT[course.gpu_path], "MAX_FILE": MAX_STUDENT_FILE_TEXT}
    text = re.sub(r"@([A-Z_]+)@", lambda m: values[m.group(1)], template)
    return text


def classroom_workflow(tree: Files, labs: list[str]) -> str:
    """GitHub Classroom's autograding workflow: one command-grader step per host group."""
    steps, ids = [], []
    for folder in labs:
        nn = folder[:2]
        binary = f"build/labs/{folder}/lab{nn}_tests_student"
        for i, group in enumerate(host_groups(tree, folder), 1):
            if group["points"] <= 0:
                continue
            step = f"lab{nn}-{i}"
            ids.append(step)
            part = "" if group["all_host"] else " (host cases)"
            name = f"lab{nn} {group['name']}{part}".replace('"', "'")
            steps.append(
                f"      - name: \"{name}\"\n"
                f"        id: {step}\n"
                f"        uses: classroom-resources/autograding-command-grader@v1\n"
                f"        with:\n"
                f"          test-name: \"{name}\"\n"
                f"          setup-command: cmake --build build --target lab{nn}_tests_student\n"
                f"          command: {binary} '{group['spec']}'\n"
                f"          timeout: 10\n"
                f"          max-score: {group['points']}\n")
    env = "".join(f"          {i.upper().replace('-', '_')}_RESULTS: "
                  f"\"${{{{ steps.{i}.outputs.result }}}}\"\n" for i in ids)
    return (
        "# GitHub Classroom autograding: each lab's host tests (public ones only), one test per\n"
        "# rubric group with host cases, worth that group's host share of the points. This\n"
        "# score is PRELIMINARY: no hidden tests, no GPU tests, no reference timing; the\n"
        "# course's GPU grader gives the real one. Generated by `grader release`.\n"
        "name: Autograding Tests\n"
        # a mapping: repository_dispatch (Classroom's trigger) cannot be a list item
        "\"on\":\n  push:\n  workflow_dispatch:\n  repository_dispatch:\n"
        "permissions:\n  checks: write\n  actions: read\n  contents: read\n"
        "jobs:\n  run-autograding-tests:\n    runs-on: ubuntu-latest\n"
        "    if: github.actor != 'github-classroom[bot]'\n"
        "    env:\n      CUDA_VERSION: \"13-0\"\n"
        "    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "      - name: Install the CUDA compiler and the build tools\n"
        "        run: |\n"
        "          . /etc/os-release\n"
        "          wget -q \"https://developer.download.nvidia.com/compute/cuda/repos/"
        "ubuntu${VERSION_ID/./}/x86_64/cuda-keyring_1.1-1_all.deb\"\n"
        "          sudo dpkg -i cuda-keyring_1.1-1_all.deb\n"
        "          sudo apt-get update -qq\n"
        "          sudo apt-get install -y -qq --no-install-recommends cmake ninja-build g++ "
        "catch2 nlohmann-json3-dev \"cuda-nvcc-$CUDA_VERSION\" "
        "\"cuda-cudart-dev-$CUDA_VERSION\" \"libcublas-dev-$CUDA_VERSION\"\n"
        "          echo \"/usr/local/cuda/bin\" >> \"$GITHUB_PATH\"\n"
        "      - name: Configure\n"
        "        run: cmake --preset default\n"
        "      - name: Say what this score is\n"
        "        run: |\n"
        "          {\n"
        "            echo \"## Preliminary host score for ${GITHUB_SHA::12}\"\n"
        "            echo\n"
        "            echo \"Public host tests only: no hidden tests, no GPU tests, no reference"
        " timing.\"\n"
        "            echo \"Failing tests are expected until you have done a lab's work.\"\n"
        "          } >> \"$GITHUB_STEP_SUMMARY\"\n"
        + "".join(steps) +
        "      - name: Autograding Reporter\n"
        "        uses: classroom-resources/autograding-grading-reporter@v1\n"
        "        env:\n" + env +
        "        with:\n"
        f"          runners: {','.join(ids)}\n")



def workflow_notes(gpu_path: str) -> list[str]:
    """What `grader release` says of the copy's workflows and of the GPU path the course
    chose (grader/course.toml, [feedback] gpu_path)."""
    notes = [
        "the copy's workflows: build.yml (builds, runs the student's host tests) and "
        "classroom.yml (GitHub Classroom's preliminary host score), both on GitHub-hosted "
        "runners without a GPU",
        "they use no GPU runner and no secret, and grade nothing as the grade: no hidden "
        "tests, no reference, no GPU parts (a `grader ci` run in the copy says \"feedback from "
        "your own copy (no hidden tests, no reference)\")",
    ]
    if gpu_path == "pr-runners":
        notes.append("GPU path: pull requests, graded by the course's own repository "
                     "(.github/workflows/grade-student-prs.yml on its GPU runners, hidden tests "
                     "and reference included) and commented on; the copy runs none of it")
    elif gpu_path == "slurm":
        notes.append("GPU path: the course's Slurm cluster (python3 -m grader check NN --slurm "
                     "on its login node); no workflow of the copy touches a GPU")
    else:
        notes.append("GPU path: none set (grader/course.toml [feedback] gpu_path = \"none\"): "
                     "students get no GPU feedback before the course grades; the copy's README "
                     "tells them the cluster and pull-request ways are not open to them and "
                     "that only a host score (Gradescope, PrairieLearn, GitHub Classroom) can "
                     "come first; set gpu_path to \"slurm\" or \"pr-runners\" and release "
                     "again to give them GPU feedback")
    return notes


def student_presets(text: str) -> str:
    """The course's CMakePresets.json with `student` tests run by the default test preset."""
    doc = json.loads(text)
    for preset in doc.get("testPresets", []):
        exclude = preset.get("filter", {}).get("exclude", {})
        if exclude.get("label") == "^student$":
            del exclude["label"]
            if not exclude:
                del preset["filter"]["exclude"]
            if not preset["filter"]:
                del preset["filter"]
            if preset.get("name") == "default":
                preset["displayName"] = ("Your tests (they fail until a lab is done) and the "
                                         "grader's own")
    return json.dumps(doc, indent=2) + "\n"


def overlay(tree: Files, labs: list[str]) -> dict[str, bytes]:
    """Path in the copy -> content, for the files the student copy holds instead."""
    out = {"README.md": render_readme(tree, labs).encode(),
           ".github/workflows/classroom.yml": classroom_workflow(tree, labs).encode(),
           "CMakePresets.json": student_presets(tree.text("CMakePresets.json") or "{}").encode()}
    build = tree.blobs.get(BUILD_WORKFLOW)
    if build is not None:
        out[".github/workflows/build.yml"] = build
    return out
