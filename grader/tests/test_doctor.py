"""`doctor`: the device limits the handouts ask for (parsed from the CUDA runtime helper's
output, canned here) and the one line it prints without a GPU (the handouts' side is in
test_handouts)."""

from __future__ import annotations

import io
import unittest
from argparse import Namespace
from contextlib import redirect_stdout

from grader import device_limits
from grader.commands import doctor

H100 = """warpSize=32
multiProcessorCount=132
maxThreadsPerBlock=1024
maxThreadsPerMultiProcessor=2048
maxBlocksPerMultiProcessor=32
regsPerMultiprocessor=65536
regsPerBlock=65536
sharedMemPerBlock=49152
sharedMemPerBlockOptin=232448
sharedMemPerMultiprocessor=233472
reservedSharedMemPerBlock=1024
l2CacheSize=52428800
memoryBusWidth=5120
memoryClockRate=2619000
major=9
minor=0
devices=1
"""


class ParserTest(unittest.TestCase):
    def test_an_h100(self):
        limits = device_limits.parse(H100)
        self.assertEqual(limits.error, "")
        self.assertEqual(limits.compute_capability, "9.0")
        self.assertEqual(limits.values["sharedMemPerBlockOptin"], 232448)
        text = "\n".join(device_limits.lines(limits))
        self.assertIn("227 KB (232,448 bytes)", text)
        self.assertIn("50 MB (52,428,800 bytes)", text)
        self.assertIn("2,619 MHz", text)
        self.assertEqual(len(device_limits.lines(limits)), len(device_limits.FIELDS))

    def test_no_gpu_and_garbage(self):
        limits = device_limits.parse("error=no CUDA device\n")
        self.assertEqual((limits.values, limits.error), ({}, "no CUDA device"))
        self.assertEqual(device_limits.lines(limits), [])
        self.assertTrue(device_limits.parse("Segmentation fault\nwarpSize=x\n").error)


class DoctorTest(unittest.TestCase):
    def test_an_old_cmake_is_named(self):
        self.assertTrue(doctor._older("3.22.1", (3, 25)))  # Ubuntu 22.04's
        self.assertFalse(doctor._older("3.25.1", (3, 25)))
        self.assertFalse(doctor._older("4.0.2", (3, 25)))
        self.assertFalse(doctor._older(None, (3, 25)))

    def test_without_a_gpu_one_clear_line(self):
        if device_limits.query().values:
            self.skipTest("this machine has a GPU")
        out = io.StringIO()
        with redirect_stdout(out):
            status = doctor.run(Namespace(json=False))
        text = out.getvalue()
        section = text.split("Device limits")[1].split("\nTools")[0].splitlines()[1:]
        self.assertEqual(len(section), 1, section)
        self.assertIn("no CUDA GPU", section[0])
        self.assertNotIn("insufficient", text)
        self.assertIn(status, (0, 1))  # 1 only when cmake/nvcc/g++ are missing


if __name__ == "__main__":
    unittest.main()
