#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu base
# image). It installs what the grader builds the labs with: the CUDA compiler, runtime and
# cuBLAS from NVIDIA's apt repository (no driver: Gradescope has no GPU, nothing CUDA runs),
# CMake, Ninja, g++, Python 3, Catch2 and bubblewrap (the grader's jail).
# The autograder zip holds this file, run_autograder, config.json and the repository in repo/.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
CUDA_VERSION="${CUDA_VERSION:-13-0}"
apt-get update -qq
apt-get install -y -qq --no-install-recommends ca-certificates wget gnupg cmake ninja-build \
    g++ make python3 bubblewrap >/dev/null
. /etc/os-release
wget -q "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu${VERSION_ID/./}/x86_64/cuda-keyring_1.1-1_all.deb"
dpkg -i cuda-keyring_1.1-1_all.deb
rm -f cuda-keyring_1.1-1_all.deb
apt-get update -qq
apt-get install -y -qq --no-install-recommends "cuda-nvcc-$CUDA_VERSION" \
    "cuda-cudart-dev-$CUDA_VERSION" "libcublas-dev-$CUDA_VERSION" >/dev/null
# Catch2: the distribution's package (Catch2 2 on Ubuntu 22.04, 3 on 24.04); both work.
apt-get install -y -qq --no-install-recommends catch2 >/dev/null
ln -sf /usr/local/cuda/bin/nvcc /usr/local/bin/nvcc
# Build the reference and the tests once now (grading the skeletons), into the image, so
# each submission only compiles its own file.
cd /autograder/source/repo
python3 -m grader doctor || true
LABS="$(python3 -c 'import json; print(",".join(json.load(open("/autograder/source/config.json")).get("labs", [])))' 2>/dev/null || true)"
python3 -m grader grade . ${LABS:+--labs "$LABS"} --no-gpu --format '' -q \
    --work-dir /autograder/work --out /tmp/cml-warm-up >/dev/null || true
