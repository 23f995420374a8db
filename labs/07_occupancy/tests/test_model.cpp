// Lab 07 public host tests: the textbook cases (level 1), the register budget, the device
// limits and the exact calculator (level 2) on GPUs described by their properties. None of
// these needs a GPU.
#include <string>

#include "cml/testing.hpp"
#include "fake_devices.hpp"
#include "occupancy.cuh"

using lab07::BlockUsage;
using lab07::Limiter;
using lab07::SmLimits;

namespace {

// The notes' A100-like SM and their hypothetical "device D".
const SmLimits kA100{2048, 32, 65536, 164 * 1024};
const SmLimits kDeviceD{1536, 8, 16384, 16 * 1024};

std::string describe(const lab07::Occupancy& o) {
  return "got blocks=" + std::to_string(o.blocks) + " (by_threads=" + std::to_string(o.by_threads) +
         ", by_blocks=" + std::to_string(o.by_blocks) +
         ", by_registers=" + std::to_string(o.by_registers) +
         ", by_shared=" + std::to_string(o.by_shared) + "), warps=" + std::to_string(o.warps) +
         " of " + std::to_string(o.max_warps);
}

const char* limiter_name(Limiter l) {
  switch (l) {
    case Limiter::kThreads:
      return "threads";
    case Limiter::kBlocks:
      return "blocks";
    case Limiter::kRegisters:
      return "registers";
    case Limiter::kSharedMemory:
      return "shared memory";
  }
  return "?";
}

}  // namespace

TEST_CASE("An A100-like SM fills its 2048 thread slots with any block size from 64 to 1024",
          "[lab07][host][textbook]") {
  const std::pair<int, int> cases[] = {{1024, 2}, {512, 4}, {256, 8}, {128, 16}, {64, 32}};
  for (const auto& [threads, blocks] : cases) {
    const auto o = lab07::textbook_occupancy(kA100, {threads, 0, 0});
    INFO("A100-like SM, " << threads << "-thread blocks: " << describe(o));
    CHECK(o.blocks == blocks);
    CHECK(o.max_warps == 64);
    CHECK(o.warps == 64);
    CHECK(o.fraction == 1.0);
  }
}

TEST_CASE("32-thread blocks run out of block slots first: 50 %", "[lab07][host][textbook]") {
  const auto o = lab07::textbook_occupancy(kA100, {32, 0, 0});
  INFO(describe(o) << "\nHint: 32 block slots × 1 warp each fill only half of the 64 warp slots.");
  CHECK(o.by_threads == 64);
  CHECK(o.by_blocks == 32);
  CHECK(o.blocks == 32);
  CHECK(o.warps == 32);
  CHECK(o.fraction == 0.5);
  CHECK(o.limiter == Limiter::kBlocks);
}

TEST_CASE("768-thread blocks leave 512 thread slots empty: 75 %", "[lab07][host][textbook]") {
  const auto o = lab07::textbook_occupancy(kA100, {768, 0, 0});
  INFO(describe(o) << "\nHint: a third 768-thread block would need 2304 of 2048 slots.");
  CHECK(o.blocks == 2);
  CHECK(o.warps == 48);
  CHECK(o.fraction == 0.75);
  CHECK(o.limiter == Limiter::kThreads);
}

TEST_CASE("64 registers per thread cap occupancy at 50 % whatever the block size",
          "[lab07][host][textbook]") {
  for (int threads : {64, 128, 256, 512, 1024}) {
    const auto o = lab07::textbook_occupancy(kA100, {threads, 64, 0});
    INFO(threads << "-thread blocks at 64 registers: " << describe(o)
                 << "\nHint: 65,536 registers / 64 per thread = 1024 threads.");
    CHECK(o.warps == 32);
    CHECK(o.fraction == 0.5);
  }
}

TEST_CASE("The performance cliff: 31 registers keep four 512-thread blocks, 33 keep three",
          "[lab07][host][textbook]") {
  const auto at31 = lab07::textbook_occupancy(kA100, {512, 31, 0});
  INFO("31 registers: " << describe(at31));
  CHECK(at31.blocks == 4);  // 4 × 512 × 31 = 63,488 registers, under 65,536
  CHECK(at31.fraction == 1.0);
  const auto at33 = lab07::textbook_occupancy(kA100, {512, 33, 0});
  INFO("33 registers: " << describe(at33) << ", limiter " << limiter_name(at33.limiter));
  CHECK(at33.by_registers == 3);  // 4 blocks would need 67,584
  CHECK(at33.blocks == 3);
  CHECK(at33.fraction == 0.75);
  CHECK(at33.limiter == Limiter::kRegisters);
}

