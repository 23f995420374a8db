// Lab 07's given code: the chase table, its CPU model, and the baseline launch. The baseline
// compiles the chase without launch bounds (about 80 registers per thread) and launches
// 512-thread blocks: the register file then holds one block per SM, a quarter of the warps.
#include <stdexcept>
#include <string>

#include "chase.cuh"
#include "cml/check.hpp"
#include "cml/random.hpp"
#include "occupancy.cuh"

namespace lab07 {
namespace {

constexpr int kBaselineBlock = 512;

__global__ void chase_baseline_kernel(const std::uint32_t* __restrict__ table,
                                      std::uint32_t* __restrict__ out, ChaseParams p) {
  chase_warp(table, out, p);
}

}  // namespace

std::vector<std::uint32_t> make_chase_table(std::size_t lines, std::uint64_t seed) {
  std::vector<std::uint32_t> table(lines * kWarpSize);
  // A 64-bit mix per pair of words: fast enough for tables of hundreds of megabytes.
  std::uint64_t state = cml::derive_seed(seed, 7);
  for (std::size_t i = 0; i < table.size(); i += 2) {
    state += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    table[i] = static_cast<std::uint32_t>(z);
    if (i + 1 < table.size()) table[i + 1] = static_cast<std::uint32_t>(z >> 32);
  }
  return table;
}

std::vector<std::uint32_t> chase_reference(const std::vector<std::uint32_t>& table,
                                           const ChaseParams& p, int first_warp, int count) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(count) * kWarpSize);
  std::uint32_t v[kWarpSize];
  for (int w = 0; w < count; ++w) {
    const int warp = first_warp + w;
    std::uint32_t* acc = &out[static_cast<std::size_t>(w) * kWarpSize];
    std::uint32_t line = chase_start(warp, p.line_mask);
    for (int r = 0; r < p.rounds; ++r) {
      for (int j = 0; j < kChaseKeys; ++j) {
        const std::size_t base = static_cast<std::size_t>(line) * kWarpSize;
        if (base + kWarpSize > table.size()) {
          throw std::invalid_argument("chase_reference: line_mask " + std::to_string(p.line_mask) +
                                      " reaches past the table");
        }
        for (std::uint32_t lane = 0; lane < kWarpSize; ++lane) {
          v[lane] = table[base + lane];
          acc[lane] = (acc[lane] ^ chase_key(p.seed, lane, j)) + v[lane];
        }
        const std::uint32_t src = static_cast<std::uint32_t>(j % kWarpSize);
        line = (v[src] ^ chase_key(p.seed, src, j)) & p.line_mask;
      }
    }
  }
  return out;
}

void chase_baseline(const std::uint32_t* d_table, std::uint32_t* d_out, const ChaseParams& p) {
  if (p.warps <= 0) return;
  const long long threads = static_cast<long long>(p.warps) * kWarpSize;
  const unsigned grid = static_cast<unsigned>((threads + kBaselineBlock - 1) / kBaselineBlock);
  chase_baseline_kernel<<<grid, kBaselineBlock>>>(d_table, d_out, p);
  CUDA_CHECK_LAUNCH();
}

LaunchConfig chase_baseline_config() {
  return {reinterpret_cast<const void*>(&chase_baseline_kernel), kBaselineBlock};
}

}  // namespace lab07
