"""LMS gradebooks: the batch's gradebook joined to a roster, Canvas's and Moodle's import
CSVs checked against their formats, and `batch --collect --roster --export` end to end on a
Canvas download with results made by hand."""

import csv
import io
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from grader.exports import lms
from grader.paths import ROOT

from .test_exports import grade, graded_lab, no_gpu_lab

# Canvas's gradebook import: these identity columns first, then one column per assignment,
# and a "Points Possible" row first. Moodle's CSV import: an identifier column it can map
# (e-mail, ID number, username) and one column per grade item.
CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_IDENTIFIERS = {"Email address", "ID number", "Username"}
LAB = lms.LabColumn("04_tiled_matmul", "Tiled matrix multiplication", 100.0)

GRADEBOOK = [
    {"student": "smithjohn", "04_tiled_matmul": "46.67", "total": "46.67", "max_points": "100",
     "status": "graded"},
    {"student": "doejane", "04_tiled_matmul": "", "total": "", "max_points": "",
     "status": "error"},
]
CANVAS_ROSTER = [
    {"Student": "Smith, John", "ID": "12345", "SIS User ID": "s001", "SIS Login ID": "jsmith",
     "Section": "CUDA 101 A", "Lab 4: Tiling (777)": ""},
    {"Student": "Doe, Jane", "ID": "23456", "SIS User ID": "s002", "SIS Login ID": "jdoe",
     "Section": "CUDA 101 B", "Lab 4: Tiling (777)": ""},
    {"Student": "Lee, Ann", "ID": "34567", "SIS User ID": "s003", "SIS Login ID": "alee",
     "Section": "CUDA 101 A", "Lab 4: Tiling (777)": ""},
]
DOWNLOADS = {"smithjohn": {"lms_id": "12345", "name": "smithjohn"},
             "doejane": {"lms_id": "23456", "name": "doejane"}}


def parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


class JoinTest(unittest.TestCase):
    def test_canvas_roster_by_id(self):
        rows = lms.join_roster(GRADEBOOK, CANVAS_ROSTER, DOWNLOADS)
        self.assertEqual(list(rows[0])[:7], ["student", *lms.IDENTITY])
        self.assertEqual((rows[0]["name"], rows[0]["sis_login_id"], rows[0]["section"]),
                         ("Smith, John", "jsmith", "CUDA 101 A"))
        self.assertEqual(rows[1]["id"], "23456")
        self.assertEqual((rows[2]["name"], rows[2]["status"]), ("Lee, Ann", "no submission"))

    def test_moodle_roster_by_name_and_email(self):
        roster = [{"First name": "John", "Last name": "Smith", "ID number": "s001",
                   "Email address": "john.smith@uni.example"}]
        rows = lms.join_roster([{"student": "Smith_John", "status": "graded"}], roster, {})
        self.assertEqual((rows[0]["email"], rows[0]["sis_user_id"]),
                         ("john.smith@uni.example", "s001"))
        rows = lms.join_roster([{"student": "john.smith@uni.example", "status": "graded"}],
                               roster)
        self.assertEqual(rows[0]["name"], "Smith, John")


class CanvasTest(unittest.TestCase):
    def test_format(self):
        rows = lms.join_roster(GRADEBOOK, CANVAS_ROSTER, DOWNLOADS)
        table = parse(lms.to_canvas(rows, [LAB], list(CANVAS_ROSTER[0])))
        header, possible = table[0], table[1]
        self.assertEqual(header[:5], CANVAS_IDENTITY)
        self.assertEqual(header[5:], ["Lab 4: Tiling (777)"])  # the course's own assignment
        self.assertEqual(possible[0].strip(), "Points Possible")
        self.assertEqual(possible[5], "100")
        self.assertEqual(table[2], ["Smith, John", "12345", "s001", "jsmith", "CUDA 101 A",
                                    "46.67"])
        self.assertEqual(table[3][5], "")  # not graded: left blank, never a 0
        for name in ("total", "max_points", "status", "04_tiled_matmul"):
            self.assertNotIn(name, header)  # each column would become an assignment

    def test_new_assignment_name(self):
        table = parse(lms.to_canvas(lms.join_roster(GRADEBOOK, [], DOWNLOADS), [LAB]))
        self.assertEqual(table[0][5], "Lab 04: Tiled matrix multiplication")
        self.assertEqual(table[2][1], "12345")  # the ID from the download's file names


