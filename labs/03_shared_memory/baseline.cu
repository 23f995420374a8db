// Lab 03's given code: the global-only blur every speedup is measured against, and the query
// of the current device's shared-memory limits that the launch functions use.
#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <string>

#include "cml/check.hpp"
#include "shared_memory.cuh"

namespace lab03 {
namespace {

// One thread per output. Its 2·radius + 1 reads come from global memory; neighbouring threads
// read mostly the same elements, so only the caches stand between this kernel and DRAM.
__global__ void blur_global_kernel(const float* __restrict__ in, float* __restrict__ out, int n,
                                   int radius) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float sum = 0.0f;
  for (int k = -radius; k <= radius; ++k) {
    const long long src = min(max(i + k, 0LL), static_cast<long long>(n - 1));
    sum += in[src];
  }
  out[i] = sum * (1.0f / static_cast<float>(2 * radius + 1));
}

int device_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

}  // namespace

SharedLimits current_shared_limits() {
  // Queried once per device: the launch functions call this on every launch.
  static std::array<std::optional<SharedLimits>, 64> cache;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= static_cast<int>(cache.size())) {
    throw std::runtime_error("current_shared_limits: device index " + std::to_string(device) +
                             " out of range");
  }
  if (!cache[device]) {
    SharedLimits limits;
    limits.per_block = device_attribute(cudaDevAttrMaxSharedMemoryPerBlock, device);
    limits.per_block_optin = device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    limits.per_sm = device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
    limits.reserved_per_block = device_attribute(cudaDevAttrReservedSharedMemoryPerBlock, device);
    limits.max_threads_per_sm = device_attribute(cudaDevAttrMaxThreadsPerMultiProcessor, device);
    cache[device] = limits;
  }
  return *cache[device];
}

void blur_global(const float* d_in, float* d_out, int n, int radius) {
  if (n < 0 || radius < 0 || radius > kMaxBlurRadius) {
    throw std::invalid_argument(
        "blur_global: n = " + std::to_string(n) + ", radius = " + std::to_string(radius) +
        " (need n >= 0, 0 <= radius <= " + std::to_string(kMaxBlurRadius) + ")");
  }
  if (n == 0) return;
  const unsigned blocks =
      static_cast<unsigned>((static_cast<long long>(n) + kBlurThreads - 1) / kBlurThreads);
  blur_global_kernel<<<blocks, kBlurThreads>>>(d_in, d_out, n, radius);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab03
