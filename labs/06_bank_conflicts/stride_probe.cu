// Lab 06's given micro-benchmark: how many cycles one warp-wide shared-memory load costs when
// the lanes' addresses are `stride` words apart. One warp runs alone on the GPU and follows a
// chain of loads, each needing the value the previous one returned, so the loads cannot
// overlap and clock64() around the chain measures their latency, conflicts included.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "bank_conflicts.cuh"
#include "cml/buffer.hpp"
#include "cml/check.hpp"

namespace lab06 {
namespace {

constexpr int kProbeWords = kWarpSize * kMaxProbeStride;  // lane 31 at the largest stride fits

__global__ void stride_probe_kernel(int stride, int iterations, long long* cycles, unsigned* sink) {
  // Each word holds its own byte offset, so "load the word at offset x" returns x again: the
  // lane keeps reading the same word, but the hardware cannot know that and must wait.
  __shared__ unsigned words[kProbeWords];
  for (int i = threadIdx.x; i < kProbeWords; i += blockDim.x) words[i] = i * sizeof(unsigned);
  __syncthreads();
  const char* base = reinterpret_cast<const char*>(words);
  // Byte offsets (not indices) keep an index-times-4 multiply out of the timed chain.
  unsigned offset = threadIdx.x * stride * sizeof(unsigned);
  offset = *reinterpret_cast<const unsigned*>(base + offset);  // one untimed access first
  const long long start = clock64();
#pragma unroll 16
  for (int i = 0; i < iterations; ++i) offset = *reinterpret_cast<const unsigned*>(base + offset);
  const long long stop = clock64();
  if (threadIdx.x == 0) *cycles = stop - start;
  sink[threadIdx.x] = offset;  // keeps the chain alive
}

}  // namespace

double measure_cycles_per_access(int stride_words, int iterations, int repeats) {
  if (stride_words < 0 || stride_words > kMaxProbeStride || iterations < 1 || repeats < 1) {
    throw std::invalid_argument("measure_cycles_per_access: stride " +
                                std::to_string(stride_words) + " must be in 0.." +
                                std::to_string(kMaxProbeStride) + ", iterations and repeats >= 1");
  }
  cml::DeviceBuffer<long long> d_cycles(1);
  cml::DeviceBuffer<unsigned> d_sink(kWarpSize);
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    stride_probe_kernel<<<1, kWarpSize>>>(stride_words, iterations, d_cycles.data(), d_sink.data());
    CUDA_CHECK_LAUNCH();
    const double cycles = static_cast<double>(d_cycles.download()[0]) / iterations;
    best = r == 0 ? cycles : std::min(best, cycles);
  }
  return best;
}

}  // namespace lab06
