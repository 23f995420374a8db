"""The static checks: allow-lists for the student's object and checks on its preprocessed
source. The fixture tests compile real files with nvcc (grader/tests/fixtures/static/: each
names its lab and what must be refused, or `expect: ok`), every reference solution and every
skeleton; they are skipped where nvcc is missing."""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from grader import costs, static_checks as sc
from grader.costs import Meter
from grader.paths import ROOT, discover_labs, find_lab
from grader.rubric import StaticRules, load_rubric
from grader.static_checks import libraries, objects
from grader.static_checks.nvcc import source_of
from grader.static_checks.rules import glob_re
from grader.tools import find_tool

FIXTURES = Path(__file__).parent / "fixtures" / "static"
NVCC = find_tool("nvcc")
HAVE_TOOLS = bool(NVCC and shutil.which("readelf") and shutil.which("c++filt"))
ARCH = "75"
KEEP = os.environ.get("CML_STATIC_TEST_DIR")  # keep (and reuse) the compiled objects there


def rules_for(folder: str) -> sc.LabRules:
    return sc.load_rules(folder, load_rubric(find_lab(folder)).static)


class PatternTest(unittest.TestCase):
    def test_globs(self):
        p = sc.Patterns([("operator new[](*", ""), ("cu[A-Z]*", ""), ("sqrt[fl]", "")])
        self.assertTrue(p.match("operator new[](unsigned long)"))
        self.assertTrue(p.match("cuStreamCreate"))
        self.assertFalse(p.match("cudaStreamCreate"))  # 'd' is not in [A-Z]
        self.assertTrue(p.match("sqrtf") and p.match("sqrtl"))
        self.assertFalse(p.match("sqrt"))
        self.assertFalse(sc.Patterns([("exit", "")]).match("quick_exit"))  # whole names

    def test_newer_glibcs_names_of_the_c_library_are_allowed(self):
        # glibc 2.38 and later name strtol & co. __isoc23_* where g++ compiles (std::stoi
        # calls them): a fair file must not be refused on such a machine.
        for lab in ("02_coalescing", "04_tiled_matmul"):
            refs = rules_for(lab).references
            for name in ("strtol", "__isoc23_strtol", "__isoc23_strtoull"):
                self.assertTrue(refs.match(name), f"{lab}: {name}")
            self.assertFalse(refs.match("__isoc23_sscanf"))

    def test_path_globs(self):
        rx = glob_re("/inc/*.h", path=True)
        self.assertTrue(rx.match("/inc/stdio.h"))
        self.assertFalse(rx.match("/inc/sub/x.h"))
        self.assertTrue(glob_re("/inc/**", path=True).match("/inc/a/b/c"))

    def test_scope_of_mangled_names(self):
        self.assertEqual(sc.scope_of("_ZN3cml16throw_cuda_errorE9cudaErrorPKcS2_i"), ("cml", "ns"))
        self.assertEqual(sc.scope_of("_ZNSt7__cxx119to_stringEi"), ("std", "ns"))
        self.assertEqual(sc.scope_of("_ZSt9terminatev"), ("std", "ns"))
        self.assertEqual(sc.scope_of("_ZNKSt5ctypeIcE8do_widenEc"), ("std", "ns"))
        self.assertEqual(sc.scope_of("_ZTVN3cml9CudaErrorE"), ("cml", "ns"))
        self.assertEqual(sc.scope_of("_ZZN3cml3fooEvE1x"), ("cml", "ns"))
        self.assertEqual(sc.scope_of("_ZThn16_N3cml1X1fEv"), ("cml", "ns"))
        self.assertEqual(sc.scope_of("_Z10GetElement6Matrixii"), ("GetElement", "global"))
        self.assertEqual(sc.scope_of("_Znwm"), ("operator new", "global"))
        self.assertEqual(sc.scope_of("_ZdlPv"), ("operator delete", "global"))
        self.assertEqual(sc.scope_of("_ZN5lab0412matmul_tiledEPKfS1_Pfi"), ("lab04", "ns"))
        self.assertIsNone(sc.scope_of("cudaEventElapsedTime"))


def _rules() -> sc.LabRules:
    return sc.load_rules("04_tiled_matmul", StaticRules())


