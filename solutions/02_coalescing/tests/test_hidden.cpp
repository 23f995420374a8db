// Lab 02 hidden tests: wider accesses, overlaps and large addresses in the memory model,
// caching across several warps, the student's own model applied to both mappings, and
// matrix shapes the public tests do not try.
#include <cstdint>
#include <vector>

#include "cml/testing.hpp"
#include "coalescing.cuh"
#include "coalescing_check.hpp"

using lab02::kSectorBytes;
using lab02::kSegmentBytes;
using lab02::Traffic;
using lab02_test::describe;
using lab02_test::make_request;

TEST_CASE("Wide, overlapping and far-away accesses are counted exactly",
          "[lab02][host][hidden][model]") {
  // float4 per lane: 512 contiguous bytes.
  const auto vec4 = make_request([](int lane) { return 16u * lane; }, 16);
  const Traffic v_seg = lab02::warp_traffic(vec4, kSegmentBytes);
  const Traffic v_sec = lab02::warp_traffic(vec4, kSectorBytes);
  INFO("float4 per lane: " << describe(v_seg) << " / " << describe(v_sec));
  CHECK(v_seg.transactions == 4u);
  CHECK(v_sec.transactions == 16u);
  CHECK(v_sec.bytes_used == 512u);

  // 8-byte reads 4 bytes apart overlap: bytes 0-131 are used once each.
  const auto overlap = make_request([](int lane) { return 4u * lane; }, 8);
  const Traffic o = lab02::warp_traffic(overlap, kSegmentBytes);
  INFO("overlapping 8-byte reads: " << describe(o));
  CHECK(o.transactions == 2u);
  CHECK(o.bytes_used == 132u);

  // Addresses beyond 4 GiB need 64-bit arithmetic.
  const std::uint64_t far = std::uint64_t{1} << 40;
  const auto high = lab02_test::strided_floats(1, far + 96);
  const Traffic h = lab02::warp_traffic(high, kSegmentBytes);
  INFO("bytes 2^40+96 .. 2^40+223: " << describe(h));
  CHECK(h.transactions == 2u);
  CHECK(h.bytes_used == 128u);

  // A 16-byte read at byte 120 spans two segments and two sectors.
  const auto straddle = make_request([](int) { return 120u; }, 16, 1u << 31);
  CHECK(lab02::warp_traffic(straddle, kSegmentBytes).transactions == 2u);
  CHECK(lab02::warp_traffic(straddle, kSectorBytes).transactions == 2u);
  CHECK(lab02::warp_traffic(straddle, kSectorBytes).bytes_used == 16u);
}

TEST_CASE("Any power-of-two unit works, 64-byte units included", "[lab02][host][hidden][model]") {
  const auto r = lab02_test::strided_floats(1, 96);  // bytes 96-223: units 1, 2 and 3 of 64
  const Traffic t = lab02::warp_traffic(r, 64);
  INFO(describe(t));
  CHECK(t.transactions == 3u);
  CHECK(t.bytes_moved == 192u);
}

TEST_CASE("The cache keeps every unit over several warps", "[lab02][host][hidden][cache]") {
  // Four warps read 128 bytes each, back to back from byte 4: each straddles two segments
  // and shares one with its neighbour, so the cache saves three of eight segments.
  std::vector<lab02::WarpRequest> warps;
  for (int w = 0; w < 4; ++w) warps.push_back(lab02_test::strided_floats(1, 128u * w + 4));
  const Traffic seg = lab02::cached_traffic(warps, kSegmentBytes);
  INFO(describe(seg));
  CHECK(seg.transactions == 5u);  // bytes 4-515: segments 0-4
  CHECK(seg.bytes_used == 512u);
  const Traffic none = lab02::cached_traffic({}, kSectorBytes);
  CHECK(none.transactions == 0u);
  CHECK(none.utilisation() == 0.0);
}

TEST_CASE("Your memory model agrees: 32 segments per warp for the given mapping, 1 for yours",
          "[lab02][host][hidden][mapping]") {
  const auto given = [](int r, int c, int t) { return lab02::uncoalesced_element(r, c, t); };
  const auto fixed = [](int r, int c, int t) { return lab02::coalesced_element(r, c, t); };
  lab02_test::for_each_warp(given, 64, 64, [](const lab02_test::WarpView& w) {
    const Traffic t = lab02::warp_traffic(w.request, kSegmentBytes);
    INFO("given mapping, warp " << w.warp << ": " << describe(t));
    REQUIRE(t.transactions == 32u);
    REQUIRE(t.utilisation() == 0.03125);
  });
  lab02_test::for_each_warp(fixed, 64, 64, [](const lab02_test::WarpView& w) {
    const Traffic seg = lab02::warp_traffic(w.request, kSegmentBytes);
    const Traffic sec = lab02::warp_traffic(w.request, kSectorBytes);
    INFO("fixed mapping, warp " << w.warp << ": " << describe(seg) << " / " << describe(sec));
    REQUIRE(seg.transactions == 1u);
    REQUIRE(sec.transactions == 4u);
  });
}

TEST_CASE("The fixed mapping covers long thin matrices", "[lab02][host][hidden][mapping]") {
  const auto fixed = [](int r, int c, int t) { return lab02::coalesced_element(r, c, t); };
  for (const auto& [rows, cols] :
       std::vector<std::pair<int, int>>{{1, 1000}, {1000, 3}, {65, 63}}) {
    const std::string problem = lab02_test::coverage_problem(fixed, rows, cols);
    INFO(lab02_test::size_text(rows, cols) << ": " << problem);
    CHECK(problem.empty());
  }
}

TEST_CASE("The coalesced kernel handles one-row and one-column matrices",
          "[lab02][gpu][hidden][coalesced]") {
  const auto seed = cml::test_seed();
  for (const auto& [rows, cols] :
       std::vector<std::pair<int, int>>{{1, 5000}, {5000, 1}, {2048, 2080}}) {
    CML_REQUIRE_MATCH(lab02_test::check_scale(lab02::scale_coalesced, rows, cols, seed,
                                              lab02_test::kMappingHint));
  }
}
