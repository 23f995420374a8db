// Lab 03 public tests: the shared-buffer layout and the tile chooser on the CPU; the reverses,
// the three-array kernel and the blur on the GPU, with how they declare their shared memory
// read back through cudaFuncGetAttributes.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cml/device_info.hpp"
#include "cml/testing.hpp"
#include "shared_check.hpp"
#include "shared_memory.cuh"

using lab03::array_of;
using lab03::SharedLimits;
using lab03_test::check_blur_random;
using lab03_test::check_carve;
using lab03_test::check_reverse;
using lab03_test::kBlurHint;
using lab03_test::shared_blur_with_tile;

namespace {

using Offsets = std::vector<std::size_t>;

// What an H100 (CC 9.0) reports: 48 KB by default, 227 KB with opt-in, 228 KB per SM, 1 KB
// reserved per block, 2048 threads per SM.
constexpr SharedLimits kH100{49152, 232448, 233472, 1024, 2048};
// The notes' RTX 3070 (CC 8.6): 99 KB with opt-in, 100 KB per SM, 1536 threads per SM.
constexpr SharedLimits kRtx3070{49152, 101376, 102400, 1024, 1536};
// A device with no opt-in above the default and no per-block reserve.
constexpr SharedLimits kNoOptin{49152, 0, 65536, 0, 2048};

std::string show(const lab03::BlurPlan& p) {
  return "{tile " + std::to_string(p.tile) + ", shared_bytes " + std::to_string(p.shared_bytes) +
         ", needs_optin " + (p.needs_optin ? "true" : "false") + "}";
}

void check_plan(const SharedLimits& limits, int radius, int blocks_per_sm, int tile,
                std::size_t bytes, bool optin) {
  const auto plan = lab03::plan_blur_tile(limits, radius, blocks_per_sm);
  INFO("plan_blur_tile(per_block "
       << limits.per_block << ", optin " << limits.per_block_optin << ", per_sm " << limits.per_sm
       << ", reserved " << limits.reserved_per_block << "; radius " << radius << ", blocks_per_sm "
       << blocks_per_sm << ") = " << show(plan));
  CHECK(plan.tile == tile);
  CHECK(plan.shared_bytes == bytes);
  CHECK(plan.needs_optin == optin);
}

}  // namespace

// ---- host: the layout of several arrays in one buffer ------------------------------------

TEST_CASE("Arrays are placed in order, each at a multiple of its alignment",
          "[lab03][host][layout]") {
  {
    INFO("3 bytes, 5 floats, 2 doubles: the floats skip 1 byte, the doubles 0");
    const auto l = lab03::plan_shared_layout(
        {array_of<std::uint8_t>(3), array_of<float>(5), array_of<double>(2)});
    CHECK(l.offsets == Offsets{0, 4, 24});
    CHECK(l.total_bytes == 40u);
  }
  {
    INFO("1 byte then 1 double: a wider type after a narrower one needs 7 bytes of padding");
    const auto l = lab03::plan_shared_layout({array_of<std::uint8_t>(1), array_of<double>(1)});
    CHECK(l.offsets == Offsets{0, 8});
    CHECK(l.total_bytes == 16u);
  }
  {
    INFO("widest first: 1 double, 1 byte, 1 float");
    const auto l = lab03::plan_shared_layout(
        {array_of<double>(1), array_of<std::uint8_t>(1), array_of<float>(1)});
    CHECK(l.offsets == Offsets{0, 8, 12});
    CHECK(l.total_bytes == 16u);
  }
  {
    INFO("the notes' order, 3 ints, 2 floats, 5 chars: no padding needed");
    const auto l =
        lab03::plan_shared_layout({array_of<int>(3), array_of<float>(2), array_of<char>(5)});
    CHECK(l.offsets == Offsets{0, 12, 20});
    CHECK(l.total_bytes == 25u);
  }
}

