// Lab 07 public GPU tests: the exact calculator against the CUDA runtime on a sweep of
// kernels, block sizes and shared-memory sizes; the chase kernels against the CPU model; and
// the occupancy the tuned chase's configuration reaches.
#include <cuda_runtime.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "chase_check.hpp"
#include "cml/check.hpp"
#include "cml/device_info.hpp"
#include "cml/kernel_query.hpp"
#include "cml/testing.hpp"
#include "occupancy.cuh"
#include "sweep_kernels.hpp"

namespace {

cudaDeviceProp this_device() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop;
}

const int kBlockSizes[] = {1,   16,  31,  32,  33,  64,  65,  96,  100, 128, 160,  192, 224, 250,
                           256, 288, 320, 352, 384, 416, 448, 480, 512, 544, 576,  608, 640, 672,
                           704, 736, 768, 800, 832, 864, 896, 928, 960, 992, 1000, 1024};

std::vector<std::size_t> dynamic_sizes(std::size_t most) {
  const std::size_t sizes[] = {0,     1,     127,   128,    129,    1000,   2048,   3072,
                               5120,  8192,  12288, 16384,  24876,  30000,  32768,  45000,
                               49152, 65536, 80000, 100000, 116736, 150000, 200000, 232448};
  std::vector<std::size_t> out;
  for (std::size_t s : sizes) {
    if (s <= most) out.push_back(s);
  }
  if (std::find(out.begin(), out.end(), most) == out.end()) out.push_back(most);
  return out;
}

}  // namespace

TEST_CASE("device_limits matches this GPU's properties", "[lab07][gpu][limits]") {
  const cudaDeviceProp prop = this_device();
  const auto d = lab07::device_limits(prop);
  INFO(prop.name << " (CC " << prop.major << "." << prop.minor << ")");
  CHECK(d.sm.max_threads == prop.maxThreadsPerMultiProcessor);
  CHECK(d.sm.max_blocks == prop.maxBlocksPerMultiProcessor);
  CHECK(d.sm.registers == prop.regsPerMultiprocessor);
  CHECK(d.sm.shared_bytes == prop.sharedMemPerMultiprocessor);
  CHECK(d.max_registers_per_block == prop.regsPerBlock);
  CHECK(d.max_shared_per_block == prop.sharedMemPerBlockOptin);
  CHECK(d.reserved_shared_per_block == prop.reservedSharedMemPerBlock);
  CHECK(d.register_alloc_unit == 256);
  CHECK(d.shared_alloc_unit == (prop.major >= 8 ? 128u : 256u));
}

