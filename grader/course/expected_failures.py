"""Checks that a lab's committed skeleton fails every test case that needs the student's work.

Run by CTest as `python3 -m grader expect-fail BINARY SPEC`: the binary is the public tests
linked with the skeleton. Cases tagged [given] test code the student does not write and must
pass; every other case must fail, without the binary crashing or hanging.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from ..catch2.report import read_catch_xml

SKIP = 77


def run(binary: str, spec: str, timeout: float = 600) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        cmd = [binary, spec, "-r", "xml", "-o", str(report), "--rng-seed", "1"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"FAIL: the skeleton's tests hung ({timeout:.0f} s): {' '.join(cmd)}")
            return 1
        if proc.returncode == SKIP:
            print(proc.stdout.strip())
            return SKIP
        if proc.returncode < 0:
            print(f"FAIL: the skeleton's tests crashed (signal {-proc.returncode})")
            print(proc.stdout[-2000:], proc.stderr[-2000:])
            return 1
        try:
            cases = read_catch_xml(report)
        except (OSError, ValueError) as err:
            print(f"FAIL: no readable report from the skeleton's tests: {err}")
            print(proc.stdout[-2000:], proc.stderr[-2000:])
            return 1
    if not cases:
        print(f"FAIL: no test case matched {spec}")
        return 1
    wrong = []
    for case in cases:
        given = "given" in case.tags
        if given and not case.passed:
            wrong.append(f"[given] case failed on the skeleton: {case.name}")
        elif not given and case.passed:
            wrong.append(f"case passed on the skeleton although it needs the student's work: "
                         f"{case.name}")
    for line in wrong:
        print("FAIL:", line)
    failed = sum(1 for c in cases if not c.passed)
    print(f"{len(cases)} case(s) in {spec}: {failed} failed on the skeleton as they should"
          if not wrong else f"{len(wrong)} problem(s)")
    return 1 if wrong else 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 -m grader expect-fail BINARY SPEC", file=sys.stderr)
        return 2
    return run(argv[0], argv[1])
