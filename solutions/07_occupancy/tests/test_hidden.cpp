// Lab 07 hidden tests: the exact calculator against the CUDA toolkit's own occupancy
// calculator (cuda_occupancy.h) on six GPU generations without a GPU, more textbook and
// budget cases, and a larger tuned chase.
#include <cuda_occupancy.h>

#include <sstream>
#include <string>

#include "chase_check.hpp"
#include "cml/testing.hpp"
#include "fake_devices.hpp"
#include "occupancy.cuh"

namespace {

int toolkit_blocks(const cudaDeviceProp& prop, int threads, int regs, std::size_t static_shared,
                   std::size_t dynamic_shared) {
  const cudaOccDeviceProp occ_prop = prop;
  cudaOccFuncAttributes attr;
  attr.maxThreadsPerBlock = 1024;
  attr.numRegs = regs;
  attr.sharedSizeBytes = static_shared;
  attr.partitionedGCConfig = PARTITIONED_GC_OFF;
  attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
  attr.maxDynamicSharedSizeBytes = prop.sharedMemPerBlockOptin - static_shared;
  attr.numBlockBarriers = 1;
  cudaOccDeviceState state;
  cudaOccResult result{};
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &occ_prop, &attr, &state, threads,
                                              dynamic_shared) != CUDA_OCC_SUCCESS) {
    return -1;
  }
  return result.activeBlocksPerMultiprocessor;
}

}  // namespace

TEST_CASE("The exact calculator equals the toolkit's calculator on six GPU generations",
          "[lab07][host][hidden][exact]") {
  const int regs_list[] = {0,  1,  8,  16, 24, 31, 32,  33,  40,  48, 56,
                           63, 64, 65, 72, 80, 96, 128, 168, 200, 255};
  const std::size_t shared_list[] = {0,     1,     127,   1000,  2048,   5000,   16384,
                                     24876, 32768, 49152, 65536, 100000, 150000, 232448};
  for (const auto& device : lab07_test::fake_devices()) {
    const auto limits = lab07::device_limits(device.prop);
    int checked = 0, wrong = 0;
    std::ostringstream first;
    for (int threads = 1; threads <= 1024; threads += (threads < 128 ? 1 : 7)) {
      for (int regs : regs_list) {
        for (std::size_t shared : shared_list) {
          if (shared > device.prop.sharedMemPerBlockOptin) continue;
          const int want = toolkit_blocks(device.prop, threads, regs, 0, shared);
          if (want < 0) continue;
          const int got = lab07::exact_occupancy(limits, {threads, regs, shared}).blocks;
          ++checked;
          if (got != want && ++wrong <= 5) {
            first << "  " << threads << " threads, " << regs << " registers, " << shared
                  << " B shared: expected " << want << " blocks, got " << got << "\n";
          }
        }
      }
    }
    INFO(device.name << ": " << wrong << " of " << checked << " configurations differ:\n"
                     << first.str());
    CHECK(checked > 1000);
    CHECK(wrong == 0);
  }
}

TEST_CASE("Textbook: partial warps and unused resources", "[lab07][host][hidden][textbook]") {
  const lab07::SmLimits a100{2048, 32, 65536, 164 * 1024};
  const auto o = lab07::textbook_occupancy(a100, {48, 0, 0});  // two warps, one half empty
  CHECK(o.by_threads == 32);
  CHECK(o.blocks == 32);
  CHECK(o.warps == 64);
  CHECK(o.by_registers == lab07::kUnlimited);
  CHECK(o.by_shared == lab07::kUnlimited);
  const auto shared = lab07::textbook_occupancy(a100, {256, 32, 48 * 1024});
  CHECK(shared.by_shared == 3);
  CHECK(shared.blocks == 3);
  CHECK(shared.limiter == lab07::Limiter::kSharedMemory);
  CHECK(lab07::textbook_occupancy(a100, {0, 0, 0}).blocks == 0);
}

TEST_CASE("Register budgets for odd block sizes", "[lab07][host][hidden][budget]") {
  const lab07::SmLimits a100{2048, 32, 65536, 164 * 1024};
  CHECK(lab07::register_budget(a100, 96) == 32);    // 21 blocks × 96 threads = 2016
  CHECK(lab07::register_budget(a100, 48) == 42);    // 32 blocks × 48 threads (two warps each)
  CHECK(lab07::register_budget(a100, 1000) == 32);  // 2 blocks
  CHECK(lab07::register_budget(a100, 0) == 0);
}

TEST_CASE("Exact: a kernel without registers or shared memory is limited by slots only",
          "[lab07][host][hidden][exact]") {
  const auto limits = lab07::device_limits(lab07_test::t4_prop());
  const auto o = lab07::exact_occupancy(limits, {32, 0, 0});
  CHECK(o.by_registers == lab07::kUnlimited);
  CHECK(o.by_shared == lab07::kUnlimited);  // no reserve before CC 8.0
  CHECK(o.blocks == 16);
  CHECK(o.max_warps == 32);
}

TEST_CASE("The tuned chase is right on a larger table and odd warp counts",
          "[lab07][gpu][hidden][chase]") {
  const auto seed = cml::test_seed();
  for (int warps : {3, 257, 20001}) {
    INFO("warps = " << warps);
    CML_REQUIRE_MATCH(
        lab07_test::check_chase(lab07::chase_tuned, 16, warps, 3, seed, lab07_test::kChaseHint));
  }
}