class RawSourceTest(unittest.TestCase):
    def test_ordinary_directives_with_bom_and_crlf(self):
        text = "\ufeff#include <cstdio>\r\n#define X 1\r\n#if X\r\n#pragma unroll\r\n#endif\r\n"
        self.assertEqual(sc.check_raw_source(text, "f.cu", _rules()), [])

    def test_line_directives_in_every_spelling(self):
        text = ("int a;\n#line 5 \"/usr/include/stdio.h\"\n  #  12 \"x.h\" 1\n%:line 3\n"
                "/* c */ # \\\nline 9\n// #line 7 (a comment)\n")
        found = sc.check_raw_source(text, "f.cu", _rules())
        self.assertEqual([v.where for v in found], ["f.cu:2", "f.cu:3", "f.cu:4", "f.cu:5"])
        self.assertIn("#line", found[0].describe())


def _ii(student: str, body: list[str]) -> str:
    return "\n".join([f'# 0 "{student}"', '# 0 "<built-in>"', '# 0 "<command-line>"',
                      '# 1 "/usr/include/stdc-predef.h" 1 3 4', '# 0 "<command-line>" 2',
                      f'# 1 "{student}"', *body, ""])


class PreprocessedTextTest(unittest.TestCase):
    """check_preprocessed on hand-written preprocessor output."""

    def check(self, body: list[str], student: str = "/p/labs/04_tiled_matmul/s.cu",
              seen_as: str | None = None, source: str = ""):
        with tempfile.TemporaryDirectory() as tmp:
            host = Path(tmp) / "host.ii"
            host.write_text(_ii(seen_as or student, body))
            pre = sc.Preprocessed(host, [], student, "/nonexistent/cuda/include",
                                  ["/usr/include/c++/12", "/usr/include"])
            return sc.check_preprocessed(pre, _rules(), "/p", "s.cu", source_text=source)

    def test_own_lines_tokens(self):
        r = self.check(["int f() { __asm__ volatile(\"\"); return 0; }",
                        'const char* s = ".incbin x";', "int _ZN3cml1xE;",
                        "int ok = sizeof(assembly);"])
        self.assertEqual(sorted((v.name, v.where) for v in r.violations),
                         [(".incbin", "s.cu:2"), ("_ZN3cml1xE", "s.cu:3"), ("__asm__", "s.cu:1")])

    def test_protected_namespaces(self):
        r = self.check([
            "namespace lab04 { namespace { int helper(int x) { return x; } } }",
            "void f(const cml::CudaError& e);",
            "cml::CompareResult g();",
            "using cml::CudaError;",
            "namespace cg = cooperative_groups;",
            "int h() { cml::compare(1); return std::max(1, 2); }",
            "struct S : public cml::Base { };",
            "int x = cml::value;",
            "std::uint64_t (*keep)() = &f;",
            "std::vector<int> v(3);",
        ])
        self.assertEqual(r.violations, [])
        self.assertEqual(r.facts.touched_namespaces, set())
        r = self.check(["namespace cml { int x; }", "namespace std::chrono { }",
                        "bool cml::compare(int) { return true; }",
                        "template <> struct Catch::StringMaker<float> { };",
                        "namespace alias = cml;", "int alias::y = 1;"])
        self.assertEqual([v.where for v in r.violations],
                         ["s.cu:1", "s.cu:2", "s.cu:3", "s.cu:4", "s.cu:6"])
        self.assertEqual(r.facts.touched_namespaces, {"cml", "std", "Catch"})

    def test_using_directives_and_declarations_open_nothing(self):
        r = self.check(["using namespace std;", "using namespace cooperative_groups;",
                        "using namespace std::chrono;", "using std::string;",
                        "using cml::CudaError;", "string name() { return to_string(1); }",
                        "namespace lab04 { using namespace std; int f(); }"])
        self.assertEqual(r.violations, [])
        self.assertEqual(r.facts.touched_namespaces, set())
        self.assertIn("name", r.facts.declared_globals)
        r = self.check(["using namespace std;", "namespace std { int x; }"])
        self.assertEqual([(v.name, v.where) for v in r.violations], [("namespace std", "s.cu:2")])

    def test_identifiers_remember_their_first_line(self):
        r = self.check(["int a;", "void f() { fopen(0, 0); }", "void g() { fopen(0, 0); }"])
        self.assertEqual(r.facts.first_seen["fopen"], "s.cu:2")
        self.assertEqual(r.facts.first_seen["a"], "s.cu:1")

    def test_attributes_and_pragmas(self):
        r = self.check(["int a __attribute__((section(\".text\")));",
                        "[[gnu::alias(\"x\")]] int b();", "int c __attribute__((aligned(16)));",
                        "#pragma unroll 4", "#pragma GCC diagnostic push",
                        "#pragma redefine_extname a b"])
        self.assertEqual(sorted(v.name for v in r.violations),
                         ["#pragma redefine_extname a b", "alias", "section"])

    def test_line_markers(self):
        r = self.check(["int a;", '# 40 "/usr/include/stdio.h"', "int hidden;"])
        self.assertEqual([(v.name, v.where) for v in r.violations], [("#line", "s.cu:1")])
        r = self.check(["int a;", '# 1 "/etc/passwd" 1', "root:x:0:0", '# 2 "/p/labs/04_tiled_matmul/s.cu" 2'])
        self.assertEqual([(v.kind, v.name, v.where) for v in r.violations],
                         [("include", "/etc/passwd", "s.cu:2")])
        self.assertEqual(r.files, ["/etc/passwd", "/usr/include/stdc-predef.h"])

    def test_paths_seen_in_a_jail(self):
        # The compiler ran where the project is /jail/src: its markers say so.
        main = "/jail/src/labs/04_tiled_matmul/s.cu"
        r = self.check(['# 1 "/jail/src/labs/04_tiled_matmul/tiled_matmul.cuh" 1',
                        f'# 2 "{main}" 2', "int a;", '# 1 "/jail/src/solutions/x.cu" 1',
                        f'# 4 "{main}" 2', "asm(\"\");"], seen_as=main)
        self.assertEqual([(v.kind, v.name, v.where) for v in r.violations],
                         [("include", "solutions/x.cu", "s.cu:3"), ("source", "asm", "s.cu:4")])

    def test_own_lines_not_found_is_a_check_error(self):
        with self.assertRaises(sc.CheckError):
            self.check(["int a;"], seen_as="/elsewhere/other.cu")

    def test_a_file_of_directives_alone_has_no_own_lines_to_find(self):
        # A stub that only includes the lab's header: nothing of its own survives
        # preprocessing, and that is no fault of the grader's (the link names what is missing).
        source = ('#include <cuda_runtime.h>\n#include "tiled_matmul.cuh"\n'
                  "#define TILE \\\n  16\n// nothing yet\n")
        r = self.check([], source=source)
        self.assertEqual((r.own_lines, r.violations), (0, []))
        with self.assertRaises(sc.CheckError):  # code of its own that never showed up
            self.check([], source=source + "int lab04_helper();\n")


