"""Preprocessing the student's file exactly as the build compiles it: the build's nvcc command
(from compile_commands.json, or made as cmake/CmlLab.cmake makes it), nvcc's own commands
from `--dryrun`, and its host pass and one device pass per architecture run into files of
ours through a caller's RunFn (the pipeline's runs them in the sandbox: the source is
untrusted)."""

from __future__ import annotations

import concurrent.futures
import functools
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .. import costs
from .results import CheckError


# A runner: argv -> (exit status, or None when it was killed on its time limit; its output).
RunFn = Callable[[list[str]], "tuple[int | None, str]"]


def local_run(timeout: float = 300.0) -> RunFn:
    """A RunFn that runs the command here, unsandboxed (for the grader's own files and tests)."""
    def run(argv: list[str]) -> tuple[int | None, str]:
        try:
            proc = costs.run(argv, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, ""
        return proc.returncode, proc.stdout + proc.stderr
    return run


@dataclass
class Preprocessed:
    """The preprocessed student file: one host pass and one device pass per architecture."""

    host: Path
    device: list[Path]
    student_file: str  # the student's file as the compiler saw it (absolute)
    toolkit_include: str  # the CUDA toolkit's include folder, as the compiler saw it
    search_dirs: list[str]  # the host compiler's <...> search list


def student_compile_command(nvcc: str, project: Path, lab_folder: str, source: Path,
                            archs: Sequence[str] = ("75",), build_type: str = "Release",
                            obj: Path | None = None) -> list[str]:
    """The nvcc command the build uses for the student's file (cmake/CmlLab.cmake: the lab's
    folder and common/include on the include path, C++17, -lineinfo; CMake's flags for the
    build type; one --generate-code per architecture)."""
    flags = {"Release": ["-O3", "-DNDEBUG"], "Debug": ["-g"],
             "RelWithDebInfo": ["-O2", "-g", "-DNDEBUG"], "MinSizeRel": ["-Os", "-DNDEBUG"]}
    cmd = [nvcc, f"-I{project / 'labs' / lab_folder}", f"-I{project / 'common' / 'include'}",
           *flags.get(build_type, []), "-std=c++17"]
    for a in archs:
        cmd.append(f"--generate-code=arch=compute_{a},code=[compute_{a},sm_{a}]")
    cmd += ["-lineinfo", "-c", str(source), "-o", str(obj or source.with_suffix(".o"))]
    return cmd


def compile_command_from_db(build: Path, source: Path) -> list[str] | None:
    """The build's own command for `source` from build/compile_commands.json (configure with
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON), made absolute; None when it is not there."""
    import json

    try:
        entries = json.loads((build / "compile_commands.json").read_text())
    except (OSError, ValueError):
        return None
    want = os.path.normpath(str(source))
    for e in entries:
        directory = e.get("directory", "")
        file = os.path.normpath(os.path.join(directory, e.get("file", "")))
        if file != want:
            continue
        argv = e.get("arguments") or shlex.split(e.get("command", ""))
        return _absolute(argv, directory)
    return None


def _absolute(argv: list[str], cwd: str) -> list[str]:
    """`argv` with its include folders, source and output made absolute against `cwd`."""
    out, i = [], 0
    take_path = {"-I", "-isystem", "-o", "-include", "--include-path", "--output-file"}
    while i < len(argv):
        a = argv[i]
        if a in take_path and i + 1 < len(argv):
            out += [a, os.path.normpath(os.path.join(cwd, argv[i + 1]))]
            i += 2
            continue
        m = re.match(r"(-I|-isystem|-o)(.+)$", a)
        if m and not a.startswith("-o3"):
            out.append(m.group(1) + os.path.normpath(os.path.join(cwd, m.group(2))))
        elif i > 0 and not a.startswith("-") and a.endswith((".cu", ".cpp", ".cc", ".cxx")):
            out.append(os.path.normpath(os.path.join(cwd, a)))
        else:
            out.append(a)
        i += 1
    return out


def source_of(compile_cmd: list[str]) -> str:
    for a in reversed(compile_cmd[1:]):
        if a.endswith(".cu") and not a.startswith("-"):
            return a
    raise CheckError("the compile command names no .cu file")


def preprocess(compile_cmd: list[str], out_dir: Path, run: RunFn) -> Preprocessed:
    """Preprocesses the student's file as `compile_cmd` (the nvcc command that builds its
    object, with absolute paths) would: asks nvcc for its commands (`--dryrun`) and runs its
    host and device preprocessing steps, with our output files, through `run` (which may
    sandbox them: the source is untrusted). Raises CheckError when that fails."""
    out_dir.mkdir(parents=True, exist_ok=True)
    source = source_of(compile_cmd)
    argv = list(compile_cmd)
    if "-o" in argv:
        argv[argv.index("-o") + 1] = str(out_dir / "dryrun.o")
    rc, text = run(argv + ["--dryrun"])
    if rc is None:
        raise CheckError("nvcc --dryrun did not finish in time")
    if rc != 0:
        raise CheckError("nvcc --dryrun failed: " + text.strip()[-400:])
    toolkit = ""
    steps: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("#$ "):
            continue
        body = line[3:].strip()
        m = re.match(r'INCLUDES="-I([^"]+)"', body)
        if m:
            toolkit = os.path.normpath(m.group(1))
            continue
        try:
            words = shlex.split(body)
        except ValueError:
            continue
        if "-E" in words and "-o" in words and words[words.index("-o") + 1].endswith(".ii"):
            steps.append(words)
    host = [w for w in steps if not any(x.startswith("-D__CUDA_ARCH__=") for x in w)]
    device = [w for w in steps if w not in host]
    if len(host) != 1 or not device:
        raise CheckError("could not find nvcc's preprocessing steps in its --dryrun output "
                         f"({len(host)} host, {len(device)} device)")
    if not toolkit:
        nvcc = compile_cmd[0]
        toolkit = os.path.normpath(os.path.join(os.path.dirname(nvcc), "..", "include"))
    passes = []
    for k, words in enumerate(host + device):
        target = out_dir / ("host.ii" if k == 0 else f"device{k}.ii")
        words = list(words)
        words[words.index("-o") + 1] = str(target)
        if k == 0:
            words.insert(1, "-v")
        passes.append((words, target))
    # The passes are independent: run together, each counted for this thread's stage.
    jobs = [costs.carry(functools.partial(run, words)) for words, _ in passes]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        done = [future.result() for future in [pool.submit(job) for job in jobs]]
    for (rc, text), (_, target) in zip(done, passes):
        if rc is None:
            raise CheckError("preprocessing did not finish in time (does the file include a "
                             "device or a huge file?)")
        if rc != 0 or not target.is_file():
            raise CheckError("preprocessing failed: " + text.strip()[-600:])
    outputs = [target for _, target in passes]
    return Preprocessed(outputs[0], outputs[1:], os.path.normpath(source), toolkit,
                        _search_list(done[0][1]))


def _search_list(verbose: str) -> list[str]:
    dirs, inside = [], False
    for line in verbose.splitlines():
        if line.startswith("#include <...> search starts here"):
            inside = True
            continue
        if line.startswith("End of search list"):
            break
        if inside and line.startswith(" "):
            dirs.append(os.path.normpath(line.strip().split(" (")[0]))
    return dirs
