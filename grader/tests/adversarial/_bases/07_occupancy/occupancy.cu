// Lab 07: occupancy, written from the interface in occupancy.cuh.
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
  Occupancy& r = occ;
  r.by_threads = r.max_warps / warps_per_block;  // thread slots go a warp at a time
  r.by_blocks = sm.max_blocks;
  const long long block_regs = 1LL * block.threads * block.registers_per_thread;
  r.by_registers = block_regs == 0 ? kUnlimited : static_cast<int>(sm.registers / block_regs);
  r.by_shared = block.shared_bytes == 0
                    ? kUnlimited
                    : static_cast<int>(sm.shared_bytes / block.shared_bytes);
  settle(occ, warps_per_block);
  return occ;
}

int register_budget(const SmLimits& sm, int block_threads) {
  if (block_threads < 1 || block_threads > sm.max_threads) return 0;
  const int warps = (block_threads + kWarpSize - 1) / kWarpSize;
  int resident = (sm.max_threads / kWarpSize) / warps;
  if (sm.max_blocks < resident) resident = sm.max_blocks;
  return resident < 1 ? 0 : sm.registers / (resident * block_threads);
}

DeviceLimits device_limits(const cudaDeviceProp& prop) {
  DeviceLimits d;
  DeviceLimits& out = d;
  out.sm = SmLimits{prop.maxThreadsPerMultiProcessor, prop.maxBlocksPerMultiProcessor,
                    prop.regsPerMultiprocessor, prop.sharedMemPerMultiprocessor};
  out.cc_major = prop.major;
  out.cc_minor = prop.minor;
  out.warp_size = prop.warpSize;
  out.max_threads_per_block = prop.maxThreadsPerBlock;
  out.max_registers_per_block = prop.regsPerBlock;
  out.max_shared_per_block = prop.sharedMemPerBlockOptin != 0 ? prop.sharedMemPerBlockOptin
                                                              : prop.sharedMemPerBlock;
  out.reserved_shared_per_block = prop.reservedSharedMemPerBlock;
  out.register_alloc_unit = 256;                                 // registers per warp, in chunks
  out.register_partitions = prop.major * 10 + prop.minor == 60 ? 2 : 4;  // warp schedulers
  out.shared_alloc_unit = prop.major < 8 ? 256 : 128;
  return d;
}

Occupancy exact_occupancy(const DeviceLimits& device, const BlockUsage& block) {
  Occupancy occ;
  const int warp = device.warp_size;
  if (warp <= 0) return occ;
  occ.max_warps = device.sm.max_threads / warp;
  if (block.threads <= 0 || block.threads > device.max_threads_per_block) return occ;
  const int warps_per_block = (block.threads + warp - 1) / warp;
  const auto up = [](long long value, long long unit) { return unit * ((value + unit - 1) / unit); };
  Occupancy& r = occ;
  r.by_threads = r.max_warps / warps_per_block;
  r.by_blocks = device.sm.max_blocks;
  // Registers go to warps, rounded up; each warp sits in one partition of the file.
  const long long warp_regs = up(1LL * warp * block.registers_per_thread,
                                 device.register_alloc_unit);
  const long long block_warps_rounded = up(warps_per_block, device.register_partitions);
  const long long per_block_cap = device.max_registers_per_block;
  if (warp_regs == 0) {
    r.by_registers = kUnlimited;
  } else if (warp_regs * block_warps_rounded > per_block_cap) {
    r.by_registers = 0;  // not even one block launches
  } else {
    const long long warps_per_partition =
        (device.sm.registers / device.register_partitions) / warp_regs;
    r.by_registers =
        static_cast<int>(warps_per_partition * device.register_partitions / warps_per_block);
  }
  // Shared memory: the driver's reserve joins the block's own, then whole allocation units.
  const long long unit = static_cast<long long>(device.shared_alloc_unit);
  const long long need = up(static_cast<long long>(block.shared_bytes) +
                                static_cast<long long>(device.reserved_shared_per_block),
                            unit);
  const long long cap = static_cast<long long>(device.max_shared_per_block) +
                        static_cast<long long>(device.reserved_shared_per_block);
  if (need == 0) {
    r.by_shared = kUnlimited;
  } else if (need > cap) {
    r.by_shared = 0;  // more than a block may have
  } else {
    r.by_shared = static_cast<int>(static_cast<long long>(device.sm.shared_bytes) / need);
  }
  settle(occ, warps_per_block);
  return occ;
}

namespace {

// Four warps per block, and enough of them to fill every thread slot of the SM (16 on CC 9.0,
// within its 32 block slots): the bound again caps registers at 32 per thread.
constexpr int kChaseBlock = 4 * kWarpSize;
constexpr int kChaseMinBlocks = kArchThreadsPerSm / (4 * kWarpSize);
static_assert(kChaseBlock % kWarpSize == 0, "the chase needs whole warps: kChaseBlock must be a multiple of 32");
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
  if (params.warps < 1) return;
  const long long lanes = static_cast<long long>(params.warps) * kWarpSize;
  const unsigned blocks = static_cast<unsigned>((lanes - 1) / kChaseBlock + 1);
  chase_tuned_kernel<<<dim3(blocks), dim3(kChaseBlock)>>>(d_table, d_out, params);
  CUDA_CHECK_LAUNCH();
}

LaunchConfig chase_tuned_config() {
  return {reinterpret_cast<const void*>(&chase_tuned_kernel), kChaseBlock};
}

}  // namespace lab07
