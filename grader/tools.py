"""The tools grading needs, where they are and which version they are.

`doctor` prints these; `grade` records them in result.json.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CUDA_BIN_DIRS = ("/usr/local/cuda/bin", "/opt/cuda/bin")


def find_tool(name: str) -> str | None:
    """`name` on PATH, else in the usual CUDA install folders."""
    found = shutil.which(name)
    if found:
        return found
    candidates = [os.path.join(d, name) for d in CUDA_BIN_DIRS]
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if cuda_home:
        candidates.insert(0, os.path.join(cuda_home, "bin", name))
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    return None


def _output(cmd: list[str], timeout: float = 30) -> str | None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout + proc.stderr


def _version(cmd: list[str], pattern: str) -> str | None:
    text = _output(cmd)
    if text is None:
        return None
    m = re.search(pattern, text)
    return m.group(1) if m else text.strip().splitlines()[0] if text.strip() else None


@dataclass
class Gpu:
    index: int
    name: str
    compute_capability: str
    driver: str
    memory_mib: int | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    temperature_c: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def query_gpus() -> tuple[list[Gpu], str]:
    """The GPUs nvidia-smi sees, and why the list is empty when it is."""
    smi = find_tool("nvidia-smi")
    if not smi:
        return [], "nvidia-smi not found"
    fields = "index,name,compute_cap,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu"
    text = _output([smi, f"--query-gpu={fields}", "--format=csv,noheader,nounits"])
    if text is None:
        return [], "nvidia-smi found no usable GPU (no driver, or no device)"
    gpus = []
    for line in text.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 4 or not cells[0].isdigit():
            continue

        def num(i: int) -> int | None:
            try:
                return int(float(cells[i]))
            except (IndexError, ValueError):
                return None

        gpus.append(Gpu(int(cells[0]), cells[1], cells[2], cells[3], num(4), num(5), num(6),
                        num(7)))
    return gpus, "" if gpus else "nvidia-smi lists no GPU"


def device_name() -> str:
    """The GPU nvidia-smi lists, by name ("NVIDIA H100 80GB HBM3", then " (x2)" where it
    lists two), or "no GPU": what a measurement says it ran on."""
    gpus, _why = query_gpus()
    if not gpus:
        return "no GPU"
    return gpus[0].name + (f" (x{len(gpus)})" if len(gpus) > 1 else "")


@dataclass
class Toolchain:
    """Paths and versions; a value of None means missing."""

    paths: dict[str, str | None] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)


def probe_toolchain() -> Toolchain:
    tc = Toolchain()
    specs = {
        "cmake": (["--version"], r"cmake version (\S+)"),
        "ninja": (["--version"], r"(\S+)"),
        "nvcc": (["--version"], r"release [\d.]+, V(\S+)"),
        "g++": (["--version"], r"\) (\d+\.\d+\.\d+)"),
        "nm": (["--version"], r"nm.* (\d+\.\d+(?:\.\d+)?)"),
        "ncu": (["--version"], r"Version (\S+)"),
        "compute-sanitizer": (["--version"], r"Version (\S+)"),
        "nvidia-smi": (["--version"], r"(?:NVIDIA-SMI version|DRIVER version)\s*:\s*(\S+)"),
    }
    for name, (args, pattern) in specs.items():
        path = find_tool(name)
        tc.paths[name] = path
        tc.versions[name] = _version([path, *args], pattern) if path else None
    tc.paths["python3"] = sys.executable
    tc.versions["python3"] = ".".join(str(v) for v in sys.version_info[:3])
    return tc


def find_cmake_package(name: str, prefix_path: str | None = None) -> tuple[str | None, str]:
    """(version, where) of the installed CMake package `name` (its <name>ConfigVersion.cmake),
    searched like find_package would: CMAKE_PREFIX_PATH, then /usr/local and /usr."""
    roots = [p for p in (prefix_path or os.environ.get("CMAKE_PREFIX_PATH") or "").split(
        os.pathsep) if p]
    roots += ["/usr/local", "/usr"]
    for root in roots:
        for sub in ("lib/cmake", "lib64/cmake", "share/cmake", "lib/x86_64-linux-gnu/cmake",
                    "lib/aarch64-linux-gnu/cmake"):
            cfg = Path(root) / sub / name / f"{name}ConfigVersion.cmake"
            if cfg.is_file():
                m = re.search(r'PACKAGE_VERSION "([\d.]+)"', cfg.read_text(errors="replace"))
                return (m.group(1) if m else "unknown"), str(cfg.parent)
    return None, ""


def find_catch2(prefix_path: str | None = None) -> tuple[str | None, str]:
    """(version, where) of an installed Catch2, searched like find_package would."""
    return find_cmake_package("Catch2", prefix_path)


def find_nlohmann_json(prefix_path: str | None = None) -> tuple[str | None, str]:
    """(version, where) of an installed nlohmann-json, the JSON library the benches write
    their documents with (Debian: nlohmann-json3-dev), searched like find_package would."""
    return find_cmake_package("nlohmann_json", prefix_path)