class MessageTest(unittest.TestCase):
    """Every refusal the object check can give names its symbol, the student's line that
    asked for it (when the source check saw it) and what to do instead."""

    # One symbol of each family of refused references (objects._FAMILIES), in order.
    FAMILY_EXAMPLES = ["cuStreamCreate", "cudaStreamCreate", "cudaDeviceReset",
                       "cudaProfilerStart", "dlopen", "fopen", "std::thread::_M_start_thread("
                       "std::unique_ptr<std::thread::_State, "
                       "std::default_delete<std::thread::_State> >, void (*)())", "sigaction",
                       "posix_spawn", "socket", "syscall", "environ", "at_quick_exit"]

    def facts(self, *names: str) -> sc.SourceFacts:
        facts = sc.SourceFacts()
        for k, name in enumerate(names):
            facts.identifiers.add(name)
            facts.first_seen[name] = f"s.cu:{k + 7}"
        return facts

    def test_every_family_of_refused_references(self):
        self.assertEqual(len(self.FAMILY_EXAMPLES), len(objects._FAMILIES),
                         "give every family of objects._FAMILIES an example here")
        rules = _rules()
        for (pattern, why, fix), name in zip(objects._FAMILIES, self.FAMILY_EXAMPLES):
            with self.subTest(symbol=name):
                self.assertTrue(re.match(pattern, name))
                written = name.split("(")[0].split("::")[-2 if "::" in name else -1]
                found = objects._check_reference(sc.Symbol(name, name, "GLOBAL", "FUNC", "UND"),
                                                 rules, self.facts(written))
                self.assertEqual(len(found), 1)
                text = found[0].describe()
                self.assertIn(f"`{name}`", text)
                self.assertTrue(text.startswith("s.cu:7: "), text)
                self.assertIn(why, text)
                self.assertIn(fix, text)

    def test_the_lab_and_generated_only_refusals(self):
        rules = sc.load_rules("07_occupancy", StaticRules(
            refuse_reference=["cudaOccupancy*"], refuse_why="compute it yourself"))
        name = "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags"
        found = objects._check_reference(sc.Symbol(name, name, "GLOBAL", "FUNC", "UND"), rules,
                                         self.facts("cudaOccupancyMaxActiveBlocksPerMultiprocessor"))
        self.assertEqual([v.where for v in found], ["s.cu:7"])
        self.assertIn(f"`{name}`", found[0].describe())
        self.assertIn("compute it yourself", found[0].describe())
        found = objects._check_reference(sc.Symbol("atexit", "atexit", "GLOBAL", "FUNC", "UND"),
                                         rules, self.facts("atexit"))
        self.assertIn("`atexit`", found[0].describe())
        self.assertIn("leave it to the compiler", found[0].describe())
        self.assertEqual(objects._check_reference(
            sc.Symbol("atexit", "atexit", "GLOBAL", "FUNC", "UND"), rules, self.facts()), [])

    def test_every_kind_of_refused_definition(self):
        rules = _rules()
        exports = {"puts": "libc.so.6"}
        cases = [  # (mangled, demangled, bind, harness, fragment of the reason)
            ("cudaEventElapsedTime", "cudaEventElapsedTime", "GLOBAL", set(), "protected"),
            ("main", "main", "GLOBAL", set(), "protected"),
            ("__wrap_cudaLaunchKernel", "__wrap_cudaLaunchKernel", "WEAK", set(), "protected"),
            ("__libc_x", "__libc_x", "GLOBAL", set(), "reserved"),
            ("g_seed", "g_seed", "GLOBAL", {"g_seed"}, "defined by the harness"),
            ("puts", "puts", "GLOBAL", set(), "libc.so.6"),
            ("_ZN3cml7compareEv", "cml::compare()", "GLOBAL", set(), "namespace `cml`"),
            ("_Znwm", "operator new(unsigned long)", "GLOBAL", set(), "replaces the C++"),
            ("_ZN5lab0412matmul_naiveEv", "lab04::matmul_naive()", "GLOBAL",
             {"_ZN5lab0412matmul_naiveEv"}, "the harness"),
        ]
        with mock.patch.object(objects, "system_exports", return_value=exports):
            for mangled, shown, bind, harness, reason in cases:
                with self.subTest(symbol=shown):
                    written = shown.split("(")[0].split("::")[-1].replace("operator ", "")
                    v = objects._check_definition(
                        sc.Symbol(mangled, shown, bind, "FUNC", "1"), rules,
                        self.facts(written), set(), harness if bind == "GLOBAL" else set(),
                        harness)
                    self.assertIsNotNone(v, shown)
                    text = v.describe()
                    self.assertIn(f"`{shown}`", text)
                    self.assertIn(reason, text)
                    self.assertTrue(text.startswith("s.cu:7: "), text)
                    self.assertTrue("namespace `lab04`" in text or "new/delete" in text, text)

    def test_definitions_that_collide_with_nothing(self):
        rules = _rules()
        with mock.patch.object(objects, "system_exports", return_value={"puts": "libc.so.6"}):
            for mangled, shown, typ in (
                    ("g_verbose", "g_verbose", "OBJECT"),  # a C++ variable at global scope
                    ("_Z9cudaCheck9cudaErrorPKci", "cudaCheck(cudaError, char const*, int)",
                     "FUNC"),
                    ("_Z10cudaMallocIfE9cudaErrorPPT_m",
                     "cudaError cudaMalloc<float>(float**, unsigned long)", "FUNC"),
                    ("my_helper", "my_helper", "FUNC")):  # extern "C", named like nothing
                with self.subTest(symbol=shown):
                    self.assertIsNone(objects._check_definition(
                        sc.Symbol(mangled, shown, "GLOBAL", typ, "1"), rules, self.facts(),
                        set(), set(), set()))

    def test_c_name_clash_reads_the_system_libraries(self):
        if not (shutil.which("g++") and shutil.which("readelf")):
            self.skipTest("needs g++ and readelf")
        exports = libraries.system_exports()
        self.assertEqual(exports.get("puts"), "libc.so.6")
        self.assertEqual(exports.get("sqrt") in ("libc.so.6", "libm.so.6"), True)
        self.assertNotIn("g_verbose", exports)
        self.assertIn("libc.so.6", objects.c_name_clash("environ", _rules(), set()))
        self.assertIsNone(objects.c_name_clash("launch_count", _rules(), set()))


