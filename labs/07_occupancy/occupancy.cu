// Lab 07: occupancy. Fill in every TODO(lab07); the handout handouts/07_occupancy.md
// explains the ideas, and `python3 -m grader check 07` tells you how you are doing.
#include <algorithm>
#include <cstdint>

#include "chase.cuh"
#include "cml/check.hpp"
#include "occupancy.cuh"

namespace lab07 {
namespace {

// The smallest of the four per-resource limits, and which resource it came from.
void settle(Occupancy& occ, int warps_per_block) {
  occ.blocks = occ.by_threads;
  occ.limiter = Limiter::kThreads;
  const std::pair<int, Limiter> others[] = {{occ.by_blocks, Limiter::kBlocks},
                                            {occ.by_registers, Limiter::kRegisters},
                                            {occ.by_shared, Limiter::kSharedMemory}};
  for (const auto& [blocks, limiter] : others) {
    if (blocks < occ.blocks) {
      occ.blocks = blocks;
      occ.limiter = limiter;
    }
  }
  occ.warps = occ.blocks * warps_per_block;
  occ.fraction = occ.max_warps > 0 ? static_cast<double>(occ.warps) / occ.max_warps : 0.0;
}

}  // namespace

Occupancy textbook_occupancy(const SmLimits& sm, const BlockUsage& block) {
  Occupancy occ;
  occ.max_warps = sm.max_threads / kWarpSize;
  if (block.threads <= 0) return occ;
  const int warps_per_block = (block.threads + kWarpSize - 1) / kWarpSize;
  // TODO(lab07): Set by_threads, by_blocks, by_registers and by_shared: how many blocks each SM resource holds on its own.
  settle(occ, warps_per_block);
  return occ;
}

int register_budget(const SmLimits& sm, int block_threads) {
  // TODO(lab07): Find how many blocks the thread and block slots allow, then share the register file between their threads.
  (void)sm;
  (void)block_threads;
  return 0;
}

DeviceLimits device_limits(const cudaDeviceProp& prop) {
  DeviceLimits d;
  // TODO(lab07): Copy the per-SM and per-block limits from prop, and set the allocation units for its compute capability.
  (void)prop;
  return d;
}

Occupancy exact_occupancy(const DeviceLimits& device, const BlockUsage& block) {
  Occupancy occ;
  const int warp = device.warp_size;
  if (warp <= 0) return occ;
  occ.max_warps = device.sm.max_threads / warp;
  if (block.threads <= 0 || block.threads > device.max_threads_per_block) return occ;
  const int warps_per_block = (block.threads + warp - 1) / warp;
  // TODO(lab07): Set the four by_* limits with the hardware's rules: whole warps; registers per warp rounded up to the unit and shared out per partition; shared memory plus the reserve rounded up to its unit.
  settle(occ, warps_per_block);
  return occ;
}

namespace {

// TODO(lab07): Choose the chase's block size and the number of blocks per SM its launch bounds promise (the bounds cap registers per thread near 65536 / (block × blocks)).
constexpr int kChaseBlock = 512;
constexpr int kChaseMinBlocks = 1;
static_assert(kChaseBlock % kWarpSize == 0,
              "the chase needs whole warps: kChaseBlock must be a multiple of 32");
static_assert(kChaseMinBlocks >= 1, "launch bounds promise at least one resident block");

// __launch_bounds__(B, M) promises launches of at most B threads and asks for M resident blocks
// per SM, so the compiler keeps each thread within registers_per_SM / (B × M) registers.
__global__ void __launch_bounds__(kChaseBlock, kChaseMinBlocks)
    chase_tuned_kernel(const std::uint32_t* __restrict__ table, std::uint32_t* __restrict__ out,
                       ChaseParams p) {
  chase_warp(table, out, p);
}

}  // namespace

void chase_tuned(const std::uint32_t* d_table, std::uint32_t* d_out, const ChaseParams& params) {
  // TODO(lab07): Launch chase_tuned_kernel with kChaseBlock threads per block and enough blocks for params.warps warps of 32 threads.
  (void)d_table;
  (void)d_out;
  (void)params;
}

LaunchConfig chase_tuned_config() {
  return {reinterpret_cast<const void*>(&chase_tuned_kernel), kChaseBlock};
}

}  // namespace lab07
