"""The GPU limits the handouts ask for, read from the CUDA runtime (libcudart through ctypes,
standard library only) by a child process, so a driver that hangs or crashes cannot take the
grader with it. The child prints `key=value` lines (`parse` reads them); without a usable
GPU it prints `error=<why>`.

Each field is a cudaDeviceAttr of the runtime (driver_types.h), named like the
cudaDeviceProp field the handouts quote.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from dataclasses import dataclass

# (key, cudaDeviceAttr value, label, unit) in the order doctor prints them.
FIELDS = (
    ("warpSize", 10, "warp size", "threads"),
    ("multiProcessorCount", 16, "SMs", ""),
    ("maxThreadsPerBlock", 1, "max threads per block", ""),
    ("maxThreadsPerMultiProcessor", 39, "max threads per SM", ""),
    ("maxBlocksPerMultiProcessor", 106, "max blocks per SM", ""),
    ("regsPerMultiprocessor", 82, "registers per SM", ""),
    ("regsPerBlock", 12, "registers per block", ""),
    ("sharedMemPerBlock", 8, "shared memory per block", "bytes"),
    ("sharedMemPerBlockOptin", 97, "shared memory per block, opt-in", "bytes"),
    ("sharedMemPerMultiprocessor", 81, "shared memory per SM", "bytes"),
    ("reservedSharedMemPerBlock", 111, "shared memory reserved per block", "bytes"),
    ("l2CacheSize", 38, "L2 cache", "bytes"),
    ("memoryBusWidth", 37, "memory bus width", "bits"),
    ("memoryClockRate", 36, "memory clock (peak)", "kHz"),
)
CC = (("major", 75), ("minor", 76))

_CHILD = r"""
import ctypes, sys
paths = sys.argv[2:]
lib = None
for p in paths:
    try:
        lib = ctypes.CDLL(p); break
    except OSError:
        pass
if lib is None:
    print("error=the CUDA runtime library (libcudart) was not found"); sys.exit(0)
lib.cudaGetErrorString.restype = ctypes.c_char_p
n = ctypes.c_int(0)
rc = lib.cudaGetDeviceCount(ctypes.byref(n))
if rc == 35:  # "insufficient driver": also what a machine without any driver is told
    try:
        ctypes.CDLL("libcuda.so.1")
        why = "the NVIDIA driver is older than this CUDA runtime"
    except OSError:
        why = "no NVIDIA driver"
    print(f"error={why}"); sys.exit(0)
if rc != 0 or n.value <= int(sys.argv[1]):
    why = {0: "no CUDA device", 100: "the NVIDIA driver sees no GPU"}.get(
        rc, lib.cudaGetErrorString(rc).decode())
    print(f"error={why}"); sys.exit(0)
dev = int(sys.argv[1])
props = %s
for key, attr in props:
    v = ctypes.c_int(0)
    if lib.cudaDeviceGetAttribute(ctypes.byref(v), attr, dev) == 0:
        print(f"{key}={v.value}")
print(f"devices={n.value}")
""" % repr([(k, a) for k, a, _, _ in FIELDS] + list(CC))


@dataclass
class Limits:
    values: dict[str, int]
    error: str = ""

    @property
    def compute_capability(self) -> str:
        if "major" in self.values and "minor" in self.values:
            return f"{self.values['major']}.{self.values['minor']}"
        return ""


def parse(text: str) -> Limits:
    """Limits from the child's `key=value` lines; `error=...` says why there are none."""
    values, error = {}, ""
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep:
            continue
        if key == "error":
            error = value.strip()
        else:
            try:
                values[key] = int(value)
            except ValueError:
                continue
    if not values and not error:
        error = "the CUDA runtime answered nothing"
    return Limits(values, error)


def runtime_libraries() -> list[str]:
    """Where libcudart may be: CUDA_HOME / CUDA_PATH, /usr/local/cuda, the loader's path."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    found = []
    for root in filter(None, roots):
        for sub in ("lib64", "lib", "targets/*/lib"):
            found += sorted(glob.glob(os.path.join(root, sub, "libcudart.so*")))
    found += ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    return list(dict.fromkeys(found))


def query(device: int = 0, timeout: float = 30.0) -> Limits:
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(device),
                               *runtime_libraries()], capture_output=True, text=True,
                              timeout=timeout)
    except (OSError, subprocess.SubprocessError) as err:
        return Limits({}, f"could not ask the CUDA runtime: {err}")
    if proc.returncode != 0:
        return Limits({}, f"the CUDA runtime query failed (exit {proc.returncode})")
    return parse(proc.stdout)


def _value(key: str, value: int, unit: str) -> str:
    if unit == "bytes":
        if value >= 1 << 20 and value % (1 << 20) == 0:
            return f"{value >> 20} MB ({value:,} bytes)"
        return f"{value / 1024:g} KB ({value:,} bytes)" if value >= 1024 else f"{value} bytes"
    if unit == "kHz":
        return f"{value // 1000:,} MHz"
    return f"{value:,}" + (f" {unit}" if unit else "")


def lines(limits: Limits) -> list[str]:
    """What doctor prints: one line per limit, named as in cudaDeviceProp."""
    out = []
    for key, _, label, unit in FIELDS:
        if key in limits.values:
            out.append(f"{label:<34} {_value(key, limits.values[key], unit):<28} ({key})")
    return out
