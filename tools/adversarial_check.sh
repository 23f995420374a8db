#!/usr/bin/env bash
# Grades every case of the adversarial suite (grader/tests/adversarial/) on this machine and
# its GPU(s), checks each grade, result.json and export against the case's expectations, and
# prints a table and "adversarial: X/Y as expected on <GPU>". Exit status 0 when all are.
# Usage: tools/adversarial_check.sh [--out DIR] [--cases GLOB ...] [--labs 04,05]
#        [--classes fair,escape_clock] [-j N] [--parallel N] [--no-gpu] [--list]
# Run it as root so that student code runs as an unprivileged user (the grader's rule).
# One GPU grades the whole suite in about 40 minutes (the GPU stages take turns); with
# several GPUs visible the batches are spread over them (8 GPUs: under 10 minutes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$PATH:/usr/local/cuda/bin"
exec python3 -m grader.tests.adversarial.run "$@"
