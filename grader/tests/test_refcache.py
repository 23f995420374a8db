"""The reference cache (grader/refcache.py): its key follows the reference's sources and not
the student's, concurrent fillers build once, a grade with a warm cache builds no reference
target (and grades as before), and builds use the CPUs the process is allowed."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

from grader import bwrap, pipeline, refcache, sandbox, workspace
from grader.paths import ROOT, LabPaths, find_lab
from grader.rubric import load_rubric

from .needs import missing as _missing
from .test_golden import GOLDEN, SEED, make_submission, normalise

LAB = "01_warp_sizing"


def _tree(dest: Path) -> LabPaths:
    """The parts of the repository a lab-01 key hashes, copied to `dest`."""
    for rel in ("CMakeLists.txt", "CMakePresets.json", "cmake", "common", f"labs/{LAB}",
                f"solutions/{LAB}"):
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel)
        elif src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    lab = find_lab("01")
    return LabPaths(lab.folder, lab.number, lab.topic, dest)


def _key(lab: LabPaths, archs: str = "90") -> str:
    return refcache.lab_key(lab.root, lab, archs, "nvcc 13; g++ 12; cmake 3.25")


class KeyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-refkey-"))
        self.lab = _tree(self.tmp)
        self.before = _key(self.lab)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_a_solution_change_makes_a_new_key(self):
        with (self.lab.solution_file).open("a") as f:
            f.write("\n// changed\n")
        self.assertNotEqual(_key(self.lab), self.before)

    def test_a_student_file_change_does_not(self):
        for rel in load_rubric(self.lab).student_files:
            with (self.lab.root / rel).open("a") as f:
                f.write("\n// a student's edit\n")
        self.assertEqual(_key(self.lab), self.before)

    def test_tests_common_toolchain_and_architecture_count(self):
        self.assertNotEqual(_key(self.lab, "80"), self.before)
        self.assertNotEqual(refcache.lab_key(self.lab.root, self.lab, "90", "nvcc 12"),
                            self.before)
        test = next((self.lab.lab_dir / "tests").glob("*.c*"))
        test.write_text(test.read_text() + "\n")
        self.assertNotEqual(_key(self.lab), self.before)
        test.write_text(test.read_text()[:-1])
        self.assertEqual(_key(self.lab), self.before)
        header = next((self.lab.root / "common").rglob("*.h*"))
        header.write_text(header.read_text() + "\n")
        self.assertNotEqual(_key(self.lab), self.before)


def _fake_builder(tmp: Path, source_root: Path, labs, outs) -> None:
    with open(source_root / "builds.log", "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(1.0)  # long enough for the other filler to arrive and wait
    for lab in labs:
        (outs[lab.folder] / "tests_solution").write_text("built")


def _fill(cache_dir: str, root: str) -> None:
    lab = find_lab("01")
    lab = LabPaths(lab.folder, lab.number, lab.topic, Path(root))
    with mock.patch.object(refcache, "cuda_architectures", return_value="90"), \
            mock.patch.object(refcache, "toolchain", return_value="fake"):
        found = refcache.Cache(cache_dir).fill(Path(root), [lab], builder=_fake_builder)
    assert found[lab.folder].binary("tests_solution") is not None


class FillTest(unittest.TestCase):
    def test_two_concurrent_fillers_build_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "repo"
            _tree(root)
            cache = Path(tmp) / "cache"
            ctx = multiprocessing.get_context("fork")
            procs = [ctx.Process(target=_fill, args=(str(cache), str(root))) for _ in range(2)]
            for p in procs:
                p.start()
            for p in procs:
                p.join(60)
            self.assertEqual([p.exitcode for p in procs], [0, 0])
            self.assertEqual(len((root / "builds.log").read_text().split()), 1)
            entries = list((cache / "entries").iterdir())
            self.assertEqual(len(entries), 1)
            self.assertEqual(json.loads((entries[0] / "entry.json").read_text())["lab"], LAB)
            self.assertEqual(list((cache / "tmp").iterdir()), [])  # nothing half-made left
            self.assertEqual((cache / "entries").stat().st_mode & 0o077, 0)  # grader's only
            _fill(str(cache), str(root))  # a third: found, not built
            self.assertEqual(len((root / "builds.log").read_text().split()), 1)

    def test_a_failed_build_leaves_no_entry(self):
        def broken(tmp, source_root, labs, outs):
            (outs[labs[0].folder] / "tests_solution").write_text("half")
            raise RuntimeError("the reference solution did not build")

        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "repo"
            lab = _tree(root)
            store = refcache.Cache(Path(tmp) / "cache")
            with self.assertRaises(RuntimeError):
                store.fill(root, [lab], builder=broken)
            self.assertIsNone(store.lookup(store.key(root, lab)))
            self.assertEqual(list((Path(tmp) / "cache" / "tmp").iterdir()), [])


class CpuTest(unittest.TestCase):
    def test_affinity_and_slurm_allocation(self):
        with mock.patch.object(os, "sched_getaffinity", return_value=set(range(6))):
            with mock.patch.dict(os.environ, {}, clear=False):
                os.environ.pop("SLURM_CPUS_PER_TASK", None)
                self.assertEqual(workspace.usable_cpus(), 6)
            with mock.patch.dict(os.environ, {"SLURM_CPUS_PER_TASK": "4"}):
                self.assertEqual(workspace.usable_cpus(), 4)
            with mock.patch.dict(os.environ, {"SLURM_CPUS_PER_TASK": "64"}):
                self.assertEqual(workspace.usable_cpus(), 6)  # never past the affinity
            with mock.patch.dict(os.environ, {"SLURM_CPUS_PER_TASK": "junk"}):
                self.assertEqual(workspace.usable_cpus(), 6)
        with mock.patch.object(os, "sched_getaffinity", return_value={3}), \
                mock.patch.object(os, "cpu_count", return_value=128):
            self.assertEqual(workspace.usable_cpus(), 1)

    def test_builds_get_that_many_jobs(self):
        seen = {}

        def fake_run(cmd, **kw):
            seen["cmd"] = cmd
            return workspace.sandbox.Outcome(cmd, 0, False, 0.1, "")

        with mock.patch.object(workspace, "usable_cpus", return_value=3), \
                mock.patch.object(workspace.sandbox, "run", fake_run):
            workspace.cmake_build(Path("/b"), ["t"], 60, {})
        self.assertEqual(seen["cmd"][-2:], ["-j", "3"])


@unittest.skipIf(_missing(), f"a real grade needs these, missing here: {_missing()}")
class WarmGradeTest(unittest.TestCase):
    def test_a_warm_cache_builds_no_reference_target_and_grades_the_same(self):
        with tempfile.TemporaryDirectory(prefix="cml-warm-") as tmp:
            tmp = Path(tmp)
            tmp.chmod(0o755)
            cache = tmp / "cache"
            lab = find_lab("01")
            entry = refcache.Cache(cache).fill(ROOT, [lab])[lab.folder]
            stamp = {p.name: p.stat().st_mtime_ns for p in entry.path.iterdir()}
            sub = make_submission("reference", tmp / "sub")
            opts = pipeline.Options(submission=sub, labs=[lab], seed=SEED,
                                    work_dir=tmp / "work", gpu=False, cache=cache)
            said: list[str] = []
            opts.progress = said.append
            got = normalise(json.loads(pipeline.grade(opts).to_json()))
            self.assertEqual(got["errors"], [])
            built = tmp / "work" / "build" / "labs" / lab.folder
            for kind in ("tests_solution", "bench_solution"):
                self.assertFalse((built / f"{lab.tag}_{kind}").exists(), kind)
            self.assertFalse(list(built.glob(f"CMakeFiles/{lab.tag}_solution.dir/**/*.o")))
            self.assertFalse([t for t in said if "reference" in t], said)
            self.assertEqual({p.name: p.stat().st_mtime_ns for p in entry.path.iterdir()},
                             stamp)  # read, never rewritten
            want = json.loads((GOLDEN / "reference.json").read_text())
            self.assertEqual(next(x for x in got["labs"] if x["lab"] == lab.folder),
                             next(x for x in want["labs"] if x["lab"] == lab.folder))

    def test_a_second_grade_copies_the_configured_student_tree(self):
        if not sandbox.isolation().jailed:
            self.skipTest("the configured tree is kept only where the student's tree is "
                          "configured in the jail (no bubblewrap here)")
        with tempfile.TemporaryDirectory(prefix="cml-configured-") as tmp:
            tmp = Path(tmp)
            tmp.chmod(0o755)
            lab, sub = find_lab("01"), make_submission("reference", tmp / "sub")
            refcache.Cache(tmp / "cache").fill(ROOT, [lab])  # the references: not counted
            results = []
            for k in (1, 2):  # a fresh work folder each, as two grades of a batch
                opts = pipeline.Options(submission=sub, labs=[lab], seed=SEED,
                                        work_dir=tmp / f"work{k}", gpu=False,
                                        cache=tmp / "cache")
                results.append(json.loads(pipeline.grade(opts).to_json()))
            first, second = (r["stages"]["prepare"] for r in results)
            self.assertEqual(first["processes"], 1)  # CMake's configure of the student tree
            self.assertEqual(second["processes"], 0)  # copied from the cache instead
            self.assertEqual(len(list((tmp / "cache" / "configured").iterdir())), 1)
            self.assertEqual(*(normalise(r)["labs"] for r in results))


class ConfiguredKeyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-configured-key-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.lab = _tree(self.tmp / "tree")
        self.tree = self.tmp / "tree"
        self.files = refcache.student_files(self.lab)
        self.cache = refcache.Cache(self.tmp / "cache")

    def key(self, options=("-DX=1",)) -> str:
        return self.cache.configured_key(self.tree, self.files, list(options))

    def test_the_student_file_does_not_count_but_everything_else_does(self):
        before = self.key()
        (self.tree / self.files[0]).write_text("// the student's work\n")
        self.assertEqual(self.key(), before)
        self.assertNotEqual(self.key(("-DX=2",)), before)
        (self.tree / self.files[0]).unlink()  # a missing file: CMake's globs see it
        self.assertNotEqual(self.key(), before)
        self.tree.joinpath(self.files[0]).write_text("// back\n")
        (self.tree / "cmake" / "CmlLab.cmake").write_text("# changed\n")
        self.assertNotEqual(self.key(), before)

    def test_kept_then_copied_out_and_never_rewritten(self):
        built = self.tmp / "build"
        (built / "CMakeFiles").mkdir(parents=True)
        (built / "CMakeCache.txt").write_text("CMAKE_HOME_DIRECTORY:INTERNAL=/cml/src\n")
        (built / "CMakeFiles" / "rules.ninja").write_text("rule\n")
        dest = self.tmp / "dest"
        self.assertFalse(self.cache.restore_configured("k", dest, None))
        self.cache.keep_configured("k", built)
        (built / "CMakeCache.txt").write_text("changed after it was kept\n")
        self.cache.keep_configured("k", built)  # the first one kept stands
        owner = (os.getuid(), os.getgid())
        self.assertTrue(self.cache.restore_configured("k", dest, owner))
        self.assertIn("/cml/src", (dest / "CMakeCache.txt").read_text())
        self.assertEqual((dest / "CMakeFiles" / "rules.ninja").stat().st_uid, owner[0])
        self.assertEqual(self.cache.clear(), 0)
        self.assertFalse(self.cache.restore_configured("k", self.tmp / "again", None))


class ConfigureStudentTest(unittest.TestCase):
    """prepare's configure of the student's tree: copied from the cache when it is there,
    kept after a configure in an empty tree only (a batch worker's tree holds what the last
    submission compiled there)."""

    def setUp(self):
        from grader.stages import prepare
        self.prepare = prepare
        self.tmp = Path(tempfile.mkdtemp(prefix="cml-configure-student-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        lab = _tree(self.tmp / "tree")
        self.out = prepare.Prepared(labs=[lab], rubrics={lab.folder: load_rubric(lab)})
        self.calls = 0

    def configure(self, build: Path, cache: Path):
        from grader.stages.job import StudentTree

        def fake(src, build_dir, labs, timeout, env, extra=None, **kw):
            self.calls += 1
            (build_dir / "CMakeCache.txt").write_text("CMAKE_HOME_DIRECTORY:INTERNAL=/cml/src\n")
            return workspace.BuildOutcome(True, 0.1)

        build.mkdir(parents=True, exist_ok=True)
        student = StudentTree(self.tmp / "tree", build, {}, None, bwrap.Jail())
        with mock.patch.object(workspace, "cmake_configure", fake):
            return self.prepare._configure_student(student, self.out, 60, "90", cache)

    def test_a_tree_with_an_earlier_build_is_not_kept(self):
        cache = self.tmp / "cache"
        worker = self.tmp / "worker"
        (worker / "labs").mkdir(parents=True)
        (worker / "labs" / "someone_elses.o").write_bytes(b"\0")
        self.assertTrue(self.configure(worker, cache).ok)
        self.assertFalse(any((cache / "configured").glob("*")))
        self.assertTrue(self.configure(self.tmp / "fresh", cache).ok)  # kept now
        self.assertEqual(self.calls, 2)
        self.assertTrue(self.configure(self.tmp / "next", cache).ok)  # copied, not run
        self.assertEqual(self.calls, 2)
        self.assertTrue((self.tmp / "next" / "CMakeCache.txt").is_file())
        self.assertFalse((self.tmp / "next" / "labs" / "someone_elses.o").exists())

    def test_without_a_cache_it_configures_every_time(self):
        for k in range(2):
            self.assertTrue(self.configure(self.tmp / f"b{k}", None).ok)
        self.assertEqual(self.calls, 2)


class TogetherTest(unittest.TestCase):
    """build.together: one build per tree for every lab; nothing prebuilt when one fails."""

    def jobs(self, missing_second=False):
        from types import SimpleNamespace
        from grader.stages.job import LabJob
        student = SimpleNamespace(build=Path("/sb"), env={}, identity=None, jail=None)
        trees = SimpleNamespace(build=Path("/b"), build_env={}, student=student,
                                references={"01_warp_sizing": object()}, links={})
        out = []
        for key in ("01", "04"):
            lab = find_lab(key)
            out.append(LabJob(lab, load_rubric(lab), trees, 1, 60, 60, False, "",
                              ["x"] if (missing_second and key == "04") else []))
        return out

    def run_together(self, jobs, results):
        from grader.stages import build
        calls = []

        def fake_build(tree, targets, timeout, env, **kw):
            calls.append((str(tree), list(targets)))
            return workspace.BuildOutcome(results.pop(0), 1.0)

        with mock.patch.object(build.workspace, "cmake_build", fake_build):
            build.together(jobs)
        return calls

    def test_one_build_per_tree_with_every_lab(self):
        jobs = self.jobs()
        calls = self.run_together(jobs, [True, True])
        self.assertEqual(calls[0], ("/sb", ["lab01_student", "lab04_student"]))
        self.assertEqual(calls[1][0], "/b")
        linked = calls[1][1]
        self.assertIn("lab01_tests_student", linked)
        self.assertIn("lab04_hidden_student", linked)
        self.assertIn("lab04_bench_solution", linked)  # not cached: built here, once
        self.assertNotIn("lab01_tests_solution", linked)  # in the cache: never rebuilt
        self.assertTrue(all(j.prebuilt is not None and j.prebuilt.outcome.ok for j in jobs))

    def test_a_failed_joint_build_leaves_each_lab_to_build_alone(self):
        for results in ([False], [True, False]):
            jobs = self.jobs()
            self.run_together(jobs, list(results))
            self.assertTrue(all(j.prebuilt is None for j in jobs))

    def test_a_single_lab_builds_as_before(self):
        jobs = self.jobs(missing_second=True)
        self.assertEqual(self.run_together(jobs, []), [])
        self.assertIsNone(jobs[0].prebuilt)


if __name__ == "__main__":
    unittest.main()
