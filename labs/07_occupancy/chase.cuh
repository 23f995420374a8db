/// \file
/// Lab 07's latency-bound kernel body, shared by the baseline, the student's launch and the
/// bench so that only the launch configuration differs between them. Given code.
#pragma once

#include <cstdint>

#include "occupancy.cuh"

namespace lab07 {

/// Thread slots per SM of the architecture being compiled for (device code), for launch bounds
/// that ask for a full SM: 1024 on CC 7.5, 1536 on CC 8.6, 8.7, 8.9 and 12.x, 2048 otherwise.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
inline constexpr int kArchThreadsPerSm = 1024;
#elif defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || \
                                 __CUDA_ARCH__ == 890 || __CUDA_ARCH__ >= 1200)
inline constexpr int kArchThreadsPerSm = 1536;
#else
inline constexpr int kArchThreadsPerSm = 2048;
#endif

/// Resident blocks per SM of the architecture being compiled for: 16 on CC 7.5, 8.6 and 8.7,
/// 24 on 8.9, 32 otherwise.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 750 || __CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870)
inline constexpr int kArchBlocksPerSm = 16;
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 890
inline constexpr int kArchBlocksPerSm = 24;
#else
inline constexpr int kArchBlocksPerSm = 32;
#endif

/// The second argument of __launch_bounds__(threads, min_blocks) for the architecture being
/// compiled for: `min_blocks`, or the most blocks of `threads` its SM can hold when that is
/// fewer (ptxas would otherwise ignore the request with a warning). The sweeps ask for a
/// CC 8.0/9.0 SM's 2048 threads; on those GPUs nothing changes.
constexpr int arch_min_blocks(int threads, int min_blocks) {
  const int by_threads = kArchThreadsPerSm / threads > 0 ? kArchThreadsPerSm / threads : 1;
  const int most = by_threads < kArchBlocksPerSm ? by_threads : kArchBlocksPerSm;
  return min_blocks < most ? min_blocks : most;
}

/// Steps per round: one for each key of a lane's key schedule.
inline constexpr int kChaseKeys = 64;

/// Key `j` of lane `lane`'s schedule. Left to itself the compiler keeps all kChaseKeys keys
/// in registers (about 80 per thread); the keys are cheap to recompute, so a launch bound
/// that caps registers costs a few extra instructions rather than spills to memory.
__host__ __device__ inline std::uint32_t chase_key(std::uint32_t seed, std::uint32_t lane, int j) {
  const std::uint32_t lane_seed = (seed ^ (lane * 0x9E3779B9u)) | 1u;
  return lane_seed * (2u * static_cast<std::uint32_t>(j) + 1u) +
         (static_cast<std::uint32_t>(j) << 3);
}

/// The line warp `warp` starts its chain at.
__host__ __device__ inline std::uint32_t chase_start(int warp, std::uint32_t line_mask) {
  return (static_cast<std::uint32_t>(warp) * 0x61C88647u) & line_mask;
}

#ifdef __CUDACC__
/// One warp's chain. Every step waits for the previous load: the line to read next is a word
/// of the line just read, broadcast from one lane. The 32 lanes read 32 consecutive words,
/// one 128-byte line, so the loads coalesce and the cost is latency, not bandwidth.
__device__ __forceinline__ void chase_warp(const std::uint32_t* __restrict__ table,
                                           std::uint32_t* __restrict__ out, const ChaseParams& p) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / kWarpSize);
  if (warp >= p.warps) return;  // whole warps leave together, so the shuffles stay full
  const std::uint32_t lane = threadIdx.x % kWarpSize;
  std::uint32_t key[kChaseKeys];
#pragma unroll
  for (int j = 0; j < kChaseKeys; ++j) key[j] = chase_key(p.seed, lane, j);
  std::uint32_t line = chase_start(warp, p.line_mask);
  std::uint32_t acc = 0;
  for (int r = 0; r < p.rounds; ++r) {
#pragma unroll
    for (int j = 0; j < kChaseKeys; ++j) {
      const std::uint32_t v = table[(static_cast<std::size_t>(line) << 5) + lane];
      acc = (acc ^ key[j]) + v;
      line = __shfl_sync(0xffffffffu, v ^ key[j], j % kWarpSize) & p.line_mask;
    }
  }
  out[static_cast<std::size_t>(warp) * kWarpSize + lane] = acc;
}
#endif

}  // namespace lab07
