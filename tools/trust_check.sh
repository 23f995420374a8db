#!/usr/bin/env bash
# The GPU layer of the grader's trust checks in one command, for a machine with a GPU: builds
# every lab, runs the GPU tests (the harness's own included), grades the reference and the
# skeletons (tools/grade_check.py: three regrades, the first with every CPU busy) and grades
# the chosen cases of the adversarial suite (tools/adversarial_check.sh). Prints one summary
# table last. Run it as root, so student code runs as an unprivileged user.
#
# Usage: tools/trust_check.sh [STAGE ...]     stages: build ctest grade adversarial
#                                             (default: all four, in that order)
# Environment:
#   ADVERSARIAL   arguments for the adversarial stage (default: the whole suite), e.g.
#                 "--classes fair" or "--cases '*_fair_*' 04_bonus_missing"
#   REGRADES      reference grades in the grade stage (default 3); BUSY_GRADES: how many of
#                 them run with every CPU busy (default 1)
#   OUT           where logs and results go (default: build-trust/out)
#   CMAKE_PREFIX_PATH, CML_BWRAP   as for the grader (a Catch2 or bubblewrap outside /usr)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
export PATH="$PATH:/usr/local/cuda/bin"
build="build-trust"
out=${OUT:-$build/out}
mkdir -p "$out"
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(build ctest grade adversarial)
summary=()
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)

elapsed() { echo "$(( $(date +%s) - $1 )) s"; }

for stage in "${stages[@]}"; do
  start=$(date +%s)
  case $stage in
    build)
      if cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
           ${CMAKE_PREFIX_PATH:+-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH} >"$out/configure.log" 2>&1 \
         && cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1; then
        summary+=("build: ok ($(elapsed "$start"))")
      else
        grep -E "error|Error" "$out/configure.log" "$out/build.log" | head -20
        summary+=("build: FAILED (see $out/build.log)")
        break
      fi
      ;;
    ctest)
      ctest --test-dir "$build" -L gpu -LE '^student$' -j 2 --timeout 600 --output-on-failure \
        >"$out/ctest.log" 2>&1
      grep -E "\*\*\*Failed|Not Run|Timeout" "$out/ctest.log" | head -20
      summary+=("ctest -L gpu (solution layer): $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1) ($(elapsed "$start"))")
      ;;
    grade)
      python3 tools/grade_check.py --regrades "${REGRADES:-3}" --busy-grades "${BUSY_GRADES:-1}" \
        --out "$out/grade-check" >"$out/grade_check.log" 2>&1
      sed -n '/^lab /,$p' "$out/grade_check.log" | head -40
      summary+=("$(grep -E '^grade check:' "$out/grade_check.log" | tail -1) ($(elapsed "$start"))")
      ;;
    adversarial)
      eval "set -- ${ADVERSARIAL:-}"
      python3 -m grader.tests.adversarial.run --out "$out/adversarial" -j 4 "$@" \
        >"$out/adversarial.log" 2>&1
      sed -n '/^case /,/^details:/p' "$out/adversarial.log" | grep -vE ' PASS$' | head -60
      summary+=("$(grep -E '^adversarial:' "$out/adversarial.log" | tail -1) ($(elapsed "$start"))")
      ;;
    *) echo "unknown stage: $stage" >&2; exit 2 ;;
  esac
done
echo
echo "=== trust check on ${gpu:-no GPU} ==="
printf '%s\n' "${summary[@]}"
