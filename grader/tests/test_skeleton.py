"""The skeleton generator: marker handling and errors."""

import unittest

from grader.course.skeletonize import MarkerError, make_skeleton

SOLUTION = """\
int f(int n) {
  // >>> TODO(lab04): Return twice n.
  return 2 * n;
  // === stub
  // return 0;
  // <<<
}
// >>>
// reference header
// === stub
// // student header
// <<<
"""


class MakeSkeletonTest(unittest.TestCase):
    def test_regions_become_todo_and_stub(self):
        self.assertEqual(
            make_skeleton(SOLUTION),
            "int f(int n) {\n  // TODO(lab04): Return twice n.\n  return 0;\n}\n"
            "// student header\n",
        )

    def test_region_without_stub_disappears(self):
        text = "a\n  // >>> TODO(lab01): Do it.\n  x();\n  // <<<\nb\n"
        self.assertEqual(make_skeleton(text), "a\n  // TODO(lab01): Do it.\nb\n")

    def test_unclosed_region_is_an_error(self):
        with self.assertRaises(MarkerError):
            make_skeleton("// >>> TODO(lab01): x\ncode\n")

    def test_stray_end_is_an_error(self):
        with self.assertRaises(MarkerError):
            make_skeleton("code\n// <<<\n")

    def test_uncommented_stub_line_is_an_error(self):
        with self.assertRaises(MarkerError):
            make_skeleton("  // >>> TODO(lab01): x\n  a;\n  // === stub\n  b;\n  // <<<\n")


if __name__ == "__main__":
    unittest.main()
