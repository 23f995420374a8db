"""One GPU lock per GPU: a batch task takes the first free device (its own first), waits
for its own when all are busy, and runs the stage with CUDA_VISIBLE_DEVICES set to it."""

import os
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

from grader import gpu


class PoolTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.base = str(Path(self.tmp.name) / "gpu.lock")
        self.devices = [("0", "GPU-aaa"), ("1", "GPU-bbb")]

    def tearDown(self):
        self.tmp.cleanup()

    def test_lock_files_are_per_device(self):
        self.assertEqual(gpu.lock_path("/tmp/x.lock", "GPU-aaa"), "/tmp/x.gpuGPU-aaa.lock")
        self.assertEqual(gpu.lock_path("/tmp/x.lock", 3), "/tmp/x.gpu3.lock")
        self.assertEqual(gpu.lock_path("/tmp/x.lock"), "/tmp/x.lock")

    def test_own_device_first_then_the_free_one(self):
        with gpu.GpuPool(self.base, self.devices, prefer=0).section("tests") as d:
            self.assertEqual(d, "0")
        with gpu.GpuPool(self.base, self.devices, prefer=3).section("tests") as d:
            self.assertEqual(d, "1")  # task 3 of 2 GPUs: the second
        other = gpu.GpuLock(gpu.lock_path(self.base, "GPU-aaa"))
        with other.section("bench"):  # another task holds GPU 0
            pool = gpu.GpuPool(self.base, self.devices, prefer=0)
            with pool.section("tests") as d:
                self.assertEqual(d, "1")
                with pool.section("bench") as inner:  # nested: the same device
                    self.assertEqual(inner, "1")
                third = gpu.GpuPool(self.base, self.devices, prefer=1)
                self.assertFalse(third.locks[1].try_acquire())  # both busy now
        self.assertTrue(gpu.GpuLock(gpu.lock_path(self.base, "GPU-bbb")).try_acquire())

    def test_timed_section_sets_the_device_and_counts_seconds(self):
        env = {"CUDA_VISIBLE_DEVICES": "0,1"}
        seconds: dict = {}
        pool = gpu.GpuPool(self.base, self.devices, prefer=1)
        section = gpu.timed(gpu.LabSections(pool.section, env).section, seconds)
        with section("bench"):
            self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "1")
        self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "0,1")
        self.assertIn("bench", seconds)
        with gpu.timed(gpu.LabSections(gpu.no_lock, env).section, seconds)("tests"):
            self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "0,1")
        self.assertEqual(set(seconds), {"bench", "tests"})

    def test_no_gpu_listed_uses_the_machines_lock(self):
        pool = gpu.GpuPool(self.base, [], prefer=5)
        with pool.section("tests") as d:
            self.assertIsNone(d)
            self.assertFalse(gpu.GpuLock(self.base).try_acquire())

    def test_visible_devices(self):
        smi = "0, GPU-aaa\n1, GPU-bbb\n2, GPU-ccc\n"
        with mock.patch.object(gpu, "find_tool", return_value="/x/nvidia-smi"), \
                mock.patch.object(gpu, "_output", return_value=smi):
            with mock.patch.dict(os.environ, {}, clear=False):
                os.environ.pop("CUDA_VISIBLE_DEVICES", None)
                self.assertEqual([d for d, _ in gpu.visible_devices()], ["0", "1", "2"])
            with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": "2,0"}):
                self.assertEqual(gpu.visible_devices(), [("2", "GPU-ccc"), ("0", "GPU-aaa")])
        with mock.patch.object(gpu, "find_tool", return_value="/x/nvidia-smi"), \
                mock.patch.object(gpu, "_output", return_value="0, GPU-zzz\n"), \
                mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": "5"}):
            # a Slurm job's cgroup: nvidia-smi sees only its GPU; the UUID names the lock
            self.assertEqual(gpu.visible_devices(), [("5", "GPU-zzz")])


