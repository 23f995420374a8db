"""The grader's CTest entries (grader/CMakeLists.txt) as CTest lists them: every unit test
module (grader/tests/test_*.py) runs in exactly one entry, or, split by test class, each of
its classes does; each entry carries the host and grader labels and a time limit of its own,
the slow ones the "slow" label; they start in the order grader/CMakeLists.txt lists; and the
unit entries share the run's reference cache, emptied first by grader.refcache_reset, as the
grader's default cache (XDG_CACHE_HOME) and by name (CML_TEST_REFCACHE).

grader/CMakeLists.txt is configured alone, inside a throwaway project that needs no
compiler, so the check takes a second or two."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import refcache
from grader.paths import ROOT

TESTS = ROOT / "grader" / "tests"
MODULE = re.compile(r"^grader\.tests\.(test_\w+)(?:\.(\w+))?$")  # a module, or a class of it

WRAPPER = """cmake_minimum_required(VERSION 3.24)
project(grader_entries NONE)
enable_testing()
set(Python3_EXECUTABLE "{python}")
add_subdirectory("{grader}" grader)
"""


def _modules() -> set[str]:
    return {p.stem for p in TESTS.glob("test_*.py")}


def _classes(module: str) -> set[str]:
    """The test classes of a module: those that hold tests."""
    found: set[str] = set()

    def walk(suite: unittest.TestSuite) -> None:
        for test in suite:
            if isinstance(test, unittest.TestSuite):
                walk(test)
            else:
                found.add(type(test).__name__)
    walk(unittest.defaultTestLoader.loadTestsFromModule(
        importlib.import_module(f"grader.tests.{module}")))
    return found


@unittest.skipUnless(shutil.which("cmake") and shutil.which("ctest"),
                     "listing the CTest entries needs cmake and ctest")
class SuiteEntriesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory(prefix="cml-entries-") as tmp:
            src, build = Path(tmp) / "src", Path(tmp) / "build"
            src.mkdir()
            (src / "CMakeLists.txt").write_text(WRAPPER.format(
                python=Path(sys.executable).as_posix(), grader=(ROOT / "grader").as_posix()))
            configured = subprocess.run(["cmake", "-S", str(src), "-B", str(build)],
                                        capture_output=True, text=True, timeout=120)
            if configured.returncode != 0:
                raise AssertionError("grader/CMakeLists.txt does not configure:\n"
                                     + configured.stdout[-2000:] + configured.stderr[-2000:])
            listed = subprocess.run(["ctest", "--test-dir", str(build),
                                     "--show-only=json-v1"], capture_output=True, text=True,
                                    timeout=120, check=True)
        cls.entries = {}
        for test in json.loads(listed.stdout)["tests"]:
            props = {p["name"]: p["value"] for p in test.get("properties", [])}
            cls.entries[test["name"]] = (test.get("command", []), props)

    def modules_of(self, command: list[str]) -> list[tuple[str, str | None]]:
        """The test modules a command runs, each with the class it names (None: all of
        them); a command that discovers them is refused (what it runs cannot be read from
        it)."""
        self.assertNotIn("discover", command, "an entry that discovers modules runs all of "
                         "them: name the modules instead")
        return [(m.group(1), m.group(2)) for arg in command if (m := MODULE.match(arg))]

    def test_every_module_runs_in_exactly_one_entry(self):
        runs: dict[str, list[tuple[str, str | None]]] = {}
        for name, (command, _props) in self.entries.items():
            for module, cls in self.modules_of(command):
                runs.setdefault(module, []).append((name, cls))
        self.assertEqual(sorted(set(runs) - _modules()), [], "entries name missing modules")
        self.assertEqual(sorted(_modules() - set(runs)), [], "modules no entry runs")
        for module, where in sorted(runs.items()):
            with self.subTest(module):
                if len(where) == 1 and where[0][1] is None:
                    continue
                self.assertNotIn(None, [cls for _name, cls in where],
                                 f"run whole and in parts too: {where}")
                classes = [cls for _name, cls in where]
                self.assertEqual(sorted(c for c in set(classes) if classes.count(c) > 1), [],
                                 f"classes run by more than one entry: {where}")
                self.assertEqual(sorted(_classes(module) - set(classes)), [],
                                 "classes no entry runs")
                self.assertEqual(sorted(set(classes) - _classes(module)), [],
                                 "entries name classes the module does not have")

    def test_labels_and_time_limits(self):
        for name, (command, props) in self.entries.items():
            with self.subTest(name):
                labels = props.get("LABELS", [])
                self.assertLessEqual({"host", "grader"}, set(labels))
                if not self.modules_of(command):
                    continue
                self.assertGreater(props.get("TIMEOUT", 0), 0, "no time limit of its own")
                if name.startswith("grader.unit."):
                    self.assertEqual("slow" in labels, name != "grader.unit.fast")

    def test_the_entries_start_in_the_listed_order(self):
        # Without timings of its own (a fresh build tree, as in CI) CTest starts the entries
        # with the highest COST first: those grader/CMakeLists.txt lists in
        # CML_GRADER_SLOW_TESTS, in its order, all before every other entry.
        text = (ROOT / "grader" / "CMakeLists.txt").read_text()
        listed = re.search(r"set\(CML_GRADER_SLOW_TESTS\s(.*?)\)", text, re.S)
        self.assertIsNotNone(listed)
        names = [item.split("=")[0] for item in listed.group(1).split()]
        order = [f"grader.{n}" if f"grader.{n}" in self.entries else f"grader.unit.{n}"
                 for n in names]
        order = [n for n in order if n in self.entries]  # a student copy leaves some out
        self.assertIn("grader.unit.fast", order)
        cost = {name: props.get("COST", 0) for name, (_command, props) in self.entries.items()}
        self.assertEqual(sorted(order, key=lambda n: -cost[n]), order)
        self.assertEqual(len({cost[n] for n in order}), len(order), "two entries tie")
        others = [n for n in self.entries if n not in order]
        self.assertTrue(others)
        self.assertGreater(min(cost[n] for n in order), max(cost[n] for n in others))
        slow = [n for n, (_c, props) in self.entries.items() if "slow" in props.get("LABELS", [])]
        self.assertTrue(slow, "no slow entries: nothing to order")
        self.assertLessEqual(set(slow), set(order))

    def test_unit_entries_share_the_reset_cache(self):
        reset = self.entries["grader.refcache_reset"]
        self.assertEqual(reset[1].get("FIXTURES_SETUP"), ["cml_grader_refcache"])
        emptied = Path(reset[0][-1])
        units = [n for n in self.entries if n.startswith("grader.unit.")]
        self.assertIn("grader.unit.fast", units)
        for name in units:
            with self.subTest(name):
                props = self.entries[name][1]
                env = dict(v.split("=", 1) for v in props.get("ENVIRONMENT", []))
                # the grader's default cache there is the one the tests name
                self.assertEqual(Path(env["XDG_CACHE_HOME"]), emptied)
                with mock.patch.dict(os.environ, {"XDG_CACHE_HOME": env["XDG_CACHE_HOME"]}):
                    self.assertEqual(refcache.default_dir(), Path(env["CML_TEST_REFCACHE"]))
                self.assertEqual(props.get("FIXTURES_REQUIRED"), ["cml_grader_refcache"])


if __name__ == "__main__":
    unittest.main()


class StudentCopyModulesTest(unittest.TestCase):
    """Every test module a student copy keeps loads there, where the files `release` leaves
    out (grader/course/copy_files.py EXCLUDE: the lab fixtures, the golden results...) are
    missing: a module that needs them skips its tests instead of raising at import, which
    `python3 -m unittest MODULE` (a CTest entry) reports as an error (issue 36, item 1)."""

    def test_every_kept_module_loads_without_the_left_out_files(self):
        import fnmatch
        from grader.course.copy_files import EXCLUDE
        tmp = Path(tempfile.mkdtemp(prefix="cml-copy-modules-"))
        self.addCleanup(shutil.rmtree, tmp, True)

        def left_out(folder: str, names: list[str]) -> set[str]:
            rel = Path(folder).relative_to(ROOT).as_posix()
            return {n for n in names if any(fnmatch.fnmatch(f"{rel}/{n}", p) or
                                            fnmatch.fnmatch(f"{rel}/{n}/x", p)
                                            for p in EXCLUDE)}

        shutil.copytree(ROOT / "grader", tmp / "grader", ignore=left_out)
        for top in ("labs", "common", "cmake", "handouts", "docs"):
            (tmp / top).symlink_to(ROOT / top)
        kept = sorted(p.stem for p in (tmp / "grader" / "tests").glob("test_*.py"))
        self.assertIn("test_metrics", kept)
        self.assertNotIn("test_golden", kept)
        script = ("import sys, unittest\n"
                  "for name in sys.argv[1:]:\n"
                  "    try:\n"
                  "        unittest.TestLoader().loadTestsFromName(name)\n"
                  "    except BaseException as err:\n"
                  "        print(f'{name}: {type(err).__name__}: {err}')\n")
        proc = subprocess.run([sys.executable, "-c", script,
                               *[f"grader.tests.{m}" for m in kept]], cwd=tmp,
                              capture_output=True, text=True, timeout=600)
        self.assertEqual((proc.returncode, proc.stdout), (0, ""), proc.stderr[-3000:])
        proc = subprocess.run([sys.executable, "-m", "unittest", "grader.tests.test_metrics",
                               "grader.tests.test_profiler_pass"], cwd=tmp,
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        self.assertIn("OK (skipped=2)", proc.stderr)
