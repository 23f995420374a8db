#!/usr/bin/env bash
# Builds the given labs (default: all) on a machine with a GPU, runs the test suite (solution
# and skeleton layers), shows the skeletons' GPU failure messages, and runs each lab's
# reference bench twice. Usage: tools/gpu_check.sh [NN_topic ...]
# Environment: BUILD_DIR (default build-gpu), OUT (where logs and bench JSON go; default
# $BUILD_DIR/gpu-check), CMAKE_PREFIX_PATH (for Catch2 if not installed system-wide).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
build=${BUILD_DIR:-build-gpu}
out=${OUT:-$build/gpu-check}
read -r -a bench_args <<< "${BENCH_ARGS:-}"  # extra bench arguments, split on spaces
mkdir -p "$out"
labs=("$@")
if [ ${#labs[@]} -eq 0 ]; then
  mapfile -t labs < <(cd labs && ls -d [0-9][0-9]_* 2>/dev/null)
fi
lab_list=$(IFS=';'; echo "${labs[*]}")

summary=()
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCML_LABS=$lab_list" \
  ${CMAKE_PREFIX_PATH:+-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH} >"$out/configure.log" 2>&1 \
  || { tail -30 "$out/configure.log"; exit 1; }
start=$(date +%s)
cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error" "$out/build.log" | head -30; exit 1; }
summary+=("build: $(( $(date +%s) - start )) s")

ctest --test-dir "$build" -LE '^student$' --output-on-failure 2>&1 | tee "$out/ctest.log" | tail -40
summary+=("ctest: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1)")
skipped=$(grep -c 'Skipped' "$out/ctest.log" || true)
summary+=("ctest skipped: $skipped")

for lab in "${labs[@]}"; do
  nn=${lab%%_*}
  student="$build/labs/$lab/lab${nn}_tests_student"
  if [ -x "$student" ]; then
    echo "=== lab$nn skeleton on the GPU (expected to fail; first messages) ==="
    timeout 300 "$student" "[gpu]" >"$out/skeleton_gpu_$nn.log" 2>&1
    echo "exit status $? (full log: $out/skeleton_gpu_$nn.log)"
    grep -vE '^\s*$|^~~~|^---|^\.\.\.|Run with -\?|host application' "$out/skeleton_gpu_$nn.log" | sed -n 4,16p
  fi
  bench="$build/labs/$lab/lab${nn}_bench_solution"
  if [ -x "$bench" ]; then
    for run in 1 2; do
      timeout 300 "$bench" --json "$out/bench_${nn}_run$run.json" ${bench_args[@]+"${bench_args[@]}"} 2>"$out/bench_${nn}_run$run.err"
      rc=$?
      line=$(python3 - "$out/bench_${nn}_run$run.json" <<'PY'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception as err:
    print(f"no JSON ({err})"); sys.exit()
parts = []
for c in doc["comparisons"]:
    parts.append(f"{c['name']}: {c['baseline']['name']} {c['baseline']['ms']['median']:.3f} ms"
                 f" vs {c['candidate']['name']} {c['candidate']['ms']['median']:.3f} ms,"
                 f" speedup {c['speedup']['median']:.3f}x (n={c['speedup']['n']},"
                 + (f" {c['baseline']['gflops']:.0f} vs {c['candidate']['gflops']:.0f} GFLOP/s,"
                    if c['candidate'].get('gflops') else "")
                 +
                 f" verified={c['candidate']['verification']['passed']})")
for c in doc["cases"]:
    g = c.get("gflops")
    parts.append(f"{c['name']}: {c['ms']['median']:.3f} ms" + (f", {g:.0f} GFLOP/s" if g else ""))
for k, v in doc.get("metrics", {}).items():
    parts.append(f"{k}={v:.4g}")
print("; ".join(parts))
PY
)
      summary+=("lab$nn bench run $run (rc $rc): $line")
    done
  fi
done
echo
echo "=== summary ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)) ==="
printf '%s\n' "${summary[@]}"