if __name__ == "__main__":
    unittest.main()


class LabSectionsTest(unittest.TestCase):
    """The labs of one grade on the GPU at the same time: tests and sanitizer runs side by
    side, a bench or a profiler run alone, the batch's lock held from the first section
    entered to the last one left."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.base = str(Path(self.tmp.name) / "gpu.lock")

    def tearDown(self):
        self.tmp.cleanup()

    def overlap(self, first: str, second: str, wait: float) -> bool:
        """Whether a section of `second` starts within `wait` seconds while one of `first` is
        open."""
        sections = gpu.LabSections()
        entered = threading.Event()

        def later():
            with sections.section(second):
                entered.set()

        with sections.section(first):
            worker = threading.Thread(target=later)
            worker.start()
            overlapped = entered.wait(wait)
        worker.join(5)
        self.assertTrue(entered.is_set())  # it ran once the first had ended
        return overlapped

    def test_shared_stages_overlap(self):
        self.assertTrue(self.overlap("tests", "sanitizer", wait=10))
        self.assertTrue(self.overlap("tests", "tests", wait=10))

    def test_a_bench_or_a_profiler_runs_alone(self):
        for first, second in [("tests", "bench"), ("bench", "tests"), ("bench", "profiler"),
                              ("sanitizer", "profiler"), ("profiler", "sanitizer")]:
            with self.subTest(first=first, second=second):
                self.assertFalse(self.overlap(first, second, wait=0.5))

    def test_a_waiting_bench_holds_back_new_shared_sections(self):
        sections = gpu.LabSections()
        order: list[str] = []
        bench_waiting = threading.Event()

        def bench():
            bench_waiting.set()
            with sections.section("bench"):
                order.append("bench")

        def tests():
            with sections.section("tests"):
                order.append("tests")

        with sections.section("sanitizer"):
            b = threading.Thread(target=bench)
            b.start()
            bench_waiting.wait(5)
            deadline = time.monotonic() + 10
            while sections._waiting == 0 and time.monotonic() < deadline:
                time.sleep(0.01)  # until the bench waits on the condition
            t = threading.Thread(target=tests)
            t.start()
            time.sleep(0.2)
            self.assertEqual(order, [])
        b.join(5)
        t.join(5)
        self.assertEqual(order, ["bench", "tests"])

    def test_the_outer_lock_is_held_from_first_to_last_and_names_the_device(self):
        env = {"CUDA_VISIBLE_DEVICES": "0,1"}
        pool = gpu.GpuPool(self.base, [("0", "GPU-aaa"), ("1", "GPU-bbb")], prefer=1)
        sections = gpu.LabSections(pool.section, env)
        other = gpu.GpuLock(gpu.lock_path(self.base, "GPU-bbb"))
        first = sections.section("tests")
        self.assertEqual(first.__enter__(), "1")
        with sections.section("sanitizer") as device:
            self.assertEqual(device, "1")
            self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "1")
        self.assertFalse(other.try_acquire())  # the first section still holds it
        time.sleep(0.1)
        first.__exit__(None, None, None)
        self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "0,1")
        self.assertTrue(other.try_acquire())
        self.assertGreaterEqual(sections.busy_seconds, 0.1)  # once, though two overlapped
        self.assertLess(sections.busy_seconds, 1.0)

    def test_the_wait_to_enter_is_counted_apart_from_the_time_inside(self):
        sections = gpu.LabSections()
        seconds: dict = {}
        waited: dict = {}
        section = gpu.timed(sections.section, seconds, waited=waited)
        bench = sections.section("bench")
        bench.__enter__()
        timer = threading.Timer(0.3, lambda: bench.__exit__(None, None, None))
        timer.start()
        with section("tests"):  # waits for the bench to end
            time.sleep(0.02)
        timer.join()
        self.assertGreaterEqual(waited["tests"], 0.25)
        self.assertLess(seconds["tests"], waited["tests"])
