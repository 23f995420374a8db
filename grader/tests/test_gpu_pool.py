"""One GPU lock per GPU: a batch task takes the first free device (its own first), waits
for its own when all are busy, and runs the stage with CUDA_VISIBLE_DEVICES set to it."""

import os
import tempfile
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
        section = gpu.timed(gpu.GpuPool(self.base, self.devices, prefer=1).section, seconds,
                            env)
        with section("bench"):
            self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "1")
        self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "0,1")
        self.assertIn("bench", seconds)
        with gpu.timed(gpu.no_lock, seconds, env)("tests"):
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