TEST_CASE("Empty arrays take no room and a 16-byte type starts at a multiple of 16",
          "[lab03][host][layout]") {
  {
    const auto l = lab03::plan_shared_layout({array_of<std::uint8_t>(0), array_of<double>(4)});
    CHECK(l.offsets == Offsets{0, 0});
    CHECK(l.total_bytes == 32u);
  }
  {
    const auto l = lab03::plan_shared_layout(
        {array_of<std::uint8_t>(5), array_of<float>(0), array_of<double>(1)});
    CHECK(l.offsets == Offsets{0, 8, 8});
    CHECK(l.total_bytes == 16u);
  }
  {
    const auto l = lab03::plan_shared_layout({array_of<float>(1), array_of<float4>(2)});
    CHECK(l.offsets == Offsets{0, 16});
    CHECK(l.total_bytes == 48u);
  }
  {
    const auto l = lab03::plan_shared_layout({});
    CHECK(l.offsets.empty());
    CHECK(l.total_bytes == 0u);
  }
}

TEST_CASE("Alignments that are not powers of two are refused", "[lab03][host][given]") {
  CHECK_THROWS_AS(lab03::plan_shared_layout({lab03::SharedArray{4, 4, 0}}), std::invalid_argument);
  CHECK_THROWS_AS(lab03::plan_shared_layout({array_of<float>(1), lab03::SharedArray{4, 12, 12}}),
                  std::invalid_argument);
}

// ---- host: the run-time tile chooser ------------------------------------------------------

TEST_CASE("The blur tile fits an H100's per-block and per-SM shared memory",
          "[lab03][host][choose]") {
  // 8 blocks of 256 threads fill the SM's 2048 thread slots: 228 KB / 8 - 1 KB each.
  check_plan(kH100, 8, 8, 6912, 27712, false);
  check_plan(kH100, 8, 4, 14080, 56384, true);
  check_plan(kH100, 8, 2, 28672, 114752, true);
  // One block per SM: the opt-in limit (227 KB) binds, not 228 KB - 1 KB (the same here).
  check_plan(kH100, 8, 1, 57856, 231488, true);
  // The halo is part of the tile's footprint: radius 64 leaves exactly 6912 outputs.
  check_plan(kH100, 64, 8, 6912, 28160, false);
}

TEST_CASE("The blur tile follows other GPUs' limits", "[lab03][host][choose]") {
  check_plan(kRtx3070, 8, 1, 25088, 100416, true);
  check_plan(kRtx3070, 8, 6, 3840, 15424, false);
  // Without an opt-in limit, the default 48 KB per block binds.
  check_plan(kNoOptin, 8, 1, 12032, 48192, false);
  // Nothing fits: 2 KB per SM minus a 1 KB reserve leaves 256 floats, less than 256 + halo.
  check_plan(SharedLimits{49152, 0, 2048, 1024, 2048}, 8, 1, 0, 0, false);
}

TEST_CASE("The tile chooser refuses a negative radius and fewer than one block",
          "[lab03][host][given]") {
  CHECK_THROWS_AS(lab03::plan_blur_tile(kH100, -1, 8), std::invalid_argument);
  CHECK_THROWS_AS(lab03::plan_blur_tile(kH100, 8, 0), std::invalid_argument);
}

// ---- GPU: reverse, static and dynamic -----------------------------------------------------

TEST_CASE("The baseline blur matches the CPU reference", "[lab03][gpu][given]") {
  const auto seed = cml::test_seed();
  for (int n : {1, 2, 3, 33, 129, 1000}) {
    for (int radius : {0, 1, 8}) {
      CML_REQUIRE_MATCH(
          check_blur_random(lab03::blur_global, n, radius, seed, "the baseline is given code"));
    }
  }
}

TEST_CASE("The static reverse reverses every length up to 64 from a statically declared array",
          "[lab03][gpu][reverse]") {
  const auto seed = cml::test_seed();
  for (int n : {1, 2, 3, 31, 32, 33, 63, 64}) {
    CML_REQUIRE_MATCH(check_reverse(lab03::reverse_static, n, seed));
  }
  const auto attributes = lab03::kernel_attributes(lab03::Kernel::ReverseStatic);
  INFO("cudaFuncGetAttributes(reverse_static_kernel).sharedSizeBytes = "
       << attributes.sharedSizeBytes
       << "; a `__shared__ int tile[kStaticReverseSize]` makes it at least 256");
  CHECK(attributes.sharedSizeBytes >= lab03::kStaticReverseSize * sizeof(int));
}

