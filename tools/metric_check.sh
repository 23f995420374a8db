#!/usr/bin/env bash
# Lab 06's profiler metrics measured the way the grader measures them (grader/measure/profiler.py:
# the rubric's own ncu command, parser and scoring), on a machine with a GPU and Nsight Compute:
# every [[metrics]] entry on the reference bench, then the scored ones on the skeleton and on
# the padded transposes of grader/tests/fixtures/metrics/recipes.json (written other fair
# ways: must keep the points; the unpadded tile and no shared memory: must not). Prints each
# measurement, then a table. About 2-3 minutes.
# Usage: tools/metric_check.sh
# Environment: OUT (work folder; default build-metric-check), CMAKE_PREFIX_PATH.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
out=$(mkdir -p "${OUT:-build-metric-check}" && cd "${OUT:-build-metric-check}" && pwd)
lab=06_bank_conflicts
student_rel=labs/$lab/bank_conflicts.cu

ncu=$(python3 -c 'from grader.tools import find_tool; print(find_tool("ncu") or "")')
[ -n "$ncu" ] || { echo "ncu (Nsight Compute) not found: nothing to check here"; exit 1; }
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
echo "ncu: $("$ncu" --version 2>/dev/null | tail -1)"

# A private copy of the tree with lab 06 only: the variants replace its student file.
rm -rf "${out:?}/src" "${out:?}/bin" "${out:?}/runs"
mkdir -p "$out/bin" "$out/runs"
python3 - "$out/src" "$lab" <<'PY' || exit 1
import sys
from pathlib import Path
from grader.paths import ROOT, find_lab
from grader.workspace import copy_pristine
copy_pristine(ROOT, Path(sys.argv[1]), [find_lab(sys.argv[2])])
PY
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$out/src" -B "$out/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCML_LABS=$lab -DCML_BUILD_TESTS=OFF \
  ${CMAKE_PREFIX_PATH:+-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH} >"$out/configure.log" 2>&1 \
  || { tail -30 "$out/configure.log"; exit 1; }
build() {  # build.log keeps the last build's output
  timeout 300 cmake --build "$out/build" -j "$(nproc)" --target "$@" >"$out/build.log" 2>&1 \
    || { grep -E "error" "$out/build.log" | head -20; return 1; }
}
start=$(date +%s)
build lab06_bench_solution lab06_bench_student || exit 1
cp "$out/build/labs/$lab/lab06_bench_solution" "$out/bin/reference"
cp "$out/build/labs/$lab/lab06_bench_student" "$out/bin/skeleton"
variants=$(python3 -c '
from grader.tests.lab_fixtures import FIXTURES_ROOT
import json
print(" ".join(n for n in json.loads((FIXTURES_ROOT / "metrics" / "recipes.json").read_text())
               if n not in ("_comment", "reference")))')
for v in $variants; do
  python3 - "$out/src/$student_rel" "$v" <<'PY' || exit 1
import sys
from pathlib import Path
from grader.tests.lab_fixtures import FIXTURES_ROOT, LabFixtures
fixtures = LabFixtures("06_bank_conflicts", "bank_conflicts")
fixtures.dir = FIXTURES_ROOT / "metrics"
Path(sys.argv[1]).write_text(fixtures.student_text(sys.argv[2]))
PY
  if build lab06_bench_student; then
    cp "$out/build/labs/$lab/lab06_bench_student" "$out/bin/$v"
  else
    echo "variant $v did not build"
  fi
done
echo "builds: $(( $(date +%s) - start )) s"

start=$(date +%s)
python3 - "$out" <<'PY'
import json
import os
import sys
from pathlib import Path

from grader.parts import metric as metrics_part
from grader.measure import Context, profiler
from grader.paths import find_lab
from grader.result import GRADED
from grader.rubric import load_rubric
from grader.tests.lab_fixtures import FIXTURES_ROOT

out = Path(sys.argv[1])
rubric = load_rubric(find_lab("06_bank_conflicts"))
groups = {g.name for g in rubric.tables["correctness"]}  # correctness is not checked here: all met
scored = [m for m in rubric.tables["metrics"] if m.points > 0]
recipes = json.loads((FIXTURES_ROOT / "metrics" / "recipes.json").read_text())
recipes.pop("_comment", None)
recipes["skeleton"] = {"must_pass": [], "must_fail": [m.name for m in scored]}
subjects = ["reference", "skeleton"] + [n for n in recipes if n not in ("reference", "skeleton")]

table = []
for name in subjects:
    binary = out / "bin" / name
    if not binary.exists():
        table.append((name, ["not built"] * len(scored), "NOT BUILT"))
        continue
    run_dir = out / "runs" / name
    run_dir.mkdir(parents=True, exist_ok=True)
    ctx = Context(run_dir=run_dir, env=dict(os.environ), identity=None, seed=1,
                  timeout=120, binary=lambda kind, b=binary: b
                  if kind == "bench_student" else None)
    cells, ok = [], True
    for metric in rubric.tables["metrics"] if name == "reference" else scored:
        part = metrics_part.metric_part(metric, profiler.metric(metric, ctx), groups)
        value = part.details.get("value")
        shown = "-" if value is None else f"{value:.5g}"
        if name == "reference" and metric is rubric.tables["metrics"][0]:
            print("ncu command (reference, first metric):", *part.details.get("commands", []))
        print(f"{name:16} {metric.name[:64]:64} value {shown:>9}  "
              f"{part.points:g}/{part.max_points:g} {part.status}  {part.reason}")
        if metric.points <= 0:
            continue
        got = ("pass" if part.status == GRADED and part.points == metric.points else
               "fail" if part.status == GRADED else part.status)
        want = ("pass" if any(metric.name.startswith(s) for s in recipes[name]["must_pass"]) else
                "fail" if any(metric.name.startswith(s) for s in recipes[name]["must_fail"]) else
                "any")
        ok = ok and want in (got, "any")
        cells.append(f"{shown} {got}" + ("" if want in (got, "any") else f" (want {want})"))
    table.append((name, cells, "OK" if ok else "UNEXPECTED"))

print()
print("Scored lab 06 metrics, wavefronts per request (<= 1.1 passes) and shared loads per")
print("global store (>= 0.99 passes), as the grader measures them:")
heads = [m.name.split(",")[0][:30] for m in scored]
print(f"{'submission':16} | " + " | ".join(f"{h:30}" for h in heads) + " | verdict")
for name, cells, verdict in table:
    print(f"{name:16} | " + " | ".join(f"{c:30}" for c in cells) + f" | {verdict}")
PY
echo "profiling: $(( $(date +%s) - start )) s"