class StageOrderTest(unittest.TestCase):
    """`grader check` and `grader grade` run a lab's static checks as soon as the student's
    file has compiled, before any of the student's code runs: a refusal stops the lab
    there, and no test, sanitizer or benchmark (no GPU stage) is reached."""

    def grade(self, violations: list[sc.Violation], has_gpu: bool = True):
        from grader.result import LabResult, PartResult
        from grader.stages import lab as lab_stage

        calls: list[str] = []

        def record(name, value=None):
            def call(*_args, **_kwargs):
                calls.append(name)
                return value
            return call

        built = mock.Mock(compiled=True)
        built.outcome.ok = True
        part = PartResult("static", "Static checks", "graded", 0.0, 0.0, "", {})
        tested = mock.Mock(canonical=[], runs={}, log=[])
        job = mock.Mock(missing=False, has_gpu=has_gpu, costs=Meter())
        with mock.patch.multiple(lab_stage.build, reference=record("build.reference"),
                                 student=record("build.student", built),
                                 binaries=record("build.binaries", dict.fromkeys(
                                     lab_stage.build.STUDENT_KINDS)),
                                 part=record("build.part"),
                                 quiet_part=record("build.quiet_part")), \
                mock.patch.multiple(lab_stage.static, check=record("static", (part, violations))), \
                mock.patch.multiple(lab_stage.tests, prepare=record("tests.prepare", (None, [])),
                                    run=record("tests.run", tested)), \
                mock.patch.object(lab_stage, "score_parts", record("score_parts")), \
                mock.patch.multiple(lab_stage.kinds, finish_unfinished=record("finish")):
            result = LabResult("04_tiled_matmul", "t", 0.0, 100.0)
            lab_stage.grade_lab(job, result)
        return calls, result

    def test_a_refusal_stops_the_lab_before_anything_runs(self):
        from grader.result import STATIC_VIOLATION

        calls, result = self.grade([sc.Violation("reference", "fopen", "s.cu:3", "no files")])
        self.assertEqual(calls[:3], ["build.reference", "build.student", "static"])
        self.assertFalse([c for c in calls if c.startswith(("tests.", "score_parts"))], calls)
        self.assertEqual(result.failure, STATIC_VIOLATION)

    def test_the_checks_come_before_the_tests_and_the_gpu_stages(self):
        calls, result = self.grade([])
        self.assertLess(calls.index("static"), calls.index("tests.run"))
        self.assertLess(calls.index("tests.run"), calls.index("score_parts"))
        self.assertIsNone(result.failure)