TEST_CASE("The dynamic reverse handles any length and declares no static shared memory",
          "[lab03][gpu][reverse]") {
  const auto seed = cml::test_seed();
  // 1024 threads at most: longer arrays need each thread to move several elements;
  // 12288 ints are exactly the default 48 KB.
  for (int n : {1, 2, 3, 31, 32, 33, 127, 128, 129, 1000, 1024, 1025, 4097, 12288}) {
    CML_REQUIRE_MATCH(check_reverse(lab03::reverse_dynamic, n, seed));
  }
  const auto attributes = lab03::kernel_attributes(lab03::Kernel::ReverseDynamic);
  INFO("cudaFuncGetAttributes(reverse_dynamic_kernel).sharedSizeBytes = "
       << attributes.sharedSizeBytes
       << "; the dynamic version must size its array at launch (extern __shared__), not "
          "declare a fixed one");
  CHECK(attributes.sharedSizeBytes == 0u);
}

TEST_CASE("The dynamic reverse works above 48 KB and at the block limit by opting in",
          "[lab03][gpu][optin]") {
  const auto device = cml::query_device();
  REQUIRE(device.has_value());
  const std::size_t limit = std::max(device->shared_per_block, device->shared_per_block_optin);
  const int at_limit = static_cast<int>(limit / sizeof(int));
  const auto seed = cml::test_seed();
  INFO("this GPU: " << device->shared_per_block << " bytes per block by default, " << limit
                    << " with opt-in");
  if (limit <= lab03::kDefaultSharedPerBlock) {
    WARN("this GPU offers no opt-in above 48 KB per block: only the default limit is tested");
  } else {
    CML_REQUIRE_MATCH(check_reverse(lab03::reverse_dynamic, 12289, seed));
  }
  CML_REQUIRE_MATCH(check_reverse(lab03::reverse_dynamic, at_limit, seed));
  const auto attributes = lab03::kernel_attributes(lab03::Kernel::ReverseDynamic);
  INFO("maxDynamicSharedSizeBytes = " << attributes.maxDynamicSharedSizeBytes
                                      << " after the launch with " << at_limit
                                      << " ints: cudaFuncSetAttribute raises it");
  CHECK(static_cast<std::size_t>(attributes.maxDynamicSharedSizeBytes) >=
        static_cast<std::size_t>(at_limit) * sizeof(int));
  CHECK_THROWS_AS(lab03::reverse_dynamic(nullptr, at_limit + 1), std::invalid_argument);
}

// ---- GPU: three arrays in one buffer -------------------------------------------------------

TEST_CASE("Three differently typed arrays share one buffer without overlapping",
          "[lab03][gpu][carve]") {
  const auto seed = cml::test_seed();
  const int cases[][3] = {{1, 1, 1},   {3, 5, 2},       {1, 0, 1},          {0, 3, 0},
                          {33, 17, 9}, {1001, 301, 99}, {4095, 1023, 1024}, {12289, 2047, 2047}};
  for (const auto& c : cases) {
    CML_REQUIRE_MATCH(check_carve(c[0], c[1], c[2], seed));
  }
  const auto attributes = lab03::kernel_attributes(lab03::Kernel::CarveReverse);
  INFO("carve_reverse_kernel declares " << attributes.sharedSizeBytes
                                        << " bytes statically; all three arrays belong in "
                                           "the one extern buffer");
  CHECK(attributes.sharedSizeBytes == 0u);
}

// ---- GPU: the blur with a run-time tile ----------------------------------------------------

