// Lab 01 public tests: warps per block, idle lanes, the warp and lane of a thread and the
// divergence model on the CPU; on the GPU, the recorded warps and lanes against the
// hardware's warp votes, and divergent warps counted with votes against the model.
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/compare.hpp"
#include "cml/guard_check.hpp"
#include "cml/random.hpp"
#include "cml/testing.hpp"
#include "hardware_probe.hpp"
#include "warp_model.hpp"
#include "warp_sizing.cuh"

using lab01_test::count_by_hand;
using lab01_test::describe;

namespace {

std::string image(int width, int height, dim3 block) {
  return std::to_string(width) + "x" + std::to_string(height) + " image, " +
         std::to_string(block.x) + "x" + std::to_string(block.y) + " blocks";
}

// The student's prediction for one image against the count made by hand.
cml::CompareResult check_prediction(int width, int height, dim3 block) {
  const lab01::WarpCount want = count_by_hand(width, height, block);
  const lab01::WarpCount got = lab01::predict_divergence(width, height, block);
  cml::CompareResult r;
  r.checked = 1;
  if (lab01_test::same(got, want)) return r;
  r.ok = false;
  r.mismatches = 1;
  r.message = "predict_divergence(" + image(width, height, block) + ") gave " + describe(got) +
              "; counting every warp gives " + describe(want) +
              "\nHint: " + lab01_test::kPredictHint + "\n";
  return r;
}

// Counts divergent warps on the GPU with the student's kernel and checks them against the
// count by hand (and, when asked, against the student's own prediction).
cml::CompareResult check_measurement(int width, int height, dim3 block, std::uint64_t seed,
                                     bool against_prediction) {
  const lab01::WarpCount want = count_by_hand(width, height, block);
  cml::DeviceBuffer<unsigned long long> d_counts(2, 256);
  d_counts.poison();
  lab01::measure_divergence(width, height, block, d_counts.data());
  const auto counts = d_counts.download();
  cml::CompareResult r;
  r.checked = 1;
  std::ostringstream msg;
  if (auto bad = cml::check_guards(d_counts, "the two counters", image(width, height, block), seed,
                                   lab01_test::kCountersGuardHint);
      !bad.ok) {
    msg << bad.message << "\n";
  }
  const bool counted =
      counts[lab01::kWarpsSeen] == want.warps && counts[lab01::kDivergentSeen] == want.divergent;
  if (!counted) {
    msg << "warp votes over a " << image(width, height, block) << " counted "
        << counts[lab01::kWarpsSeen] << " warps, " << counts[lab01::kDivergentSeen]
        << " divergent; counting every warp by hand gives " << want.warps << " warps, "
        << want.divergent << " divergent (seed " << seed << ")\n"
        << "Hint: every lane votes with __ballot_sync(__activemask(), inside); lane 0 adds 1 "
           "to the warp count, and 1 to the divergent count when the votes are neither 0 "
           "nor all the active lanes. Launch enough blocks to cover the whole image.\n";
  }
  if (against_prediction) {
    const lab01::WarpCount predicted = lab01::predict_divergence(width, height, block);
    if (predicted.warps != counts[lab01::kWarpsSeen] ||
        predicted.divergent != counts[lab01::kDivergentSeen]) {
      msg << "the model and the GPU disagree on a " << image(width, height, block)
          << ": predict_divergence gives " << describe(predicted) << ", the GPU counted "
          << counts[lab01::kWarpsSeen] << " warps, " << counts[lab01::kDivergentSeen]
          << " divergent\n";
    }
  }
  r.message = msg.str();
  r.ok = r.message.empty();
  r.mismatches = r.ok ? 0 : 1;
  return r;
}

}  // namespace

