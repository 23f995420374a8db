// Lab 01 hidden tests: every block size and shape against the test side's own formula,
// random images against a count by hand, 64-bit counts, odd device limits, and the GPU on
// random shapes.
#include <cstdint>
#include <string>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/random.hpp"
#include "cml/testing.hpp"
#include "warp_model.hpp"
#include "warp_sizing.cuh"

namespace {

// A random 2-D block of 1..1024 threads, and 3-D when `three_d`.
dim3 random_block(std::uint64_t seed, int i, bool three_d) {
  const auto v = cml::random_ints(3, cml::derive_seed(seed, 1000 + i), 1, 40);
  dim3 block(v[0], v[1], three_d ? 1 + v[2] % 8 : 1);
  while (block.x * block.y * block.z > 1024) block.y = (block.y + 1) / 2;
  return block;
}

}  // namespace

TEST_CASE("Warps and idle lanes are right for every block size", "[lab01][host][hidden][warps]") {
  CHECK(lab01::warps_per_block(0) == 0);
  CHECK(lab01::idle_lanes(0) == 0);
  for (int threads = 1; threads <= 1024; ++threads) {
    const int warps = (threads + 31) / 32;
    INFO(threads << " threads: warps_per_block gave " << lab01::warps_per_block(threads)
                 << ", idle_lanes gave " << lab01::idle_lanes(threads));
    REQUIRE(lab01::warps_per_block(threads) == warps);
    REQUIRE(lab01::idle_lanes(threads) == warps * 32 - threads);
  }
}

TEST_CASE("Warp and lane are right for every thread of random 3-D blocks",
          "[lab01][host][hidden][index]") {
  const auto seed = cml::test_seed();
  for (int i = 0; i < 20; ++i) {
    const dim3 block = random_block(seed, i, true);
    const std::string wrong =
        lab01_test::wrong_warp_lane(block, " (seed " + std::to_string(seed) + ")");
    if (!wrong.empty()) FAIL(wrong);
  }
}

TEST_CASE("Predictions match a count by hand on random images and blocks",
          "[lab01][host][hidden][predict]") {
  const auto seed = cml::test_seed();
  const auto sizes = cml::random_ints(120, cml::derive_seed(seed, 7), 1, 400);
  for (int i = 0; i < 60; ++i) {
    const dim3 block = random_block(seed, i, false);
    const int width = sizes[2 * i], height = sizes[2 * i + 1];
    const auto want = lab01_test::count_by_hand(width, height, block);
    const auto got = lab01::predict_divergence(width, height, block);
    INFO(width << "x" << height << " image, " << lab01_test::shape(block) << " blocks (seed "
               << seed << "): predicted " << lab01_test::describe(got) << ", by hand "
               << lab01_test::describe(want));
    REQUIRE(lab01_test::same(got, want));
  }
}