TEST_CASE("The shared blur matches the reference for odd sizes, radii and tiles",
          "[lab03][gpu][blur]") {
  const auto seed = cml::test_seed();
  for (int tile : {1, 7, 256, 1000}) {
    for (int radius : {0, 1, 3, 8}) {
      for (int n : {1, 2, 3, 31, 33, 127, 129, 1000, 10007}) {
        CML_REQUIRE_MATCH(check_blur_random(shared_blur_with_tile(tile), n, radius, seed, kBlurHint,
                                            ", tile=" + std::to_string(tile)));
      }
    }
  }
  const auto attributes = lab03::kernel_attributes(lab03::Kernel::BlurShared);
  INFO("blur_shared_kernel declares " << attributes.sharedSizeBytes
                                      << " bytes statically; its tile is sized at run time");
  CHECK(attributes.sharedSizeBytes == 0u);
}

TEST_CASE("The tile chosen for this GPU blurs an array that fills the GPU", "[lab03][gpu][blur]") {
  const auto device = cml::query_device();
  REQUIRE(device.has_value());
  const int blocks_per_sm = device->max_threads_per_sm / lab03::kBlurThreads;
  const auto plan = lab03::plan_blur_tile(lab03::limits_of(*device), 8, blocks_per_sm);
  INFO("plan_blur_tile(this GPU, radius 8, " << blocks_per_sm
                                             << " blocks per SM) = " << show(plan));
  REQUIRE(plan.tile >= lab03::kBlurThreads);
  const int n = (1 << 24) + 3;
  CML_REQUIRE_MATCH(check_blur_random(shared_blur_with_tile(plan.tile), n, 8, cml::test_seed(),
                                      kBlurHint, ", tile=" + std::to_string(plan.tile)));
}

TEST_CASE("The shared blur works above 48 KB and at the block limit by opting in",
          "[lab03][gpu][optin]") {
  const auto device = cml::query_device();
  REQUIRE(device.has_value());
  const std::size_t limit = std::max(device->shared_per_block, device->shared_per_block_optin);
  const int radius = 8;
  // One float past the default 48 KB, and exactly the opt-in limit.
  const int above_default =
      static_cast<int>(lab03::kDefaultSharedPerBlock / sizeof(float)) - 2 * radius + 1;
  const int at_limit = static_cast<int>(limit / sizeof(float)) - 2 * radius;
  const auto seed = cml::test_seed();
  std::vector<int> tiles{at_limit};
  if (limit > lab03::kDefaultSharedPerBlock) {
    tiles.insert(tiles.begin(), above_default);
  } else {
    WARN("this GPU offers no opt-in above 48 KB per block: only the default limit is tested");
  }
  for (int tile : tiles) {
    INFO("tile " << tile << " needs " << (tile + 2 * radius) * sizeof(float)
                 << " bytes; this GPU allows " << limit << " per block with opt-in");
    CML_REQUIRE_MATCH(check_blur_random(shared_blur_with_tile(tile), 3 * tile + 5, radius, seed,
                                        kBlurHint, ", tile=" + std::to_string(tile)));
  }
  const auto attributes = lab03::kernel_attributes(lab03::Kernel::BlurShared);
  INFO("maxDynamicSharedSizeBytes = " << attributes.maxDynamicSharedSizeBytes
                                      << ": call cudaFuncSetAttribute(blur_shared_kernel, "
                                         "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)");
  CHECK(static_cast<std::size_t>(attributes.maxDynamicSharedSizeBytes) >= limit);
  CHECK_THROWS_AS(lab03::blur_shared(nullptr, nullptr, 100, radius, at_limit + 1),
                  std::invalid_argument);
}

// ---- small cases for compute-sanitizer (racecheck finds a missing __syncthreads) -----------

TEST_CASE("Small cases for the race checker", "[lab03][gpu][sanitizer]") {
  const auto seed = cml::test_seed();
  CML_REQUIRE_MATCH(check_reverse(lab03::reverse_static, 64, seed));
  CML_REQUIRE_MATCH(check_reverse(lab03::reverse_dynamic, 300, seed));
  CML_REQUIRE_MATCH(check_reverse(lab03::reverse_dynamic, 2500, seed));
  CML_REQUIRE_MATCH(check_carve(5, 7, 3, seed));
  CML_REQUIRE_MATCH(check_carve(700, 300, 200, seed));
  CML_REQUIRE_MATCH(
      check_blur_random(shared_blur_with_tile(512), 2000, 3, seed, kBlurHint, ", tile=512"));
}