TEST_CASE("A block is cut into warps of 32 threads and the last one may have idle lanes",
          "[lab01][host][warps]") {
  INFO(
      "warps_per_block(t) is t / 32 rounded up; idle_lanes(t) is what the last warp lacks "
      "of 32 lanes (0 when t is a multiple of 32)");
  // The three launches of the notes: 14, 36 and 48 threads.
  CHECK(lab01::warps_per_block(14) == 1);
  CHECK(lab01::idle_lanes(14) == 18);
  CHECK(lab01::warps_per_block(36) == 2);
  CHECK(lab01::idle_lanes(36) == 28);
  CHECK(lab01::warps_per_block(48) == 2);
  CHECK(lab01::idle_lanes(48) == 16);
  // Whole warps leave nothing idle.
  CHECK(lab01::warps_per_block(32) == 1);
  CHECK(lab01::idle_lanes(32) == 0);
  CHECK(lab01::warps_per_block(256) == 8);
  CHECK(lab01::idle_lanes(256) == 0);
  CHECK(lab01::warps_per_block(1024) == 32);
  CHECK(lab01::idle_lanes(1024) == 0);
  // One thread past a multiple of 32 costs a whole warp.
  CHECK(lab01::warps_per_block(1) == 1);
  CHECK(lab01::idle_lanes(1) == 31);
  CHECK(lab01::warps_per_block(33) == 2);
  CHECK(lab01::idle_lanes(33) == 31);
  CHECK(lab01::warps_per_block(200) == 7);  // a 10x20 block
  CHECK(lab01::idle_lanes(200) == 24);
}

TEST_CASE("A thread's warp and lane follow its linear index, x fastest, then y, then z",
          "[lab01][host][index]") {
  auto check = [](dim3 thread, dim3 block, int warp, int lane) {
    const lab01::WarpLane got = lab01::warp_lane(thread, block);
    INFO("thread (" << thread.x << "," << thread.y << "," << thread.z << ") of a "
                    << lab01_test::shape(block) << " block: expected warp " << warp << ", lane "
                    << lane << "; got warp " << got.warp << ", lane " << got.lane);
    CHECK(got.warp == warp);
    CHECK(got.lane == lane);
  };
  check(dim3(0, 0, 0), dim3(64), 0, 0);
  check(dim3(31, 0, 0), dim3(64), 0, 31);
  check(dim3(32, 0, 0), dim3(64), 1, 0);
  check(dim3(40, 0, 0), dim3(48), 1, 8);
  // 16x16: each warp is two rows of 16.
  check(dim3(15, 1, 0), dim3(16, 16), 0, 31);
  check(dim3(3, 2, 0), dim3(16, 16), 1, 3);
  check(dim3(15, 15, 0), dim3(16, 16), 7, 31);
  // 32x8: each warp is one row; 8x8: four rows.
  check(dim3(5, 3, 0), dim3(32, 8), 3, 5);
  check(dim3(5, 3, 0), dim3(8, 8), 0, 29);
  // A 5x3 block: rows do not line up with warps at all.
  check(dim3(4, 2, 0), dim3(5, 3), 0, 14);
  // 3-D: z is slowest.
  check(dim3(1, 2, 3), dim3(4, 4, 4), 1, 25);
  check(dim3(0, 0, 1), dim3(8, 8, 2), 2, 0);
  check(dim3(6, 2, 1), dim3(7, 3, 2), 1, 9);
  check(dim3(0, 0, 2), dim3(7, 3, 3), 1, 10);
  // Every thread of a few shapes.
  for (dim3 block : {dim3(48), dim3(16, 16), dim3(10, 20), dim3(5, 3, 7), dim3(1, 1, 64)}) {
    const std::string wrong = lab01_test::wrong_warp_lane(block);
    if (!wrong.empty()) FAIL(wrong);
  }
}

TEST_CASE(
    "A boundary check over 1-D data: 1 of 4 warps diverges for 100 elements, "
    "1 of 32 for 1000",
    "[lab01][host][predict]") {
  const lab01::WarpCount hundred = lab01::predict_divergence(100, 1, dim3(32));
  INFO("100 elements in 32-thread blocks: " << describe(hundred));
  CHECK(hundred.blocks == 4u);
  CHECK(hundred.warps == 4u);
  CHECK(hundred.divergent == 1u);
  const lab01::WarpCount thousand = lab01::predict_divergence(1000, 1, dim3(32));
  INFO("1000 elements in 32-thread blocks: " << describe(thousand));
  CHECK(thousand.blocks == 32u);
  CHECK(thousand.warps == 32u);
  CHECK(thousand.divergent == 1u);
  // A multiple of 32 leaves every warp whole.
  CHECK(lab01::predict_divergence(1024, 1, dim3(256)).divergent == 0u);
  // With 256-thread blocks, 1000 elements make 4 blocks and 32 warps; 992..999 share one.
  const lab01::WarpCount big = lab01::predict_divergence(1000, 1, dim3(256));
  INFO("1000 elements in 256-thread blocks: " << describe(big));
  CHECK(big.blocks == 4u);
  CHECK(big.warps == 32u);
  CHECK(big.divergent == 1u);
}