TEST_CASE("The exact calculator equals cudaOccupancyMaxActiveBlocksPerMultiprocessor on a sweep",
          "[lab07][gpu][exact]") {
  const cudaDeviceProp prop = this_device();
  const auto limits = lab07::device_limits(prop);
  auto kernels = lab07_test::sweep_kernels();
  kernels.push_back({"lab07 chase_baseline kernel", lab07::chase_baseline_config().kernel});
  kernels.push_back({"lab07 chase_tuned kernel", lab07::chase_tuned_config().kernel});

  int configurations = 0;
  int equal = 0;
  std::set<int> register_counts;
  std::size_t largest_shared = 0;
  std::ostringstream mismatches;
  for (const auto& k : kernels) {
    const cudaFuncAttributes attr = cml::func_attributes(k.func);
    register_counts.insert(attr.numRegs);
    std::vector<std::size_t> dynamic = {0};
    if (k.dynamic_shared) {
      const int most = static_cast<int>(prop.sharedMemPerBlockOptin - attr.sharedSizeBytes);
      CUDA_CHECK(cudaFuncSetAttribute(k.func, cudaFuncAttributeMaxDynamicSharedMemorySize, most));
      dynamic = dynamic_sizes(static_cast<std::size_t>(most));
    }
    for (int threads : kBlockSizes) {
      // Beyond the kernel's own limit a launch would fail; the runtime is not asked there.
      if (threads > attr.maxThreadsPerBlock) continue;
      for (std::size_t dyn : dynamic) {
        const int runtime = cml::max_active_blocks(k.func, threads, dyn);
        const lab07::BlockUsage usage{threads, attr.numRegs, attr.sharedSizeBytes + dyn};
        const auto mine = lab07::exact_occupancy(limits, usage);
        ++configurations;
        largest_shared = std::max(largest_shared, usage.shared_bytes);
        if (mine.blocks == runtime) {
          ++equal;
        } else if (configurations - equal <= 8) {
          mismatches << "  " << k.name << ": " << threads << " threads, " << attr.numRegs
                     << " registers, " << usage.shared_bytes << " B shared ("
                     << attr.sharedSizeBytes << " static) -> runtime " << runtime
                     << " blocks, yours " << mine.blocks << " (by_threads " << mine.by_threads
                     << ", by_blocks " << mine.by_blocks << ", by_registers " << mine.by_registers
                     << ", by_shared " << mine.by_shared << ")\n";
        }
      }
    }
  }
  std::ostringstream regs;
  for (int r : register_counts) regs << (regs.tellp() > 0 ? "," : "") << r;
  std::cout << "occupancy sweep on " << prop.name << ": " << configurations << " configurations ("
            << kernels.size() << " kernels, registers per thread {" << regs.str()
            << "}, shared memory up to " << largest_shared << " B), " << equal
            << " equal to cudaOccupancyMaxActiveBlocksPerMultiprocessor\n";
  INFO(configurations - equal << " of " << configurations
                              << " configurations differ; the first ones:\n"
                              << mismatches.str()
                              << "Hint: check which by_* value is off; the handout lists each "
                                 "rounding rule with an example.");
  REQUIRE(configurations > 0);
  CHECK(equal == configurations);
}

TEST_CASE("The baseline chase matches the CPU model", "[lab07][gpu][given]") {
  const auto seed = cml::test_seed();
  for (int warps : {1, 5, 33, 300}) {
    CML_REQUIRE_MATCH(lab07_test::check_chase(lab07::chase_baseline, 10, warps, 1, seed,
                                              "the baseline is given code"));
  }
}

TEST_CASE("The tuned chase matches the CPU model", "[lab07][gpu][chase]") {
  const auto seed = cml::test_seed();
  for (int warps : {1, 2, 7, 8, 9, 33, 1000, 4096}) {
    INFO("warps = " << warps);
    CML_REQUIRE_MATCH(
        lab07_test::check_chase(lab07::chase_tuned, 12, warps, 2, seed, lab07_test::kChaseHint));
  }
}

TEST_CASE("The tuned chase keeps at least three quarters of the warp slots busy",
          "[lab07][gpu][tuned]") {
  const cudaDeviceProp prop = this_device();
  const auto config = lab07::chase_tuned_config();
  REQUIRE(config.kernel != nullptr);
  const cudaFuncAttributes attr = cml::func_attributes(config.kernel);
  const int blocks = cml::max_active_blocks(config.kernel, config.block_threads, 0);
  const int warps_per_block = (config.block_threads + prop.warpSize - 1) / prop.warpSize;
  const int max_warps = prop.maxThreadsPerMultiProcessor / prop.warpSize;
  const double occupancy = static_cast<double>(blocks * warps_per_block) / max_warps;
  const auto base = lab07::chase_baseline_config();
  const int base_blocks = cml::max_active_blocks(base.kernel, base.block_threads, 0);
  INFO("tuned chase: " << config.block_threads << "-thread blocks, " << attr.numRegs
                       << " registers per thread -> " << blocks << " blocks, "
                       << blocks * warps_per_block << " of " << max_warps << " warps ("
                       << static_cast<int>(occupancy * 100 + 0.5) << " %); the baseline gets "
                       << base_blocks << " blocks of " << base.block_threads << " threads."
                       << "\nHint: the register file binds first; __launch_bounds__(B, M) caps "
                          "registers at regsPerMultiprocessor / (B × M).");
  CHECK(occupancy >= 0.75);
}

TEST_CASE("A small chase for the memory checker", "[lab07][gpu][sanitizer]") {
  CML_REQUIRE_MATCH(lab07_test::check_chase(lab07::chase_tuned, 8, 40, 1, cml::test_seed(),
                                            lab07_test::kChaseHint));
}