TEST_CASE("On a 1536-thread, 16,384-register SM one register more costs a third of the threads",
          "[lab07][host][textbook]") {
  const auto at10 = lab07::textbook_occupancy(kDeviceD, {512, 10, 0});
  INFO("10 registers: " << describe(at10));
  CHECK(at10.blocks == 3);
  CHECK(at10.warps == 48);
  const auto at11 = lab07::textbook_occupancy(kDeviceD, {512, 11, 0});
  INFO("11 registers: " << describe(at11));
  CHECK(at11.blocks == 2);  // 1024 threads
  CHECK(at11.warps == 32);
  CHECK(at11.limiter == Limiter::kRegisters);
}

TEST_CASE("Shared memory: 5 KB blocks fit three times in 16 KB; 2 KB tiles are limited by threads",
          "[lab07][host][textbook]") {
  const auto five = lab07::textbook_occupancy(kDeviceD, {128, 0, 5 * 1024});
  INFO("5 KB per block: " << describe(five));
  CHECK(five.by_shared == 3);
  CHECK(five.blocks == 3);
  CHECK(five.limiter == Limiter::kSharedMemory);
  // 16×16 float tiles of A and B: 2 × 1 KB per 256-thread block.
  const auto tiles = lab07::textbook_occupancy(kDeviceD, {256, 0, 2 * 1024});
  INFO("two 16×16 float tiles: " << describe(tiles));
  CHECK(tiles.by_shared == 8);
  CHECK(tiles.by_threads == 6);
  CHECK(tiles.blocks == 6);
  CHECK(tiles.limiter == Limiter::kThreads);
  CHECK(tiles.fraction == 1.0);
}

TEST_CASE("A block that does not fit at all gives zero blocks", "[lab07][host][textbook]") {
  const auto regs = lab07::textbook_occupancy(kDeviceD, {512, 40, 0});  // 20,480 > 16,384
  INFO("512 threads × 40 registers on a 16,384-register SM: " << describe(regs));
  CHECK(regs.blocks == 0);
  CHECK(regs.fraction == 0.0);
  const auto shared = lab07::textbook_occupancy(kDeviceD, {64, 0, 20 * 1024});
  INFO("20 KB on a 16 KB SM: " << describe(shared));
  CHECK(shared.blocks == 0);
  // One block that only just fits: 512 × 31 = 15,872 registers.
  CHECK(lab07::textbook_occupancy(kDeviceD, {512, 31, 0}).blocks == 1);
}

TEST_CASE("The register budget is the edge of the cliff", "[lab07][host][budget]") {
  CHECK(lab07::register_budget(kA100, 512) == 32);
  CHECK(lab07::register_budget(kA100, 1024) == 32);
  CHECK(lab07::register_budget(kA100, 768) == 42);  // two blocks: 65,536 / 1536
  CHECK(lab07::register_budget(kA100, 32) == 64);   // block slots bind first
  CHECK(lab07::register_budget(kDeviceD, 512) == 10);
  CHECK(lab07::register_budget(kDeviceD, 256) == 10);
  CHECK(lab07::register_budget(kDeviceD, 64) == 32);  // 8 block slots × 64 threads
  CHECK(lab07::register_budget(kDeviceD, 2048) == 0);
}

TEST_CASE("Device limits come from the properties, the granularities from the compute capability",
          "[lab07][host][limits]") {
  const auto h100 = lab07::device_limits(lab07_test::h100_prop());
  CHECK(h100.sm.max_threads == 2048);
  CHECK(h100.sm.max_blocks == 32);
  CHECK(h100.sm.registers == 65536);
  CHECK(h100.sm.shared_bytes == 233472u);
  CHECK(h100.cc_major == 9);
  CHECK(h100.warp_size == 32);
  CHECK(h100.max_threads_per_block == 1024);
  CHECK(h100.max_registers_per_block == 65536);
  CHECK(h100.max_shared_per_block == 232448u);
  CHECK(h100.reserved_shared_per_block == 1024u);
  CHECK(h100.register_alloc_unit == 256);
  CHECK(h100.register_partitions == 4);
  CHECK(h100.shared_alloc_unit == 128u);
  const auto t4 = lab07::device_limits(lab07_test::t4_prop());
  CHECK(t4.sm.max_threads == 1024);
  CHECK(t4.sm.max_blocks == 16);
  CHECK(t4.reserved_shared_per_block == 0u);
  CHECK(t4.shared_alloc_unit == 256u);
  CHECK(t4.register_partitions == 4);
}

namespace {

lab07::Occupancy exact_on(const cudaDeviceProp& prop, int threads, int regs, std::size_t shared) {
  return lab07::exact_occupancy(lab07::device_limits(prop), BlockUsage{threads, regs, shared});
}

}  // namespace

