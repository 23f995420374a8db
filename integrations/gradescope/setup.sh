#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu base
# image). It installs what the grader builds the labs with: the CUDA compiler, runtime and
# cuBLAS from NVIDIA's apt repository (no driver: Gradescope has no GPU, nothing CUDA runs),
# CMake, Ninja, g++, Python 3, Catch2 and bubblewrap (the grader's jail). On Ubuntu 22.04 (Python
# 3.10, CMake 3.22) it adds python3-tomli (the rubrics' TOML reader) and CMake from pip's
# cmake wheel (the project needs CMAKE_MIN below).
# The autograder zip holds this file, run_autograder, config.json and the repository in repo/.
# Any failure, the warm-up grade's included, stops the image build with its message.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
CUDA_VERSION="${CUDA_VERSION:-13-0}"
CMAKE_MIN=3.25  # CMakePresets.json's cmakeMinimumRequired (the build itself needs 3.24)
apt-get update -qq
apt-get install -y -qq --no-install-recommends ca-certificates wget gnupg cmake ninja-build \
    g++ make python3 bubblewrap >/dev/null
if ! python3 -c 'import tomllib' 2>/dev/null; then  # Python 3.10: the same parser as tomli
    apt-get install -y -qq --no-install-recommends python3-tomli >/dev/null
fi
have="$(cmake --version | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')"
if ! dpkg --compare-versions "$have" ge "$CMAKE_MIN"; then
    echo "setup.sh: the distribution's CMake is $have; installing pip's cmake (>= $CMAKE_MIN)"
    apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
    python3 -m pip install --no-cache-dir --quiet "cmake>=$CMAKE_MIN"
    hash -r  # pip's cmake is in /usr/local/bin, ahead of /usr/bin
    have="$(cmake --version | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')"
    dpkg --compare-versions "$have" ge "$CMAKE_MIN" || {
        echo "setup.sh: CMake $have at $(command -v cmake) is still older than $CMAKE_MIN" >&2
        exit 1
    }
fi
# shellcheck source=/dev/null
. /etc/os-release
wget -q "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu${VERSION_ID/./}/x86_64/cuda-keyring_1.1-1_all.deb"
dpkg -i cuda-keyring_1.1-1_all.deb
rm -f cuda-keyring_1.1-1_all.deb
apt-get update -qq
apt-get install -y -qq --no-install-recommends "cuda-nvcc-$CUDA_VERSION" \
    "cuda-cudart-dev-$CUDA_VERSION" "libcublas-dev-$CUDA_VERSION" >/dev/null
# Catch2: the distribution's package (Catch2 2 on Ubuntu 22.04, 3 on 24.04); both work.
# nlohmann-json: the JSON library the benches write their documents with (3.10 or newer).
apt-get install -y -qq --no-install-recommends catch2 nlohmann-json3-dev >/dev/null
ln -sf /usr/local/cuda/bin/nvcc /usr/local/bin/nvcc
# Build the reference and the tests once now (grading the skeletons), into the image, so
# each submission only compiles its own file.
# doctor fails where the labs cannot be built; the warm-up fails on any error of the grader's
# (a skeleton's failing tests are no error).
cd /autograder/source/repo
python3 -m grader doctor
LABS="$(python3 -c 'import json, sys; print(",".join(json.load(open(sys.argv[1])).get("labs", [])))' /autograder/source/config.json)"
python3 -m grader grade . ${LABS:+--labs "$LABS"} --no-gpu --format '' -q \
    --work-dir /autograder/work --out /tmp/cml-warm-up
