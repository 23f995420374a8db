"""`integrations`: what the platform integrations (integrations/) run.

    integrations gradescope-zip --labs 04 -o autograder.zip
        the autograder zip Gradescope takes: setup.sh and run_autograder at its root,
        config.json (the labs), and this repository's committed tree for those labs in repo/.
    integrations run gradescope|prairielearn UPLOAD RESULTS_JSON [--labs 04] [--work-dir D]
        grades an upload as the platform stores it (the student's files alone, by name; or a
        folder laid out like the repository) without a GPU and writes the platform's
        results.json. run_autograder and the PrairieLearn entrypoint call it. Its log on
        stdout (what the platform keeps for the course staff): the files found, the labs
        graded, the grader's progress lines, where results.json went and its score.

Exit status: 0 when results.json was written (whatever the score), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from ..paths import ROOT, LabPaths
from ._common import Subcommands, choose_labs

HELP = "platform integrations: the Gradescope autograder zip; grade an upload for a platform"
# What the autograder's repo/ holds besides the chosen labs (everything the grader builds).
REPO_TOP = ("CMakeLists.txt", "CMakePresets.json", "cmake", "common", "grader", "docs",
            "integrations", "tools")


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser("integrations", help=HELP, description=HELP)
    what = p.add_subparsers(dest="what", required=True)
    z = what.add_parser("gradescope-zip", help="build the Gradescope autograder zip")
    z.add_argument("--labs", default="", help="comma-separated lab numbers (default: all)")
    z.add_argument("-o", "--output", type=Path, default=Path("autograder.zip"))
    r = what.add_parser("run", help="grade an upload, write the platform's results.json")
    r.add_argument("platform", choices=("gradescope", "prairielearn"))
    r.add_argument("upload", type=Path, help="the folder the platform put the files in")
    r.add_argument("results", type=Path, help="the results.json to write")
    r.add_argument("--labs", default="", help="labs to grade (default: those uploaded)")
    r.add_argument("--work-dir", type=Path, default=None, help="reuse this build folder")
    return p


def _committed_files(root: Path, paths: list[str]) -> list[str]:
    """The committed files under `paths` (git ls-files), else every file there."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", *paths],
                             capture_output=True, check=True, timeout=60)
        files = [f for f in out.stdout.decode().split("\0") if f]
        if files:
            return files
    except (OSError, subprocess.SubprocessError):
        pass
    return [str(p.relative_to(root)) for rel in paths for p in sorted((root / rel).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts] + [
        rel for rel in paths if (root / rel).is_file()]


def gradescope_zip(labs: list[LabPaths], output: Path, root: Path = ROOT) -> list[str]:
    """Writes the autograder zip; returns its members."""
    paths = list(REPO_TOP) + [f"{part}/{lab.folder}" for lab in labs
                              for part in ("labs", "solutions")]
    files = sorted(set(_committed_files(root, [p for p in paths if (root / p).exists()])))
    files = [f for f in files if not f.startswith("grader/tests/")]
    here = root / "integrations" / "gradescope"
    members = []
    with zipfile.ZipFile(output, "w", zipfile.ZIP_DEFLATED) as z:
        for name in ("setup.sh", "run_autograder"):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o100755 << 16  # executable
            z.writestr(info, (here / name).read_bytes(), zipfile.ZIP_DEFLATED)
            members.append(name)
        z.writestr("config.json", json.dumps({"labs": [lab.folder for lab in labs]}) + "\n")
        members.append("config.json")
        for rel in files:
            z.write(root / rel, f"repo/{rel}")
            members.append(f"repo/{rel}")
    return members


def _fallback(platform: str, problem: str) -> dict[str, Any]:
    """A results.json when the grader could not grade at all."""
    if platform == "prairielearn":
        return {"gradable": False, "score": 0.0, "format_errors": [problem],
                "message": problem, "output": problem, "tests": []}
    return {"score": 0.0, "output": problem, "output_format": "text", "visibility": "visible",
            "stdout_visibility": "hidden", "tests": []}


def say(text: str) -> None:
    """One line of the run's log on stdout: what the platform keeps of the autograder's
    output for the course staff (Gradescope's debug panel, PrairieLearn's job output)."""
    print(f"integrations: {text}", flush=True)


def _summary(platform: str, results: Path) -> str:
    """The score results.json holds, in a few words."""
    try:
        doc = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "unreadable"
    if platform == "prairielearn":
        return (f"score {doc.get('score')}" if doc.get("gradable", True)
                else "not gradable: " + "; ".join(doc.get("format_errors", []))[:200])
    extra = doc.get("extra_data") or {}
    text = f"score {doc.get('score')}"
    if "max_points" in extra:
        text += f" of {extra['max_points']}"
    if extra.get("provisional"):
        text += f" (provisional: {extra.get('pending_gpu_points')} points pending GPU grading)"
    return text


def _write(platform: str, results: Path, doc: dict[str, Any]) -> None:
    results.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    say(f"wrote {results}: {_summary(platform, results)}")


def grade_upload(platform: str, upload: Path, results: Path, labs_arg: str = "",
                 work_dir: Path | None = None) -> int:
    """Grades the upload and writes the platform's results.json; logs each step on stdout
    (the grader's own progress lines included), never anything of results.json's but the
    score."""
    from ..submissions import stage_flat, student_files_by_name

    labs = choose_labs([labs_arg] if labs_arg else [])
    results.parent.mkdir(parents=True, exist_ok=True)
    say(f"{platform}: grading the upload in {upload}"
        + (f" for lab(s) {labs_arg}" if labs_arg else " for the labs whose file it holds"))
    with tempfile.TemporaryDirectory(prefix="cml-upload-") as tmp:
        tree = Path(tmp) / "submission"
        tree.mkdir()
        placed = stage_flat(upload, tree, student_files_by_name(labs)) if upload.is_dir() else {}
        say("files found: " + (", ".join(f"{name} (as {rel})" for rel, name in
                                          sorted(placed.items())) or "none of a lab's"))
        if not labs_arg:  # the labs whose file was uploaded
            labs = [lab for lab in labs if any(rel.startswith(f"labs/{lab.folder}/")
                                               for rel in placed)]
        if not labs:
            wanted = ", ".join(sorted(student_files_by_name(choose_labs([]))))
            say("no lab to grade: the upload holds no lab file by its name")
            _write(platform, results, _fallback(
                platform, "No file of a lab was found in the upload. Upload your lab file by "
                f"its own name (one of: {wanted})."))
            return 0
        say("grading " + ", ".join(lab.folder for lab in labs) + " without a GPU")
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "grader", "grade", str(tree), "--labs",
               ",".join(lab.number for lab in labs), "--no-gpu", "--format", platform,
               "--out", str(out),
               # named as the student knows it, not by the folder it is graded in
               "--name", ", ".join(sorted(placed.values()))]
        if work_dir is not None:
            cmd += ["--work-dir", str(work_dir)]
        # The grader's progress lines (stderr) are passed on as they come; its table and
        # messages (stdout) stay out of the log: results.json holds them.
        lines: list[str] = []
        with tempfile.TemporaryFile("w+", encoding="utf-8") as table:
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=table, stderr=subprocess.PIPE,
                                    text=True, errors="replace")
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append(line)
                print("  " + line.rstrip("\n"), flush=True)
            proc.wait()
            table.seek(0)
            printed = table.read()
        say(f"the grader exited with status {proc.returncode}")
        made = out / platform / "results.json"
        if made.is_file():
            shutil.copyfile(made, results)
            say(f"wrote {results}: {_summary(platform, results)}")
        else:
            tail = ("".join(lines) or printed)[-2000:]
            _write(platform, results, _fallback(
                platform, "The grader could not grade this submission (a problem of the "
                f"grader, not of your code):\n{tail}"))
        return 0


def run(args: argparse.Namespace) -> int:
    try:
        if args.what == "gradescope-zip":
            labs = choose_labs([args.labs] if args.labs else [])
            members = gradescope_zip(labs, args.output)
            print(f"wrote {args.output} ({len(members)} files, labs "
                  f"{', '.join(lab.folder for lab in labs)}): upload it as the assignment's "
                  "autograder (Configure Autograder > Zip file upload)")
            return 0
        return grade_upload(args.platform, args.upload, args.results, args.labs, args.work_dir)
    except KeyError as err:
        print(f"integrations: {err.args[0]}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"integrations: {err}", file=sys.stderr)
        return 1
