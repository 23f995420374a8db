"""Compile errors found in a build log and shown with the student's own paths."""

import tempfile
import unittest
from pathlib import Path

from grader.workspace import compile_errors, copy_pristine, place_student_file
from grader.paths import find_lab, ROOT

WORK = "/tmp/cml-grade-x/src"
REL = "labs/04_tiled_matmul/tiled_matmul.cu"
FILES = {f"{WORK}/{REL}": REL}

LOG = f"""\
[1/4] Building CUDA object labs/04_tiled_matmul/CMakeFiles/lab04_student.dir/tiled_matmul.cu.o
FAILED: labs/04_tiled_matmul/CMakeFiles/lab04_student.dir/tiled_matmul.cu.o
{WORK}/common/include/cml/check.hpp(40): error: something in a header
{WORK}/{REL}(118): error: identifier "undeclared_thing" is undefined
{WORK}/{REL}(118): error: identifier "undeclared_thing" is undefined
{WORK}/{REL}:12:3: error: expected ';' before '}}' token
2 errors detected in the compilation of "{WORK}/{REL}".
"""


class CompileErrorsTest(unittest.TestCase):
    def test_students_errors_first_with_their_path(self):
        errors = compile_errors(LOG, FILES)
        self.assertEqual(errors[0], f'{REL}:118: error: identifier "undeclared_thing" is undefined')
        self.assertEqual(errors[1], f"{REL}:12: error: expected ';' before '}}' token")
        self.assertEqual(errors[2], "common/include/cml/check.hpp:40: error: something in a header")
        self.assertEqual(len(errors), 3)  # duplicates dropped

    def test_linker_errors_are_kept(self):
        errors = compile_errors("/usr/bin/ld: x.o: undefined reference to `lab04::f()'\n", FILES)
        self.assertEqual(len(errors), 1)


class PristineCopyTest(unittest.TestCase):
    def test_copy_has_only_the_graded_lab_and_takes_only_student_files(self):
        lab = find_lab("04")
        with tempfile.TemporaryDirectory() as tmp:
            dest = Path(tmp) / "src"
            copy_pristine(ROOT, dest, [lab])
            self.assertEqual([p.name for p in (dest / "labs").iterdir()], [lab.folder])
            # A student's copy (grader release) has no solutions/ to copy.
            self.assertEqual((dest / "solutions" / lab.folder).is_dir(),
                             (ROOT / "solutions" / lab.folder).is_dir())
            self.assertFalse((dest / ".git").exists())
            self.assertFalse(any(dest.glob("build*")))
            sub = Path(tmp) / "sub"
            self.assertIn("not in the submission", place_student_file(sub, REL, dest))
            (sub / REL).parent.mkdir(parents=True)
            (sub / REL).write_text("// mine\n")
            self.assertIsNone(place_student_file(sub, REL, dest))
            self.assertEqual((dest / REL).read_text(), "// mine\n")


if __name__ == "__main__":
    unittest.main()
