"""Uploads as platforms store them (flat files, Canvas's and Moodle's downloads) mapped onto
the repository's layout, and a batch that takes such a download as it is."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from grader import submissions
from grader.paths import ROOT, discover_labs, find_lab

LAB04 = "labs/04_tiled_matmul/tiled_matmul.cu"
LAB01 = "labs/01_warp_sizing/warp_sizing.cu"


def stage_download(source: Path, out_dir: Path, labs: list) -> Path:
    """What `batch` does with its SUBMISSIONS (read, checked, then written): `source` itself
    unless it is an LMS download or a folder of flat uploads, else the staged folder."""
    staging = submissions.read_download(source, labs)
    return Path(source) if staging is None else submissions.write_staging(staging, out_dir)


class MappingTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-subs-"))
        self.by_name = submissions.student_files_by_name(discover_labs())

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_names_come_from_the_rubrics(self):
        self.assertEqual(self.by_name["tiled_matmul.cu"], LAB04)
        self.assertEqual(self.by_name["warp_sizing.cu"], LAB01)

    def test_flat_upload(self):
        src, dest = self.tmp / "upload", self.tmp / "tree"
        src.mkdir()
        (src / "tiled_matmul.cu").write_text("// mine\n")
        (src / "notes.txt").write_text("x")
        placed = submissions.stage_flat(src, dest, self.by_name)
        self.assertEqual(placed, {LAB04: "tiled_matmul.cu"})
        self.assertEqual((dest / LAB04).read_text(), "// mine\n")
        self.assertFalse((dest / "notes.txt").exists())

    def test_repository_layout_and_nested_folder(self):
        src, dest = self.tmp / "upload", self.tmp / "tree"
        (src / "labs" / "04_tiled_matmul").mkdir(parents=True)
        (src / LAB04).write_text("// laid out\n")
        (src / "lab01" / "deeper").mkdir(parents=True)
        (src / "lab01" / "warp_sizing.cu").write_text("// shallow\n")
        (src / "lab01" / "deeper" / "warp_sizing.cu").write_text("// deep\n")
        placed = submissions.stage_flat(src, dest, self.by_name)
        self.assertEqual((dest / LAB04).read_text(), "// laid out\n")
        self.assertEqual((dest / LAB01).read_text(), "// shallow\n")
        self.assertEqual(placed[LAB01], "lab01/warp_sizing.cu")

    def test_links_are_never_followed(self):
        src, dest = self.tmp / "upload", self.tmp / "tree"
        src.mkdir()
        secret = self.tmp / "secret.cu"
        secret.write_text("// the grader's\n")
        os.symlink(secret, src / "tiled_matmul.cu")
        self.assertEqual(submissions.stage_flat(src, dest, self.by_name), {})
        self.assertFalse((dest / LAB04).exists())

    def test_canvas_names(self):
        m = submissions.CANVAS_RE.match("smithjohn_LATE_12345_67890_tiled_matmul-2.cu")
        self.assertEqual((m.group("login"), m.group("late"), m.group("user"), m.group("sub")),
                         ("smithjohn", "_LATE", "12345", "67890"))
        self.assertEqual(submissions.base_name(m.group("name")), ("tiled_matmul.cu", 2))
        self.assertEqual(submissions.base_name("tiled_matmul.cu"), ("tiled_matmul.cu", 0))
        self.assertIsNone(submissions.CANVAS_RE.match("tiled_matmul.cu"))

    def canvas_download(self) -> Path:
        dl = self.tmp / "canvas"
        dl.mkdir()
        (dl / "smithjohn_12345_1001_tiled_matmul.cu").write_text("// first\n")
        (dl / "smithjohn_12345_1002_tiled_matmul-1.cu").write_text("// again\n")
        (dl / "doejane_LATE_23456_1003_tiled_matmul.cu").write_text("// jane\n")
        (dl / "doejane_LATE_23456_1004_readme.txt").write_text("hi")
        (dl / "leeann_34567_1005_matmul.cu").write_text("// wrong name\n")
        return dl

    def test_canvas_download(self):
        dl = self.canvas_download()
        self.assertEqual(submissions.layout(dl), "canvas")
        staged = stage_download(dl, self.tmp / "out", [find_lab("04")])
        self.assertEqual(staged, self.tmp / "out" / submissions.STAGED)
        self.assertEqual((staged / "smithjohn" / LAB04).read_text(), "// again\n")
        self.assertEqual((staged / "doejane" / LAB04).read_text(), "// jane\n")
        self.assertFalse((staged / "leeann" / LAB04).exists())  # graded: file missing
        info = submissions.read_info(self.tmp / "out")
        self.assertEqual(info["doejane"]["lms_id"], "23456")
        self.assertTrue(info["doejane"]["late"])
        self.assertEqual(info["doejane"]["ignored"], ["doejane_LATE_23456_1004_readme.txt"])
        self.assertEqual(info["leeann"]["files"], {})

    def test_moodle_download(self):
        dl = self.tmp / "moodle"
        (dl / "Smith, John_501_assignsubmission_file_").mkdir(parents=True)
        (dl / "Smith, John_501_assignsubmission_file_" / "tiled_matmul.cu").write_text("// j\n")
        (dl / "Smith, John_502_assignsubmission_file_" / "src").mkdir(parents=True)
        (dl / "Smith, John_502_assignsubmission_file_" / "src" / "tiled_matmul.cu").write_text(
            "// the other John\n")
        (dl / "Müller, Jörg_503_assignsubmission_file_").mkdir()
        self.assertEqual(submissions.layout(dl), "moodle")
        staged = stage_download(dl, self.tmp / "out", [find_lab("04")])
        self.assertEqual(sorted(p.name for p in staged.iterdir() if p.is_dir()),
                         ["Muller_Jorg", "Smith_John_501", "Smith_John_502"])
        self.assertEqual((staged / "Smith_John_502" / LAB04).read_text(), "// the other John\n")
        self.assertEqual(submissions.read_info(self.tmp / "out")["Muller_Jorg"]["name"],
                         "Müller, Jörg")

    def test_folders_of_flat_uploads(self):
        src = self.tmp / "gradescope"
        (src / "submission_101").mkdir(parents=True)
        (src / "submission_101" / "tiled_matmul.cu").write_text("// flat\n")
        (src / "submission_102").mkdir()
        staged = stage_download(src, self.tmp / "out", [find_lab("04")])
        self.assertEqual((staged / "submission_101" / LAB04).read_text(), "// flat\n")
        self.assertTrue((staged / "submission_102").is_dir())

    def test_a_repository_folder_is_left_alone(self):
        src = self.tmp / "class"
        (src / "alice" / "labs").mkdir(parents=True)
        self.assertIsNone(submissions.layout(src))
        self.assertEqual(stage_download(src, self.tmp / "out", []), src)

    def test_batch_takes_a_canvas_download(self):
        dl = self.canvas_download()
        out = self.tmp / "batch"
        proc = subprocess.run([sys.executable, "-m", "grader", "batch", str(dl), "--out",
                               str(out), "--labs", "04", "--slurm"], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        plan = json.loads((out / "batch.json").read_text())
        subs = {s["student"]: Path(s["path"]) for s in plan["submissions"]}
        self.assertEqual(sorted(subs), ["doejane", "leeann", "smithjohn"])
        self.assertEqual((subs["smithjohn"] / LAB04).read_text(), "// again\n")


if __name__ == "__main__":
    unittest.main()
