"""Forbidden symbols and source patterns."""

import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from grader.static_checks import (check_source, check_symbols, strip_comments, symbol_matches,
                                  undefined_symbols)

DENY = ["cublas", "thrust::", "fopen", "open", "system", "exec", "exit", "abort"]


class SymbolRulesTest(unittest.TestCase):
    def test_rules_start_at_an_identifier_boundary(self):
        self.assertTrue(symbol_matches("exit", "exit"))
        self.assertTrue(symbol_matches("exit", "std::exit(int)"))
        self.assertFalse(symbol_matches("exit", "__cxa_atexit"))
        self.assertFalse(symbol_matches("abort", "__cxa_guard_abort"))
        self.assertTrue(symbol_matches("exec", "execvp"))
        self.assertTrue(symbol_matches("cublas", "cublasSgemm_v2"))
        self.assertTrue(symbol_matches("thrust::", "void thrust::sort<int*>(int*, int*)"))

    def test_what_every_cuda_object_needs_is_allowed(self):
        normal = ["__cudaRegisterFatBinary", "__cxa_atexit", "__cxa_guard_abort", "memcpy",
                  "operator delete(void*, unsigned long)", "__gxx_personality_v0", "strlen"]
        self.assertEqual(check_symbols(normal, DENY, []), [])

    def test_deny_and_allow(self):
        found = check_symbols(["system", "fopen64"], DENY, [])
        self.assertEqual([(v.rule, v.found) for v in found],
                         [("system", "system"), ("fopen", "fopen64")])
        self.assertEqual(check_symbols(["std::_V2::system_category()"], DENY,
                                       ["std::_V2::system_category"]), [])


class SourceRulesTest(unittest.TestCase):
    def test_comments_do_not_count_and_lines_are_kept(self):
        text = "int a; // asm(\n/* asm(\n */ int b;\nasm (\"nop\");\n"
        self.assertEqual(strip_comments(text).count("\n"), text.count("\n"))
        found = check_source(text, "f.cu", ["asm("])
        self.assertEqual([v.found.split(":")[1] for v in found], ["4"])

    def test_spacing_and_identifier_boundary(self):
        self.assertTrue(check_source("#  include<cstdio>", "f.cu", ["#include <cstdio>"]))
        self.assertTrue(check_source("asm volatile (\"\")", "f.cu", ["asm volatile"]))
        self.assertFalse(check_source("x = plasm(1);", "f.cu", ["asm("]))


@unittest.skipUnless(shutil.which("nm") and shutil.which("g++"), "needs nm and g++")
class ObjectFileTest(unittest.TestCase):
    def test_undefined_symbols_of_a_real_object(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "a.cpp"
            src.write_text("#include <cstdlib>\nint f() { return std::system(\"true\"); }\n")
            subprocess.run(["g++", "-c", str(src), "-o", str(Path(tmp) / "a.o")], check=True)
            symbols = undefined_symbols(Path(tmp) / "a.o")
        self.assertIn("system", symbols)
        self.assertEqual([v.rule for v in check_symbols(symbols, DENY, [])], ["system"])


if __name__ == "__main__":
    unittest.main()