TEST_CASE(
    "A 200x150 image in 16x16 blocks has 130 blocks, 1040 warps and 75 divergent "
    "warps, not 80",
    "[lab01][host][predict]") {
  const lab01::WarpCount got = lab01::predict_divergence(200, 150, dim3(16, 16));
  INFO("predict_divergence(200, 150, 16x16) gave "
       << describe(got)
       << ". The 9 right-edge blocks above the corner have 8 divergent warps each (every "
          "warp holds columns 192..207, of which 192..199 are inside); the bottom-edge "
          "warps are wholly inside (rows 144..149) or wholly outside (rows 150..159); the "
          "corner block adds 3. 72 + 3 = 75: the notes' 80 counts the 8 warps of every "
          "edge block without asking whether their lanes disagree.");
  CHECK(got.blocks == 130u);
  CHECK(got.warps == 1040u);
  CHECK(got.divergent == 75u);
}

TEST_CASE("Predictions match counting every warp, for blocks of any shape",
          "[lab01][host][predict]") {
  struct Case {
    int width, height;
    dim3 block;
  };
  const std::vector<Case> cases = {{200, 150, dim3(16, 16)}, {200, 150, dim3(32, 8)},
                                   {200, 150, dim3(8, 32)},  {256, 256, dim3(16, 16)},
                                   {1, 1, dim3(16, 16)},     {33, 17, dim3(32, 1)},
                                   {31, 40, dim3(1, 32)},    {100, 3, dim3(14)},
                                   {100, 30, dim3(14, 14)},  {50, 50, dim3(5, 3)},
                                   {129, 127, dim3(36, 2)},  {1000, 1, dim3(48)},
                                   {17, 65, dim3(10, 20)},   {300, 200, dim3(64, 16)}};
  for (const Case& c : cases) CML_REQUIRE_MATCH(check_prediction(c.width, c.height, c.block));
}

TEST_CASE("The chosen block size is whole warps and lets whole blocks fill an SM",
          "[lab01][host][choose]") {
  struct Limits {
    const char* what;
    int per_block, per_sm, blocks_per_sm;
  };
  for (const Limits& l :
       {Limits{"2048 threads, 32 blocks per SM", 1024, 2048, 32},
        Limits{"1536 threads, 16 blocks per SM", 1024, 1536, 16},
        Limits{"1024 threads, 16 blocks per SM", 1024, 1024, 16},
        Limits{"2048 threads, 16 blocks per SM", 1024, 2048, 16},
        Limits{"512-thread blocks, 1536 threads, 8 blocks per SM", 512, 1536, 8}}) {
    const int bs = lab01::choose_block_size(l.per_block, l.per_sm, l.blocks_per_sm);
    INFO(l.what << " (" << l.per_block << " per block): choose_block_size returned " << bs);
    REQUIRE(bs > 0);
    CHECK(bs % 32 == 0);                      // whole warps: no idle lanes
    CHECK(bs <= l.per_block);                 // it launches
    CHECK(l.per_sm % bs == 0);                // whole blocks fill the SM's thread slots
    CHECK(l.per_sm / bs <= l.blocks_per_sm);  // without running out of block slots
  }
  // 64 threads at most per block, but 16 blocks of 64 fill only half of 2048 slots.
  CHECK(lab01::choose_block_size(64, 2048, 16) == 0);
}

TEST_CASE("Images and blocks outside the model are refused", "[lab01][host][given]") {
  CHECK_THROWS_AS(lab01::predict_divergence(0, 10, dim3(16, 16)), std::invalid_argument);
  CHECK_THROWS_AS(lab01::predict_divergence(10, 10, dim3(4, 4, 2)), std::invalid_argument);
  CHECK_THROWS_AS(lab01::predict_divergence(10, 10, dim3(33, 32)), std::invalid_argument);
  CHECK_THROWS_AS(lab01::measure_divergence(10, -1, dim3(32), nullptr), std::invalid_argument);
  CHECK_THROWS_AS(lab01::scale(nullptr, nullptr, 10, 1.0f, 0), std::invalid_argument);
  CHECK_THROWS_AS(lab01::scale(nullptr, nullptr, 10, 1.0f, 1025), std::invalid_argument);
}

