// Lab 03 hidden tests: what the public tests leave open (order of the arrays, counts beyond
// 32 bits, other GPUs' limits, tiles at the exact budget, races, radii wider than the array).
#include <cstdint>
#include <cstring>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/random.hpp"
#include "cml/testing.hpp"
#include "shared_check.hpp"
#include "shared_memory.cuh"

using lab03::array_of;
using lab03::SharedLimits;

namespace {
using Offsets = std::vector<std::size_t>;
}

TEST_CASE("The order of the arrays decides the padding", "[lab03][host][hidden][layout]") {
  const auto narrow_first =
      lab03::plan_shared_layout({array_of<std::uint8_t>(1), array_of<std::uint16_t>(1),
                                 array_of<float>(1), array_of<double>(1)});
  CHECK(narrow_first.offsets == Offsets{0, 2, 4, 8});
  CHECK(narrow_first.total_bytes == 16u);
  const auto wide_first =
      lab03::plan_shared_layout({array_of<double>(1), array_of<float>(1),
                                 array_of<std::uint16_t>(1), array_of<std::uint8_t>(1)});
  CHECK(wide_first.offsets == Offsets{0, 8, 12, 14});
  CHECK(wide_first.total_bytes == 15u);
  const auto mixed = lab03::plan_shared_layout(
      {array_of<char>(7), array_of<double2>(1), array_of<short>(3), array_of<int>(1),
       array_of<char>(1), array_of<double>(2), array_of<float4>(1)});
  CHECK(mixed.offsets == Offsets{0, 16, 32, 40, 44, 48, 64});
  CHECK(mixed.total_bytes == 80u);
}

TEST_CASE("Offsets are computed in 64 bits", "[lab03][host][hidden][layout]") {
  const auto l =
      lab03::plan_shared_layout({array_of<std::uint8_t>(3'000'000'001ull), array_of<double>(1)});
  CHECK(l.offsets == Offsets{0, 3'000'000'008ull});
  CHECK(l.total_bytes == 3'000'000'016ull);
}

TEST_CASE("The tile chooser on an A100 and a V100", "[lab03][host][hidden][choose]") {
  const SharedLimits a100{49152, 166912, 167936, 1024, 2048};
  const SharedLimits v100{49152, 98304, 98304, 0, 2048};
  const auto a1 = lab03::plan_blur_tile(a100, 8, 1);
  CHECK(a1.tile == 41472);
  CHECK(a1.shared_bytes == 165952u);
  CHECK(a1.needs_optin);
  const auto a8 = lab03::plan_blur_tile(a100, 8, 8);
  CHECK(a8.tile == 4864);
  CHECK(a8.shared_bytes == 19520u);
  CHECK_FALSE(a8.needs_optin);
  const auto v2 = lab03::plan_blur_tile(v100, 8, 2);
  CHECK(v2.tile == 12032);
  CHECK_FALSE(v2.needs_optin);
  const auto v1 = lab03::plan_blur_tile(v100, 8, 1);
  CHECK(v1.tile == 24320);
  CHECK(v1.shared_bytes == 97344u);
  CHECK(v1.needs_optin);
}

TEST_CASE("A radius of zero leaves the whole budget to outputs, and a huge radius none",
          "[lab03][host][hidden][choose]") {
  const SharedLimits h100{49152, 232448, 233472, 1024, 2048};
  const auto r0 = lab03::plan_blur_tile(h100, 0, 8);
  CHECK(r0.tile == 6912);
  CHECK(r0.shared_bytes == 27648u);
  const auto huge = lab03::plan_blur_tile(h100, 100'000, 1);
  CHECK(huge.tile == 0);
  CHECK(huge.shared_bytes == 0u);
  CHECK_FALSE(huge.needs_optin);
  // More blocks than the SM has room for leaves nothing once the reserve is paid.
  const auto crowded = lab03::plan_blur_tile(h100, 8, 228);
  CHECK(crowded.tile == 0);
}

TEST_CASE("Repeated shared blurs are bit-identical", "[lab03][gpu][hidden][blur]") {
  // A missing barrier shows up as output that changes from run to run.
  const int n = 1 << 22;
  const int radius = 16;
  const auto input = cml::random_floats(n, cml::test_seed());
  cml::DeviceBuffer<float> d_in(input.size()), d_out(input.size());
  d_in.upload(input);
  lab03::blur_shared(d_in.data(), d_out.data(), n, radius, 4096);
  const auto first = d_out.download();
  for (int run = 1; run < 4; ++run) {
    d_out.poison();
    lab03::blur_shared(d_in.data(), d_out.data(), n, radius, 4096);
    const auto again = d_out.download();
    INFO("run " << run
                << " differs from run 0: is the __syncthreads() between staging the "
                   "tile and reading it missing?");
    REQUIRE(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("A radius wider than the array clamps at both ends", "[lab03][gpu][hidden][blur]") {
  const auto seed = cml::test_seed();
  for (int n : {1, 2, 3, 5}) {
    for (int radius : {10, lab03::kMaxBlurRadius}) {
      CML_REQUIRE_MATCH(lab03_test::check_blur_random(lab03_test::shared_blur_with_tile(2), n,
                                                      radius, seed, lab03_test::kBlurHint));
    }
  }
}

TEST_CASE("Each of the three arrays may be the only one", "[lab03][gpu][hidden][carve]") {
  const auto seed = cml::test_seed();
  CML_REQUIRE_MATCH(lab03_test::check_carve(0, 0, 1000, seed));
  CML_REQUIRE_MATCH(lab03_test::check_carve(2000, 0, 0, seed));
  CML_REQUIRE_MATCH(lab03_test::check_carve(0, 3000, 0, seed));
  CML_REQUIRE_MATCH(lab03_test::check_carve(2, 1, 1, seed));
  CML_REQUIRE_MATCH(lab03_test::check_carve(7, 3, 5, seed));
}

TEST_CASE("The dynamic reverse at exactly 48 KB and one int either side",
          "[lab03][gpu][hidden][optin]") {
  const auto seed = cml::test_seed();
  for (int n : {12287, 12288, 12289, 20000}) {
    CML_REQUIRE_MATCH(lab03_test::check_reverse(lab03::reverse_dynamic, n, seed));
  }
}
