// >>>
// Lab 07 reference solution. The student skeleton labs/07_occupancy/occupancy.cu is generated
// from this file: never edit the skeleton by hand.
// === stub
// // Lab 07: occupancy. Fill in every TODO(lab07); the handout handouts/07_occupancy.md
// // explains the ideas, and `python3 -m grader check 07` tells you how you are doing.
// <<<
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
  // >>> TODO(lab07): Set by_threads, by_blocks, by_registers and by_shared: how many blocks each SM resource holds on its own.
  // Thread slots are handed out a warp at a time, so count warps, not threads.
  occ.by_threads = occ.max_warps / warps_per_block;
  occ.by_blocks = sm.max_blocks;
  const long long regs_per_block =
      static_cast<long long>(block.registers_per_thread) * block.threads;
  occ.by_registers =
      regs_per_block > 0 ? static_cast<int>(sm.registers / regs_per_block) : kUnlimited;
  occ.by_shared =
      block.shared_bytes > 0 ? static_cast<int>(sm.shared_bytes / block.shared_bytes) : kUnlimited;
  // <<<
  settle(occ, warps_per_block);
  return occ;
}

int register_budget(const SmLimits& sm, int block_threads) {
  // >>> TODO(lab07): Find how many blocks the thread and block slots allow, then share the register file between their threads.
  if (block_threads <= 0 || block_threads > sm.max_threads) return 0;
  const int warps_per_block = (block_threads + kWarpSize - 1) / kWarpSize;
  const int blocks = std::min(sm.max_threads / kWarpSize / warps_per_block, sm.max_blocks);
  if (blocks <= 0) return 0;
  return sm.registers / (blocks * block_threads);
  // === stub
  // (void)sm;
  // (void)block_threads;
  // return 0;
  // <<<
}

DeviceLimits device_limits(const cudaDeviceProp& prop) {
  DeviceLimits d;
  // >>> TODO(lab07): Copy the per-SM and per-block limits from prop, and set the allocation units for its compute capability.
  d.sm.max_threads = prop.maxThreadsPerMultiProcessor;
  d.sm.max_blocks = prop.maxBlocksPerMultiProcessor;
  d.sm.registers = prop.regsPerMultiprocessor;
  d.sm.shared_bytes = prop.sharedMemPerMultiprocessor;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.warp_size = prop.warpSize;
  d.max_threads_per_block = prop.maxThreadsPerBlock;
  d.max_registers_per_block = prop.regsPerBlock;
  d.max_shared_per_block =
      prop.sharedMemPerBlockOptin > 0 ? prop.sharedMemPerBlockOptin : prop.sharedMemPerBlock;
  d.reserved_shared_per_block = prop.reservedSharedMemPerBlock;
  // Registers go to warps in chunks of 256 on every GPU since Kepler; the register file is
  // split between the SM's four warp schedulers (two on CC 6.0).
  d.register_alloc_unit = 256;
  d.register_partitions = (prop.major == 6 && prop.minor == 0) ? 2 : 4;
  // Shared memory is handed out in 128-byte chunks from Ampere on, 256 before.
  d.shared_alloc_unit = prop.major >= 8 ? 128 : 256;
  // === stub
  // (void)prop;
  // <<<
  return d;
}

Occupancy exact_occupancy(const DeviceLimits& device, const BlockUsage& block) {
  Occupancy occ;
  const int warp = device.warp_size;
  if (warp <= 0) return occ;
  occ.max_warps = device.sm.max_threads / warp;
  if (block.threads <= 0 || block.threads > device.max_threads_per_block) return occ;
  const int warps_per_block = (block.threads + warp - 1) / warp;
  // >>> TODO(lab07): Set the four by_* limits with the hardware's rules: whole warps; registers per warp rounded up to the unit and shared out per partition; shared memory plus the reserve rounded up to its unit.
  const auto round_up = [](long long x, long long unit) { return (x + unit - 1) / unit * unit; };
  occ.by_threads = occ.max_warps / warps_per_block;
  occ.by_blocks = device.sm.max_blocks;

  // Registers: per warp, rounded up to the allocation unit. Each warp lives in one
  // sub-partition's share of the register file, so count warps per partition first.
  const long long regs_per_thread = block.registers_per_thread;
  const long long regs_per_warp = round_up(regs_per_thread * warp, device.register_alloc_unit);
  if (regs_per_warp == 0) {
    occ.by_registers = kUnlimited;
  } else if (regs_per_warp * round_up(warps_per_block, device.register_partitions) >
             device.max_registers_per_block) {
    occ.by_registers = 0;  // the block cannot be launched at all
  } else {
    const long long per_partition = device.sm.registers / device.register_partitions;
    const long long warps_per_sm = per_partition / regs_per_warp * device.register_partitions;
    occ.by_registers = static_cast<int>(warps_per_sm / warps_per_block);
  }

  // Shared memory: the driver's per-block reserve is added, then the sum is rounded up.
  const long long shared =
      round_up(static_cast<long long>(block.shared_bytes + device.reserved_shared_per_block),
               static_cast<long long>(device.shared_alloc_unit));
  const long long most =
      static_cast<long long>(device.max_shared_per_block + device.reserved_shared_per_block);
  if (shared > most) {
    occ.by_shared = 0;
  } else if (shared == 0) {
    occ.by_shared = kUnlimited;
  } else {
    occ.by_shared = static_cast<int>(static_cast<long long>(device.sm.shared_bytes) / shared);
  }
  // <<<
  settle(occ, warps_per_block);
  return occ;
}

namespace {

// >>> TODO(lab07): Choose the chase's block size and the number of blocks per SM its launch bounds promise (the bounds cap registers per thread near 65536 / (block × blocks)).
constexpr int kChaseBlock = 256;
// Enough blocks to fill every thread slot: 8 on CC 9.0, where that caps registers at 32.
constexpr int kChaseMinBlocks = kArchThreadsPerSm / kChaseBlock;
// === stub
// constexpr int kChaseBlock = 512;
// constexpr int kChaseMinBlocks = 1;
// <<<
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
  // >>> TODO(lab07): Launch chase_tuned_kernel with kChaseBlock threads per block and enough blocks for params.warps warps of 32 threads.
  if (params.warps <= 0) return;
  const long long threads = static_cast<long long>(params.warps) * kWarpSize;
  const unsigned grid = static_cast<unsigned>((threads + kChaseBlock - 1) / kChaseBlock);
  chase_tuned_kernel<<<grid, kChaseBlock>>>(d_table, d_out, params);
  CUDA_CHECK_LAUNCH();
  // === stub
  // (void)d_table;
  // (void)d_out;
  // (void)params;
  // <<<
}

LaunchConfig chase_tuned_config() {
  return {reinterpret_cast<const void*>(&chase_tuned_kernel), kChaseBlock};
}

}  // namespace lab07