TEST_CASE("Registers are allocated per warp in units of 256: 31 and 32 cost the same, 33 costs 40",
          "[lab07][host][exact]") {
  const auto h100 = lab07_test::h100_prop();
  const auto at31 = exact_on(h100, 256, 31, 0);
  const auto at32 = exact_on(h100, 256, 32, 0);
  INFO("31 registers: " << describe(at31) << "\n32 registers: " << describe(at32));
  CHECK(at31.blocks == 8);
  CHECK(at32.blocks == 8);
  // 33 × 32 = 1056 registers per warp round up to 1280: 12 warps per partition, 48 per SM,
  // six 8-warp blocks. Counting registers one by one would give seven.
  const auto at33 = exact_on(h100, 256, 33, 0);
  INFO("33 registers: " << describe(at33)
                        << "\nHint: round 33 × 32 up to a multiple of 256 before dividing.");
  CHECK(at33.by_registers == 6);
  CHECK(at33.blocks == 6);
  CHECK(at33.warps == 48);
  CHECK(at33.limiter == Limiter::kRegisters);
  CHECK(lab07::textbook_occupancy(lab07::device_limits(h100).sm, {256, 33, 0}).blocks == 7);
}

TEST_CASE("Warps are counted per register partition", "[lab07][host][exact]") {
  // 40 registers: 1280 per warp. A quarter of the register file (16,384) holds 12 such warps,
  // so the SM holds 48, sixteen 3-warp blocks; 65,536 / 1280 would suggest 51 warps, 17 blocks.
  const auto o = exact_on(lab07_test::h100_prop(), 96, 40, 0);
  INFO(describe(o) << "\nHint: divide the register file by the 4 partitions, then by the "
                      "registers per warp, then multiply by 4.");
  CHECK(o.by_registers == 16);
  CHECK(o.blocks == 16);
  CHECK(o.warps == 48);
}

TEST_CASE("Thread slots are warp slots: a 680-thread block takes 22 warps",
          "[lab07][host][exact]") {
  const auto o = exact_on(lab07_test::h100_prop(), 680, 0, 0);
  INFO(describe(o));
  CHECK(o.by_threads == 2);  // 64 / 22
  CHECK(o.blocks == 2);
  CHECK(o.warps == 44);
}

TEST_CASE("Shared memory: the 1 KB per-block reserve and 128-byte rounding cost whole blocks",
          "[lab07][host][exact]") {
  const auto h100 = lab07_test::h100_prop();
  // 32 KB per block: 228 KB / 32 KB = 7 by the textbook; with the reserve, 33 KB → 6.
  const auto reserve = exact_on(h100, 128, 0, 32 * 1024);
  INFO("32 KB per block: " << describe(reserve)
                           << "\nHint: add reserved_shared_per_block to every block.");
  CHECK(reserve.by_shared == 6);
  CHECK(reserve.blocks == 6);
  CHECK(reserve.limiter == Limiter::kSharedMemory);
  // 24,876 + 1,024 = 25,900 bytes would fit 9 times; rounded up to 25,984 it fits 8 times.
  const auto rounding = exact_on(h100, 128, 0, 24876);
  INFO("24,876 bytes per block: " << describe(rounding)
                                  << "\nHint: round the block's shared memory up to 128 bytes.");
  CHECK(rounding.by_shared == 8);
  CHECK(rounding.blocks == 8);
  // The largest a block may opt in to fits once; one byte more does not fit.
  CHECK(exact_on(h100, 128, 0, 232448).blocks == 1);
  CHECK(exact_on(h100, 128, 0, 232449).blocks == 0);
}

TEST_CASE("Blocks the hardware cannot launch give zero", "[lab07][host][exact]") {
  const auto h100 = lab07_test::h100_prop();
  const auto regs = exact_on(h100, 1024, 72, 0);  // 32 warps × 2304 registers > 65,536
  INFO("1024 threads at 72 registers: " << describe(regs));
  CHECK(regs.blocks == 0);
  CHECK(exact_on(h100, 1025, 0, 0).blocks == 0);
  CHECK(exact_on(h100, 1024, 64, 0).blocks == 1);
}

TEST_CASE("The notes' RTX 3070 holds 48 warps and 16 blocks per SM", "[lab07][host][exact]") {
  const auto rtx = lab07_test::rtx3070_prop();
  const auto small = exact_on(rtx, 64, 16, 0);
  INFO("64-thread blocks: " << describe(small));
  CHECK(small.blocks == 16);  // block slots: 32 warps of 48
  CHECK(small.max_warps == 48);
  CHECK(small.limiter == Limiter::kBlocks);
  const auto regs = exact_on(rtx, 256, 64, 0);
  INFO("256 threads at 64 registers: " << describe(regs));
  CHECK(regs.blocks == 4);
  CHECK(regs.warps == 32);
}