class ProvisionalTest(unittest.TestCase):
    """A grade made without a GPU (host parts only) never lands in the lab's own column of
    an LMS import: it goes in a column named provisional."""

    ROWS = [{"student": "ann", "04_tiled_matmul": "45", "04_tiled_matmul status": "provisional",
             "status": "graded", "id": "1"},
            {"student": "bob", "04_tiled_matmul": "90", "04_tiled_matmul status": "complete",
             "status": "graded", "id": "2"}]

    def test_canvas(self):
        table = parse(lms.to_canvas(self.ROWS, [LAB], ["Lab 4: Tiling (777)"]))
        self.assertEqual(table[0][5:], ["Lab 4: Tiling (777)", LAB.provisional_label])
        self.assertIn("provisional: host parts only", LAB.provisional_label)
        self.assertEqual([r[5:] for r in table[1:]], [["100", "100"], ["", "45"], ["90", ""]])

    def test_canvas_reuses_the_provisional_assignment_of_an_earlier_import(self):
        course = ["Lab 4: Tiling (777)", f"{LAB.provisional_label} (778)"]
        table = parse(lms.to_canvas(self.ROWS, [LAB], course))
        self.assertEqual(table[0][5:], course)
        course.reverse()  # the provisional assignment is never taken for the lab's own
        self.assertEqual(parse(lms.to_canvas(self.ROWS, [LAB], course))[0][5],
                         "Lab 4: Tiling (777)")

    def test_moodle(self):
        table = parse(lms.to_moodle(self.ROWS, [LAB]))
        self.assertEqual(table[0][4:], [lms.moodle_header(LAB),
                                        f"{LAB.provisional_label} (out of 100)"])
        self.assertEqual([r[4:] for r in table[1:]], [["", "45"], ["90", ""]])

    def test_no_provisional_column_without_provisional_grades(self):
        rows = self.ROWS[1:]
        self.assertEqual(len(parse(lms.to_canvas(rows, [LAB]))[0]), 6)
        self.assertEqual(len(parse(lms.to_moodle(rows, [LAB]))[0]), 5)


class MoodleTest(unittest.TestCase):
    def test_format(self):
        rows = lms.join_roster(GRADEBOOK, [{"Email address": "js@uni.example",
                                            "Username": "smithjohn"}], {})
        table = parse(lms.to_moodle(rows, [LAB]))
        self.assertTrue(MOODLE_IDENTIFIERS <= set(table[0]))
        self.assertEqual(table[0][-1], "Lab 04: Tiled matrix multiplication (out of 100)")
        self.assertEqual(len(table), 1 + len(rows))  # no points-possible row in Moodle's
        self.assertEqual((table[1][0], table[1][-1]), ("js@uni.example", "46.67"))
        self.assertEqual(lms.unidentified(rows, "moodle"), ["doejane"])


class BatchCommandTest(unittest.TestCase):
    def test_collect_with_roster_and_exports(self):
        tmp = Path(tempfile.mkdtemp(prefix="cml-lms-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        dl = tmp / "canvas"
        dl.mkdir()
        (dl / "smithjohn_12345_1_tiled_matmul.cu").write_text("// a\n")
        (dl / "doejane_LATE_23456_2_tiled_matmul.cu").write_text("// b\n")
        out = tmp / "out"

        def grader(*args):
            return subprocess.run([sys.executable, "-m", "grader", "batch", *args], cwd=ROOT,
                                  capture_output=True, text=True, timeout=120)

        proc = grader(str(dl), "--out", str(out), "--labs", "04", "--slurm", "--seed", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for student, lab in (("smithjohn", graded_lab()), ("doejane", no_gpu_lab())):
            (out / student).mkdir()
            (out / student / "result.json").write_text(grade(lab).to_json())
        roster = tmp / "roster.csv"
        with roster.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(CANVAS_ROSTER[0]))
            writer.writeheader()
            writer.writerow(dict.fromkeys(CANVAS_ROSTER[0], "") | {"Student": "Points Possible",
                                                                   "Lab 4: Tiling (777)": "100"})
            writer.writerows(CANVAS_ROSTER)
        self.assertEqual(grader("--collect", str(out), "--export", "blackboard").returncode, 1)
        proc = grader("--collect", str(out), "--roster", str(roster), "--export",
                      "canvas,moodle")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        book = parse((out / "gradebook.csv").read_text())
        self.assertEqual(book[0][:7], ["student", *lms.IDENTITY])
        by_student = {r[0]: r for r in book[1:]}
        self.assertEqual(by_student["doejane"][3], "s002")
        self.assertEqual(by_student["alee"][-1], "no submission")
        canvas = parse((out / "canvas-import.csv").read_text())
        by_id = {r[1]: r for r in canvas[2:]}
        self.assertEqual(by_id["12345"][0], "Smith, John")
        # doejane was graded without a GPU: her 15 are the host parts' only, so they go in
        # a column of their own, named provisional, never in the course's assignment
        provisional = "Lab 04: Tiled matrix multiplication (provisional: host parts only)"
        self.assertEqual(canvas[0], [*CANVAS_IDENTITY, "Lab 4: Tiling (777)", provisional])
        self.assertEqual(canvas[1][5:], ["100", "100"])  # Points Possible
        self.assertEqual(by_id["12345"][5:], ["46.67", ""])
        self.assertEqual(by_id["23456"][5:], ["", "15"])
        self.assertEqual(by_id["34567"][5:], ["", ""])  # no submission: left blank
        moodle = parse((out / "moodle-import.csv").read_text())
        self.assertEqual(moodle[0][-1], f"{provisional} (out of 100)")
        self.assertIn(["", "s001", "jsmith", "Smith, John", "46.67", ""], moodle)
        self.assertIn(["", "s002", "jdoe", "Doe, Jane", "", "15"], moodle)
        self.assertNotIn("no identifier", proc.stderr)  # ID number and username: enough
        # alee is on the roster only: "no submission" in the gradebook and in summary.md
        self.assertIn("## No submission (on the roster only)\n\n1 student(s) of the roster "
                      "have no submission in the batch (status `no submission`, left blank in "
                      "the LMS files): Lee, Ann.", (out / "summary.md").read_text())
        for name in ("canvas-import.csv", "moodle-import.csv"):
            self.assertIn(f"batch: {name}: 1 grade(s) are PROVISIONAL, host parts only",
                          proc.stderr)


if __name__ == "__main__":
    unittest.main()
