#!/usr/bin/env bash
# GPU check of the timing harness: builds every lab's bench (solution variant: the reference)
# on a machine with a GPU, runs each once with its grading.toml's [performance] bench_args,
# and prints one summary line per lab for the scored comparison:
#   verified samples/total (candidate; baseline), review flags, launches per call
#   (candidate, baseline), determinism, speedup median, and the host-time margin seen
#   (largest host - event time of a kept run), plus any failure message.
# Usage: tools/bench_check.sh [NN_topic ...]      (default: every lab)
# Environment: BUILD_DIR (default build-bench-check), OUT (logs and JSON; default
# $BUILD_DIR/bench-check), EXTRA_ARGS (appended to every bench's arguments, e.g. --quick),
# JOBS (build parallelism, default nproc). Exit status: 0 when every lab's scored comparison
# was verified, not flagged, and launched at least one kernel per call; 1 otherwise.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
build=${BUILD_DIR:-build-bench-check}
out=${OUT:-$build/bench-check}
mkdir -p "$out"
labs=("$@")
if [ ${#labs[@]} -eq 0 ]; then
  mapfile -t labs < <(cd labs && ls -d [0-9][0-9]_* 2>/dev/null)
fi
lab_list=$(IFS=';'; echo "${labs[*]}")

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCML_BUILD_TESTS=OFF \
  "-DCML_LABS=$lab_list" >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
targets=()
for lab in "${labs[@]}"; do targets+=("lab${lab%%_*}_bench_solution"); done
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${targets[@]}" >"$out/build.log" 2>&1 \
  || { grep -E "error|Error" "$out/build.log" | head -30; exit 1; }
if grep -qi "warning" "$out/build.log"; then
  echo "build warnings (see $out/build.log):"
  grep -i "warning" "$out/build.log" | sort -u | head -10
fi

# [performance] bench_args and comparison of a lab's rubric, one per line.
rubric() {
  python3 - "$1" <<'PY'
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: Debian's python3-tomli
    import tomli as tomllib
perf = tomllib.loads(open(sys.argv[1]).read()).get("performance", {})
print(perf.get("comparison", ""))
print(" ".join(perf.get("bench_args", [])))
PY
}

status=0
lines=()
for lab in "${labs[@]}"; do
  nn=${lab%%_*}
  bench="$build/labs/$lab/lab${nn}_bench_solution"
  if [ ! -x "$bench" ]; then
    lines+=("lab$nn: no bench built")
    status=1
    continue
  fi
  mapfile -t perf < <(rubric "labs/$lab/grading.toml")
  comparison=${perf[0]:-}
  read -r -a bench_args <<<"${perf[1]:-}"
  json="$out/bench_$nn.json"
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout 900 "$bench" "${bench_args[@]}" --json "$json" --seed 1234 ${EXTRA_ARGS:-} \
    2>"$out/bench_$nn.err"
  rc=$?
  line=$(python3 - "$json" "$comparison" "$rc" "$(( $(date +%s) - start ))" <<'PY'
import json, sys
path, name, rc, secs = sys.argv[1:5]
try:
    doc = json.load(open(path))
except Exception as err:
    print(f"FAIL rc {rc}, {secs} s: no JSON ({err})"); sys.exit()
comps = {c["name"]: c for c in doc.get("comparisons", [])}
c = comps.get(name)
if c is None:
    print(f"FAIL rc {rc}: no comparison '{name}' (has {sorted(comps)})"); sys.exit()
def ver(side):
    v = c[side]["verification"]
    return f"{v['samples_verified']}/{v['samples_total']}"
def launches(side):
    l = c[side]["launches"]
    if not l["counted"]:
        return "not counted"
    return f"{l['median']:g}" + (f" ({l['min']}..{l['max']})" if l["min"] != l["max"] else "")
def margin(side):
    ev, ho = c[side]["ms"]["samples"], c[side]["host_ms"]["samples"]
    return max((h - e for e, h in zip(ev, ho)), default=float("nan"))
flags = [x for x in doc.get("comparisons", []) + doc.get("cases", []) if x["review"]["flagged"]]
wrong = [x["name"] for x in doc.get("comparisons", []) if not x["candidate"]["verification"]["passed"]
         or not x["baseline"]["verification"]["passed"]]
wrong += [x["name"] for x in doc.get("cases", []) if not x["verification"]["passed"]]
d = c["determinism"]
det = ("identical" if d["identical"] else "DIFFERENT") if d["checked"] else "not checked"
ok = (c["candidate"]["verification"]["passed"] and c["baseline"]["verification"]["passed"]
      and not c["review"]["flagged"] and c["candidate"]["launches"]["counted"]
      and (c["candidate"]["launches"]["min"] or 0) > 0 and not wrong and not flags)
refused = sum(len(x["review"]["refused"]) for x in doc.get("comparisons", []) + doc.get("cases", []))
print(f"{'ok  ' if ok else 'FAIL'} {name}: verified {ver('candidate')} (baseline {ver('baseline')}), "
      f"review flags {len(flags)} (refused runs {refused}), launches/call {launches('candidate')} "
      f"(baseline {launches('baseline')}), determinism {det}, "
      f"speedup {c['speedup']['median']:.3f}x over {c['speedup']['n']} pairs "
      f"({c['baseline']['ms']['median']:.3f} / {c['candidate']['ms']['median']:.3f} ms), "
      f"host-event margin max {max(margin('baseline'), margin('candidate')):.3f} ms, "
      f"rc {rc}, {secs} s"
      + (f"; wrong: {wrong}" if wrong else "")
      + "".join(f"; REVIEW {x['name']}: {x['review']['reasons'][0]}" for x in flags)
      + (f"; {c['candidate']['verification']['message']}"
         if not c['candidate']['verification']['passed'] else ""))
PY
)
  case $line in ok*) ;; *) status=1 ;; esac
  lines+=("lab$nn $line")
done
echo
echo "=== bench check ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)) ==="
printf '%s\n' "${lines[@]}"
exit $status