TEST_CASE("Counts of huge grids do not overflow 32 bits", "[lab01][host][hidden][predict]") {
  // 70000^2 one-thread blocks: 4.9e9 blocks and warps, none divergent (one lane each).
  const auto ones = lab01::predict_divergence(70000, 70000, dim3(1, 1));
  INFO("70000x70000 image, 1x1 blocks: " << lab01_test::describe(ones));
  CHECK(ones.blocks == 4'900'000'000u);
  CHECK(ones.warps == 4'900'000'000u);
  CHECK(ones.divergent == 0u);
  // 65537^2 in 32x32 blocks: each warp is one row of a block. The right-edge column (one
  // valid column) diverges in all 32 warps of its 2048 blocks; the bottom row's warps are
  // whole rows, inside or outside; the corner adds its first warp.
  const auto edge = lab01::predict_divergence(65537, 65537, dim3(32, 32));
  INFO("65537x65537 image, 32x32 blocks: " << lab01_test::describe(edge));
  CHECK(edge.blocks == 2049u * 2049u);
  CHECK(edge.warps == 2049u * 2049u * 32u);
  CHECK(edge.divergent == 2048u * 32u + 1u);
}

TEST_CASE("The block size fits odd device limits", "[lab01][host][hidden][choose]") {
  struct Limits {
    int per_block, per_sm, blocks_per_sm;
  };
  for (const Limits& l : {Limits{256, 2048, 32}, Limits{1024, 1536, 16}, Limits{96, 1536, 16},
                          Limits{1024, 768, 8}, Limits{32, 64, 2}, Limits{1024, 2048, 2}}) {
    const int bs = lab01::choose_block_size(l.per_block, l.per_sm, l.blocks_per_sm);
    INFO("limits " << l.per_block << " per block, " << l.per_sm << " per SM, " << l.blocks_per_sm
                   << " blocks per SM: got " << bs);
    REQUIRE(bs > 0);
    CHECK(bs % 32 == 0);
    CHECK(bs <= l.per_block);
    CHECK(l.per_sm % bs == 0);
    CHECK(l.per_sm / bs <= l.blocks_per_sm);
  }
  CHECK(lab01::choose_block_size(1024, 2048, 1) == 0);  // 2048 threads never fit one block
  CHECK(lab01::choose_block_size(16, 1024, 64) == 0);   // not even one whole warp fits
}

TEST_CASE("Recorded warps and lanes are right for random 3-D blocks",
          "[lab01][gpu][hidden][record]") {
  const auto seed = cml::test_seed();
  for (int i = 0; i < 12; ++i) {
    const dim3 block = random_block(seed, 100 + i, true);
    const int n = lab01_test::threads_of(block);
    const lab01_test::Recorded recorded = lab01_test::record(block, seed);
    CML_REQUIRE_MATCH(recorded.guards);
    const std::vector<int>& warp = recorded.warp;
    const std::vector<int>& lane = recorded.lane;
    for (int t = 0; t < n; ++t) {
      const int w = t / 32, l = t % 32;
      if (warp[t] != w || lane[t] != l) {
        FAIL("thread " << lab01_test::thread_at(t, block) << " of a " << lab01_test::shape(block)
                       << " block (seed " << seed << "): recorded warp " << warp[t] << ", lane "
                       << lane[t] << "; expected warp " << w << ", lane " << l);
      }
    }
  }
}

TEST_CASE("Warp votes count divergent warps of random and large images",
          "[lab01][gpu][hidden][measure]") {
  const auto seed = cml::test_seed();
  const auto sizes = cml::random_ints(24, cml::derive_seed(seed, 9), 1, 600);
  struct Case {
    int width, height;
    dim3 block;
  };
  std::vector<Case> cases = {{4099, 2051, dim3(24, 24)},
                             {100003, 1, dim3(1000)},
                             {1, 5000, dim3(1, 64)}};
  for (int i = 0; i < 12; ++i) {
    cases.push_back({sizes[2 * i], sizes[2 * i + 1], random_block(seed, 200 + i, false)});
  }
  cml::DeviceBuffer<unsigned long long> d_counts(2, 256);
  for (const Case& c : cases) {
    const auto want = lab01_test::count_by_hand(c.width, c.height, c.block);
    d_counts.poison();
    lab01::measure_divergence(c.width, c.height, c.block, d_counts.data());
    const auto got = d_counts.download();
    INFO(c.width << "x" << c.height << " image, " << lab01_test::shape(c.block) << " blocks (seed "
                 << seed << "): the GPU counted " << got[0] << " warps, " << got[1]
                 << " divergent; by hand " << want.warps << " warps, " << want.divergent
                 << " divergent");
    CML_REQUIRE_MATCH(
        cml::check_guards(d_counts, "the two counters", "", seed, lab01_test::kCountersGuardHint));
    REQUIRE(got[lab01::kWarpsSeen] == want.warps);
    REQUIRE(got[lab01::kDivergentSeen] == want.divergent);
  }
}