# --- compiled fixtures --------------------------------------------------------------------------


@dataclass
class Fixture:
    path: Path
    lab: str
    compile: bool
    harness: list[str]
    expect: list[tuple[str, str, int | None]]  # (kind, fragment of the name, line)

    @property
    def ok(self) -> bool:
        return not self.expect


def read_fixture(path: Path) -> Fixture:
    lab, compile_, harness, expect = "", True, [], []
    for line in path.read_text().splitlines():
        m = re.match(r"//\s*(lab|compile|harness|expect):\s*(.*)$", line)
        if not m:
            continue
        key, value = m.group(1), m.group(2).strip()
        if key == "lab":
            lab = value
        elif key == "compile":
            compile_ = value != "no"
        elif key == "harness":
            harness.append(value)
        elif value != "ok":
            at = re.search(r"\s@(\d+)$", value)
            if at:
                value = value[:at.start()]
            kind, fragment = value.split(None, 1)
            expect.append((kind, fragment, int(at.group(1)) if at else None))
    assert lab, f"{path.name} names no lab"
    return Fixture(path, lab, compile_, harness, expect)


def _compile(cmd: list[str]) -> None:
    src, obj = Path(source_of(cmd)), Path(cmd[cmd.index("-o") + 1])
    if KEEP and obj.is_file() and obj.stat().st_mtime > src.stat().st_mtime:
        return  # CML_STATIC_TEST_DIR: objects kept from an earlier run
    proc = subprocess.run(["nice", *cmd], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"nvcc failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")