TEST_CASE("The given scale kernel is right at every block size", "[lab01][gpu][given]") {
  const auto seed = cml::test_seed();
  for (int n : {1, 1000, 100003}) {
    const auto x = cml::random_floats(n, cml::derive_seed(seed, n));
    std::vector<double> want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) want[i] = 2.5 * static_cast<double>(x[i]);
    cml::DeviceBuffer<float> d_x(n), d_y(n, 1024);
    d_x.upload(x);
    for (int threads : {1, 14, 36, 256, 1024}) {
      d_y.poison();
      lab01::scale(d_x.data(), d_y.data(), n, 2.5f, threads);
      cml::CompareContext ctx;
      ctx.name = "y";
      ctx.size = "n=" + std::to_string(n) + ", " + std::to_string(threads) + "-thread blocks";
      ctx.seed = seed;
      ctx.hint = "the baseline is given code";
      CML_REQUIRE_MATCH(cml::compare(d_y.download(), want, cml::Tolerance{1e-6, 0.0}, ctx));
      CML_REQUIRE_MATCH(cml::check_guards(d_y, ctx, ctx.hint));
    }
  }
}

TEST_CASE("Each thread's recorded warp and lane agree with the hardware's warp votes",
          "[lab01][gpu][record]") {
  const auto seed = cml::test_seed();
  for (dim3 block :
       {dim3(14), dim3(36), dim3(48), dim3(32), dim3(1024), dim3(16, 16), dim3(32, 8), dim3(5, 3),
        dim3(10, 20), dim3(1, 64), dim3(4, 4, 4), dim3(7, 3, 2), dim3(3, 5, 7)}) {
    CML_REQUIRE_MATCH(lab01_test::check_record(block, seed));
  }
}

TEST_CASE("The hardware leaves idle exactly the lanes idle_lanes() predicts",
          "[lab01][gpu][record]") {
  for (int threads : {14, 36, 48, 64, 100, 1000}) {
    const auto hw = lab01_test::probe_hardware(dim3(threads));
    // __activemask() of the last thread is the last warp's occupied lanes.
    const int busy = __builtin_popcount(hw.active.back());
    const int warps = static_cast<int>(hw.first.back() / 32 + 1);
    INFO(threads << "-thread block: the hardware ran " << warps << " warp(s), the last with "
                 << busy
                 << " of 32 lanes busy (__activemask() = " << lab01_test::hex(hw.active.back())
                 << "); warps_per_block gave " << lab01::warps_per_block(threads)
                 << ", idle_lanes gave " << lab01::idle_lanes(threads));
    CHECK(lab01::warps_per_block(threads) == warps);
    CHECK(lab01::idle_lanes(threads) == 32 - busy);
  }
}

TEST_CASE("Warp votes count 75 divergent warps of 1040 for a 200x150 image in 16x16 blocks",
          "[lab01][gpu][measure]") {
  const auto seed = cml::test_seed();
  CML_REQUIRE_MATCH(check_measurement(200, 150, dim3(16, 16), seed, false));
  // The 1-D cases: 1 of 4 and 1 of 32.
  CML_REQUIRE_MATCH(check_measurement(100, 1, dim3(32), seed, false));
  CML_REQUIRE_MATCH(check_measurement(1000, 1, dim3(32), seed, false));
}

TEST_CASE("The GPU's count and predict_divergence agree for blocks of any shape",
          "[lab01][gpu][measure]") {
  const auto seed = cml::test_seed();
  const auto sizes = cml::random_ints(8, cml::derive_seed(seed, 101), 1, 700);
  for (dim3 block : {dim3(16, 16), dim3(32, 8), dim3(8, 32), dim3(14, 14), dim3(36, 2), dim3(5, 3),
                     dim3(1, 32), dim3(48)}) {
    for (std::size_t i = 0; i + 1 < sizes.size(); i += 2) {
      CML_REQUIRE_MATCH(check_measurement(sizes[i], sizes[i + 1], block, seed, true));
    }
  }
}

TEST_CASE("Small launches for the memory and race checkers", "[lab01][gpu][sanitizer]") {
  const auto seed = cml::test_seed();
  CML_REQUIRE_MATCH(lab01_test::check_record(dim3(7, 3, 2), seed));
  CML_REQUIRE_MATCH(check_measurement(200, 150, dim3(16, 16), seed, false));
}
