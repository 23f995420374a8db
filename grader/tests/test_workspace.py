"""Compile errors found in a build log and shown with the student's own paths; every shape
a student file can have in a submission placed or refused with a message."""

import os
import shutil
import stat
import tempfile
import unittest
from pathlib import Path

from grader import workspace
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


# An empty lab 04 file: it compiles, and the link of the tests and the runner finds none of
# the lab's functions (GNU ld's words; one name left mangled, as with --no-demangle).
STUB_LOG = """\
[3/9] Linking CXX executable labs/04_tiled_matmul/lab04_tests_student
FAILED: labs/04_tiled_matmul/lab04_tests_student
/usr/bin/ld: CMakeFiles/lab04_public_tests.dir/tests/test_register_tiled.cpp.o: in function \
`std::_Function_handler<void (), lab04::(anonymous namespace)::run()::{lambda()#1}>::_M_invoke(\
std::_Any_data const&)':
test_register_tiled.cpp:(.text._ZNSt17_Function_handlerIFvvEZN5lab0412_GLOBAL__N_13runEvEUlvE_E9\
_M_invokeERKSt9_Any_data+0x2a): undefined reference to `lab04::register_tiled_matmul(float \
const*, float const*, float*, int)'
test_tiled.cpp:(.text+0x11c): undefined reference to `lab04::register_tiled_matmul(float const*, \
float const*, float*, int)'
runner.cpp:(.text+0x91): undefined reference to `_ZN5lab0422choose_tile_for_deviceEi'
runner.cpp:(.text+0x99): undefined reference to `my_helper()'
collect2: error: ld returned 1 exit status
""".replace("\\\n", "")


class LinkProblemTest(unittest.TestCase):
    """An empty or stub file names the functions it does not define, by their plain names,
    never the linker's mangled lines (issue 36, item 3)."""

    def test_undefined_functions_are_named_plainly(self):
        errors = compile_errors(STUB_LOG, FILES)
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("2 function(s) of the lab's interface", errors[0])
        self.assertIn("lab04::register_tiled_matmul(float const*, float const*, float*, int); "
                      "lab04::choose_tile_for_device(int).", errors[0])
        self.assertIn("Called but defined nowhere: my_helper().", errors[0])
        for linker in ("_ZN", "(.text", "ld returned", "undefined reference"):
            self.assertNotIn(linker, errors[0])

    def test_other_linkers_words(self):
        for log in ("ld.lld: error: undefined symbol: lab04::tiled_matmul(int)\n",
                    "nvlink error   : Undefined reference to '_ZN5lab0412tiled_matmulEi' in "
                    "'x.o'\n"):
            self.assertEqual(workspace.undefined_functions(log), ["lab04::tiled_matmul(int)"])
        self.assertIsNone(workspace.link_problem(LOG))  # a compile error is no link problem

    def build_part(self, compiled, log):
        from types import SimpleNamespace
        from grader.stages import build
        outcome = workspace.BuildOutcome(False, 1.0, False, [], log)
        built = build.StudentBuild(compiled, outcome, compile_errors(log, FILES), "")
        job = SimpleNamespace(build_timeout=600.0, trees=SimpleNamespace(work=Path(WORK)))
        return build.part(job, built)

    def test_the_build_part_says_the_code_compiles(self):
        reason = self.build_part(True, STUB_LOG).reason
        self.assertTrue(reason.startswith("Your code compiles, but 2 function(s) of the lab's "
                                          "interface"), reason)
        self.assertNotIn("does not compile", reason)
        self.assertIn("lab04::choose_tile_for_device(int)", reason)
        # a compile error is still one
        self.assertTrue(self.build_part(False, LOG).reason.startswith(
            "Your code does not compile:\n" + REL), self.build_part(False, LOG).reason)


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


class SubmissionShapesTest(unittest.TestCase):
    """What stands at a student file's path: a file is placed; anything else is refused with
    a message naming the path and what to submit, never an exception."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.sub, self.dest = Path(tmp.name) / "sub", Path(tmp.name) / "dest"
        (self.sub / REL).parent.mkdir(parents=True)

    def place(self) -> str | None:
        return place_student_file(self.sub, REL, self.dest)

    def assert_refused(self, *words: str) -> None:
        problem = self.place()
        self.assertIsNotNone(problem)
        self.assertTrue(problem.startswith(REL), problem)
        for word in words:
            self.assertIn(word, problem)
        self.assertFalse((self.dest / REL).exists())

    def test_a_folder(self):
        (self.sub / REL).mkdir()
        (self.sub / REL / "kernel.cu").write_text("// mine\n")
        self.assert_refused("is a folder", "submit " + REL + " as a regular file")

    def test_a_fifo(self):
        os.mkfifo(self.sub / REL)
        self.assert_refused("named pipe", "as a regular file")  # and did not wait for a writer

    def test_a_device(self):
        try:
            os.mknod(self.sub / REL, 0o644 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            self.skipTest("making a device node needs root")
        self.assert_refused("character device", "as a regular file")

    def test_a_file_that_cannot_be_read(self):
        (self.sub / REL).write_text("// mine\n")
        (self.sub / REL).chmod(0)
        if os.access(self.sub / REL, os.R_OK):
            self.skipTest("root reads a file of mode 000")
        self.assert_refused("cannot be read", "as a regular file")

    def test_a_symbolic_link(self):
        (self.sub / REL).symlink_to("/etc/hostname")
        self.assert_refused("symbolic link")

    def test_a_lab_folder_that_is_a_file(self):
        shutil.rmtree((self.sub / REL).parent)
        (self.sub / REL).parent.write_text("not a folder\n")
        self.assert_refused("cannot be read", "as a regular file")

    def test_a_file_over_the_limit_says_the_limit_and_that_it_is_there(self):
        # Issue 36, item 12: not "larger than 4 MiB" as if nothing had been submitted.
        with (self.sub / REL).open("wb") as f:
            f.truncate(50 * 1024 * 1024)
        self.assert_refused(" is in the submission (50.0 MiB), but it is larger than the 4 MiB "
                            "limit for a student file")

    def test_a_nul_byte_is_said_plainly(self):
        # Issue 36, item 12: a NUL byte in the source was graded without a word.
        (self.sub / REL).write_bytes(b"// mine\nint x;\x00\n")
        self.assert_refused("holds a NUL byte (line 2, byte 15)", "save it as plain text")
        (self.sub / REL).write_bytes("// mine\n".encode("utf-16"))
        self.assert_refused("is saved as UTF-16", "save it as UTF-8")

    def test_a_folder_left_where_the_file_goes_is_replaced(self):
        (self.sub / REL).write_text("// mine\n")
        (self.dest / REL).mkdir(parents=True)
        self.assertIsNone(self.place())
        self.assertEqual((self.dest / REL).read_text(), "// mine\n")


if __name__ == "__main__":
    unittest.main()