@unittest.skipUnless(HAVE_TOOLS, "needs nvcc, readelf and c++filt")
@unittest.skipUnless(FIXTURES.is_dir(), "the fixtures are not in this copy (a student release)")
class CompiledTest(unittest.TestCase):
    """Real objects: fixtures in a copy of the repository's layout (so `../../solutions/...`
    resolves as from a student's file), references and skeletons where they are."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(KEEP or tempfile.mkdtemp(prefix="cml-static-")).resolve()
        shutil.rmtree(cls.tmp / "proj", ignore_errors=True)
        cls.proj = cls.tmp / "proj"
        shutil.copytree(ROOT / "common" / "include", cls.proj / "common" / "include")
        (cls.proj / "solutions").symlink_to(ROOT / "solutions")
        cls.fixtures = [read_fixture(p) for p in sorted(FIXTURES.glob("*.cu"))]
        for lab in {f.lab for f in cls.fixtures}:
            dest = cls.proj / "labs" / lab
            dest.mkdir(parents=True)
            for header in (ROOT / "labs" / lab).iterdir():
                if header.suffix in (".cuh", ".hpp", ".h"):
                    shutil.copy2(header, dest)
            (dest / "tests").symlink_to(ROOT / "labs" / lab / "tests")
        # A fair fixture with a UTF-8 BOM and CRLF line ends.
        fair = FIXTURES / "fair_pg_matmul.cu"
        crlf = "\ufeff" + fair.read_text().replace("\n", "\r\n")
        cls.extra = cls.proj / "labs" / "04_tiled_matmul" / "fair_crlf_bom.cu"
        cls.extra.write_bytes(crlf.encode("utf-8"))
        jobs: dict[str, list[str]] = {}
        cls.objects: dict[str, Path] = {}
        for f in cls.fixtures:
            src = cls.proj / "labs" / f.lab / f.path.name
            shutil.copy2(f.path, src)
            if f.compile:
                obj = cls.tmp / "obj" / (f.path.stem + ".o")
                jobs[f.path.name] = sc.student_compile_command(NVCC, cls.proj, f.lab, src,
                                                               (ARCH,), obj=obj)
                cls.objects[f.path.name] = obj
            for h in f.harness:
                obj = cls.tmp / "obj" / ("harness_" + Path(h).stem + "_" + f.lab + ".o")
                jobs["harness:" + h] = sc.student_compile_command(NVCC, ROOT, f.lab, ROOT / h,
                                                                  (ARCH,), obj=obj)
                cls.objects["harness:" + h] = obj
        cls.objects["fair_crlf_bom.cu"] = cls.tmp / "obj" / "fair_crlf_bom.o"
        jobs["fair_crlf_bom.cu"] = sc.student_compile_command(
            NVCC, cls.proj, "04_tiled_matmul", cls.extra, (ARCH,), obj=cls.objects["fair_crlf_bom.cu"])
        cls.labs = discover_labs()
        cls.labs_by_folder = {lab.folder: lab for lab in cls.labs}
        for lab in cls.labs:
            for kind, src in (("solution", lab.solution_file), ("skeleton", lab.student_file)):
                if src.is_file():
                    obj = cls.tmp / "obj" / f"{kind}_{lab.folder}.o"
                    jobs[f"{kind}:{lab.folder}"] = sc.student_compile_command(
                        NVCC, ROOT, lab.folder, src, (ARCH,), obj=obj)
                    cls.objects[f"{kind}:{lab.folder}"] = obj
        (cls.tmp / "obj").mkdir(exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(_compile, jobs.values()))

    @classmethod
    def tearDownClass(cls):
        if not KEEP:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_checks(self, src: Path, lab: str, project: Path, obj: Path | None,
                   harness: list[Path] = ()) -> list[sc.Violation]:
        rules = rules_for(lab)
        cmd = sc.student_compile_command(NVCC, project, lab, src, (ARCH,),
                                         obj=self.tmp / "pp.o")
        with tempfile.TemporaryDirectory(dir=self.tmp) as work:
            pre = sc.preprocess(cmd, Path(work), sc.local_run())
            return self._checked(pre, src, lab, project, obj, harness, rules)

    def _checked(self, pre, src, lab, project, obj, harness, rules) -> list[sc.Violation]:
        display = os.path.relpath(src, project)
        report = sc.check_preprocessed(pre, rules, str(project), display)
        found = list(report.violations)
        if obj is not None:
            ref = self.objects.get(f"solution:{lab}")
            found += sc.check_object(obj, ref, rules, report, harness)
        return found

    def check_fixture(self, f: Fixture, src: Path | None = None, name: str | None = None):
        src = src or self.proj / "labs" / f.lab / f.path.name
        obj = self.objects.get(name or f.path.name)
        harness = [self.objects["harness:" + h] for h in f.harness]
        found = self.run_checks(src, f.lab, self.proj, obj, harness)
        shown = "\n".join(v.describe() for v in found)
        if f.ok:
            self.assertEqual(found, [], f"{f.path.name}: fair code was refused:\n{shown}")
            return
        for kind, fragment, line in f.expect:
            hits = [v for v in found if v.kind == kind and fragment in v.name
                    and (line is None or v.where.endswith(f":{line}"))]
            self.assertTrue(hits, f"{f.path.name}: expected a '{kind}' refusal naming "
                            f"'{fragment}'" + (f" at line {line}" if line else "")
                            + f"; found:\n{shown}")
        for v in found:  # every refusal says what is wrong and where to look
            self.assertTrue(v.why and v.describe())

    def test_fair_fixtures_pass(self):
        fair = [f for f in self.fixtures if f.ok]
        self.assertGreaterEqual(len(fair), 3)
        for f in fair:
            with self.subTest(fixture=f.path.name):
                self.check_fixture(f)

    def test_fair_fixture_with_bom_and_crlf(self):
        f = read_fixture(FIXTURES / "fair_pg_matmul.cu")
        self.check_fixture(f, src=self.extra, name="fair_crlf_bom.cu")

    def test_cheat_fixtures_are_refused(self):
        cheats = [f for f in self.fixtures if not f.ok]
        self.assertGreaterEqual(len(cheats), 20)
        for f in cheats:
            with self.subTest(fixture=f.path.name):
                self.check_fixture(f)

    def test_every_reference_solution_and_skeleton_passes(self):
        checked = 0
        for lab in self.labs:
            for kind, src in (("solution", lab.solution_file), ("skeleton", lab.student_file)):
                key = f"{kind}:{lab.folder}"
                if key not in self.objects:
                    continue
                with self.subTest(lab=lab.folder, kind=kind):
                    found = self.run_checks(src, lab.folder, ROOT, self.objects[key])
                    self.assertEqual(found, [], "\n".join(v.describe() for v in found))
                    checked += 1
        self.assertGreaterEqual(checked, 14)

    def test_interface_is_the_references_strong_definitions(self):
        names = sc.demangle(sorted(sc.interface_of(self.objects["solution:04_tiled_matmul"])))
        self.assertIn("lab04::matmul_tiled(float const*, float const*, float*, int)", names)
        self.assertIn("lab04::choose_tile(int, unsigned long)", names)

    def test_a_strong_interface_definition_replaces_the_harness_weak_one(self):
        # Lab 04's given code defines the optional bonus weakly (bonus_not_attempted.cu), so a
        # file without it links; a file that defines it (the reference) is not refused for
        # redefining the harness, and one without it passes (fair_pg_matmul.cu).
        weak = self.objects["harness:labs/04_tiled_matmul/bonus_not_attempted.cu"]
        name = "lab04::matmul_register_tiled(float const*, float const*, float*, int)"
        syms, _ = sc.read_symbols(weak)
        self.assertEqual({s.bind for s in syms if s.demangled == name and not s.undefined},
                         {"WEAK"})
        reference = self.objects["solution:04_tiled_matmul"]
        self.assertIn(name, sc.demangle(sorted(sc.interface_of(reference))))
        found = self.run_checks(self.labs_by_folder["04_tiled_matmul"].solution_file,
                                "04_tiled_matmul", ROOT, reference, [weak])
        self.assertEqual(found, [], "\n".join(v.describe() for v in found))
        fair = read_fixture(FIXTURES / "fair_pg_matmul.cu")
        self.assertIn("labs/04_tiled_matmul/bonus_not_attempted.cu", fair.harness)
        self.check_fixture(fair)

    def test_objects_read_together_read_as_each_alone(self):
        # One readelf and one c++filt for many objects: each object's table is the one
        # read_symbols gives it alone; a kept table is not read again while the file is
        # unchanged, and is read again once it changed.
        objs = sorted({self.objects[k] for k in ("solution:04_tiled_matmul",
                                                 "fair_pg_matmul.cu",
                                                 "cheat_occupancy_api.cu")})
        alone = {o: sc.read_symbols(o) for o in objs}
        counted: list[list[str]] = []
        real = costs.run

        def count(cmd, **kwargs):
            counted.append(cmd)
            return real(cmd, **kwargs)

        with mock.patch.object(costs, "run", count):
            together = sc.read_symbols_of(objs, keep=True)
            self.assertEqual(len(counted), 2, counted)  # readelf and c++filt, once each
            self.assertEqual(together, alone)
            self.assertEqual(sc.read_symbols_of(objs, keep=True), alone)
            self.assertEqual(len(counted), 2, "kept tables were read again")
            copy = self.tmp / "changed.o"
            shutil.copyfile(objs[0], copy)
            self.assertEqual(sc.read_symbols_of([copy], keep=True)[copy], alone[objs[0]])
            shutil.copyfile(objs[1], copy)  # the file changed: read again
            self.assertEqual(sc.read_symbols_of([copy], keep=True)[copy], alone[objs[1]])

    def test_exit_from_a_device_helper_alone_is_allowed(self):
        # The fair Programming Guide MatMul references exit only through nvcc's stubs.
        syms, _ = sc.read_symbols(self.objects["fair_pg_matmul.cu"])
        self.assertIn("exit", {s.name for s in syms if s.undefined})

    def test_a_lab_refusal_overrides_the_shared_list(self):
        # Lab 07 refuses the occupancy queries the shared list allows everywhere else.
        obj = self.objects["cheat_occupancy_api.cu"]
        for lab, refused in (("07_occupancy", True), ("04_tiled_matmul", False)):
            with self.subTest(lab=lab):
                found = sc.check_object(obj, None, rules_for(lab), sc.SourceReport())
                names = [v.name for v in found if v.name.startswith("cudaOccupancy")]
                self.assertEqual(bool(names), refused, [v.describe() for v in found])
                if refused:
                    self.assertIn("labs/07_occupancy/grading.toml", found[0].why)
                    self.assertIn("computing occupancy", found[0].why)

    def test_a_global_of_ones_own_collides_with_nothing(self):
        found = self.run_checks(self.proj / "labs" / "04_tiled_matmul" / "cheat_c_collisions.cu",
                                "04_tiled_matmul", self.proj,
                                self.objects["cheat_c_collisions.cu"])
        self.assertEqual(sorted(v.name for v in found),
                         ["_Hidden_state", "__libc_answer", "environ", "optind", "puts"])
        by_name = {v.name: v.describe() for v in found}
        self.assertIn("libc.so.6", by_name["puts"])
        self.assertIn("reserved", by_name["__libc_answer"])

    def test_preprocessing_failure_is_a_check_error(self):
        bad = self.tmp / "bad.cu"
        bad.write_text('#include "no_such_header.h"\n')
        cmd = sc.student_compile_command(NVCC, self.proj, "04_tiled_matmul", bad, (ARCH,),
                                         obj=self.tmp / "bad.o")
        with self.assertRaises(sc.CheckError):
            sc.preprocess(cmd, self.tmp / "bad", sc.local_run())


if __name__ == "__main__":
    unittest.main()


class StandInTest(unittest.TestCase):
    """A weak function of the lab's given code (lab 04's optional bonus) is the student's to
    replace, also in the student copy, where no reference object names the interface; an
    inline function the harness instantiates (weak too, in a COMDAT section) is not."""

    def setUp(self):
        if not (shutil.which("g++") and shutil.which("readelf") and shutil.which("c++filt")):
            self.skipTest("needs g++, readelf and c++filt")
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-standin-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def compile(self, folder: str, text: str) -> Path:
        src = self.tmp / f"{folder.replace('.', '_')}.cpp"
        src.write_text(text)
        (self.tmp / folder).mkdir()
        obj = self.tmp / folder / "given.o"
        subprocess.run(["g++", "-O2", "-fno-inline", "-c", str(src), "-o", str(obj)], check=True)
        return obj

    def test_a_given_stand_in_is_replaceable_and_an_inline_helper_is_not(self):
        header = ("namespace lab04 { inline int helper(int x) { return x + 1; } "
                  "void bonus(int n); }\n")
        # A stand-in that always throws lands in .text.unlikely, as lab 04's does.
        given = header + ("namespace lab04 { __attribute__((weak)) void bonus(int n) "
                          "{ throw n; } }\nint use(int x) { return lab04::helper(x); }\n")
        student = ("namespace lab04 { int helper(int x) { return x + 2; } "
                   "void bonus(int n) { (void)n; } }\n")
        student_obj = self.compile("student.dir", student)
        for folder, replaceable in (("lab04_given.dir", True), ("lab04_public_tests.dir", False)):
            with self.subTest(harness=folder):
                harness = self.compile(folder, given)
                found = sc.check_object(student_obj, None, rules_for("04_tiled_matmul"),
                                        sc.SourceReport(), [harness])
                named = {v.name.split("(")[0] for v in found}
                self.assertIn("lab04::helper", named, [v.describe() for v in found])
                self.assertEqual("lab04::bonus" not in named, replaceable,
                                 [v.describe() for v in found])
