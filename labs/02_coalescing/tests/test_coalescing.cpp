// Lab 02 public tests: the memory model on the notes' scenarios and on strided reads, the
// fixed mapping evaluated warp by warp on the CPU, and the kernels on the GPU.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "cml/random.hpp"
#include "cml/testing.hpp"
#include "coalescing.cuh"
#include "coalescing_check.hpp"

using lab02::kSectorBytes;
using lab02::kSegmentBytes;
using lab02::Traffic;
using lab02::warp_traffic;
using lab02_test::describe;
using lab02_test::make_request;

namespace {

// Checks transactions, bytes moved and bytes used in one go; the message shows all three.
void check_traffic(const Traffic& got, std::uint64_t transactions, std::uint64_t unit,
                   std::uint64_t used) {
  INFO("with " << unit << "-byte units: got " << describe(got) << "; expected " << transactions
               << " transaction(s), " << transactions * unit << " B moved, " << used << " B used");
  CHECK((got.transactions == transactions && got.bytes_moved == transactions * unit &&
         got.bytes_used == used));
}

}  // namespace

TEST_CASE("Scenario 1: a warp reading bytes 0-127 in any order needs one segment, all of it used",
          "[lab02][host][model]") {
  // The lanes take the 32 words in a shuffled order: only the set of addresses matters.
  std::vector<int> word(32);
  std::iota(word.begin(), word.end(), 0);
  const auto swaps = cml::random_ints(32, cml::derive_seed(cml::test_seed(), 1), 0, 1 << 20);
  for (int i = 31; i > 0; --i) std::swap(word[i], word[swaps[i] % (i + 1)]);
  const auto r = make_request([&](int lane) { return 4u * word[lane]; });
  const Traffic seg = warp_traffic(r, kSegmentBytes);
  check_traffic(seg, 1, 128, 128);
  CHECK(seg.utilisation() == 1.0);
  check_traffic(warp_traffic(r, kSectorBytes), 4, 32, 128);
}

TEST_CASE("Scenario 2: every lane reading bytes 0-3 moves a segment for 4 useful bytes",
          "[lab02][host][model]") {
  const auto r = make_request([](int) { return 0u; });
  const Traffic seg = warp_traffic(r, kSegmentBytes);
  check_traffic(seg, 1, 128, 4);
  CHECK(seg.utilisation() == 0.03125);  // 4/128 = 3.125 %
  const Traffic sec = warp_traffic(r, kSectorBytes);
  check_traffic(sec, 1, 32, 4);
  CHECK(sec.utilisation() == 0.125);  // 4/32
}

TEST_CASE("Scenario 3: bytes 96-223 straddle two segments, half of what moves is used",
          "[lab02][host][model]") {
  const auto r = lab02_test::strided_floats(1, 96);
  const Traffic seg = warp_traffic(r, kSegmentBytes);
  check_traffic(seg, 2, 128, 128);
  CHECK(seg.utilisation() == 0.5);
  // Sectors 3, 4, 5 and 6: nothing wasted at 32-byte granularity.
  const Traffic sec = warp_traffic(r, kSectorBytes);
  check_traffic(sec, 4, 32, 128);
  CHECK(sec.utilisation() == 1.0);
}

TEST_CASE("Scenario 5: four 32-byte pieces spread over 0-511 use 25 % of four segments, not 4 %",
          "[lab02][host][model]") {
  // Lanes 0-7 read bytes 0-31, 8-15 bytes 128-159, 16-23 bytes 256-287, 24-31 bytes 480-511.
  const std::uint64_t piece[4] = {0, 128, 256, 480};
  const auto r = make_request([&](int lane) { return piece[lane / 8] + 4u * (lane % 8); });
  const Traffic seg = warp_traffic(r, kSegmentBytes);
  check_traffic(seg, 4, 128, 128);
  CHECK(seg.utilisation() == 0.25);  // 128 of 512 bytes
  // Each piece is exactly one aligned sector: 4 sectors, every byte used.
  const Traffic sec = warp_traffic(r, kSectorBytes);
  check_traffic(sec, 4, 32, 128);
  CHECK(sec.utilisation() == 1.0);
}

TEST_CASE("One far-away lane costs a whole extra segment but only one extra sector",
          "[lab02][host][model]") {
  const auto r = make_request([](int lane) { return lane < 31 ? 4u * lane : 4096u; });
  check_traffic(warp_traffic(r, kSegmentBytes), 2, 128, 128);  // 124 + 4 of 256 bytes: 50 %
  check_traffic(warp_traffic(r, kSectorBytes), 5, 32, 128);    // 128 of 160 bytes: 80 %
}

TEST_CASE("Strided float reads: sectors per request are 4, 8, 16 and then 32 from stride 8 on",
          "[lab02][host][model]") {
  const int strides[] = {1, 2, 4, 8, 16, 32};
  const std::uint64_t sectors[] = {4, 8, 16, 32, 32, 32};
  const std::uint64_t segments[] = {1, 2, 4, 8, 16, 32};
  for (int i = 0; i < 6; ++i) {
    INFO("stride " << strides[i] << " floats");
    const auto r = lab02_test::strided_floats(strides[i]);
    check_traffic(warp_traffic(r, kSectorBytes), sectors[i], 32, 128);
    check_traffic(warp_traffic(r, kSegmentBytes), segments[i], 128, 128);
  }
}

TEST_CASE("An access that crosses a unit boundary needs both units", "[lab02][host][model]") {
  // 32 floats starting at byte 4: bytes 4-131.
  const auto shifted = lab02_test::strided_floats(1, 4);
  check_traffic(warp_traffic(shifted, kSegmentBytes), 2, 128, 128);
  check_traffic(warp_traffic(shifted, kSectorBytes), 5, 32, 128);
  // One 8-byte access at byte 28 spans sectors 0 and 1.
  const auto one = make_request([](int) { return 28u; }, 8, 1u);
  check_traffic(warp_traffic(one, kSectorBytes), 2, 32, 8);
  // 32 doubles: 256 bytes, two full segments.
  const auto doubles = make_request([](int lane) { return 8u * lane; }, 8);
  check_traffic(warp_traffic(doubles, kSegmentBytes), 2, 128, 256);
  check_traffic(warp_traffic(doubles, kSectorBytes), 8, 32, 256);
}

TEST_CASE("Idle lanes cost nothing", "[lab02][host][model]") {
  // Only lanes 0-7 take part; the idle lanes' addresses point far away and must be ignored.
  const auto r =
      make_request([](int lane) { return lane < 8 ? 4u * lane : 1'000'000u * lane; }, 4, 0xFFu);
  check_traffic(warp_traffic(r, kSegmentBytes), 1, 128, 32);
  check_traffic(warp_traffic(r, kSectorBytes), 1, 32, 32);
  const auto none = make_request([](int lane) { return 4u * lane; }, 4, 0u);
  check_traffic(warp_traffic(none, kSectorBytes), 0, 32, 0);
}

TEST_CASE("Scenario 4: block 1's warp finds block 0's segments in the cache",
          "[lab02][host][cache]") {
  // Block 0's warp reads bytes 96-223; block 1's warp reads bytes 0-95 (24 active lanes).
  const auto block0 = lab02_test::strided_floats(1, 96);
  const auto block1 = make_request([](int lane) { return 4u * lane; }, 4, 0x00FFFFFFu);
  check_traffic(warp_traffic(block0, kSegmentBytes), 2, 128, 128);
  check_traffic(warp_traffic(block1, kSegmentBytes), 1, 128, 96);
  // Without a cache: 3 segments, 224 of 384 bytes (58 %). With one, block 1's segment is
  // already there: 2 segments, 224 of 256 bytes = 87.5 %. Bytes 224-255 are moved and never
  // used, so the notes' "100 %" is too high.
  const Traffic cached = lab02::cached_traffic({block0, block1}, kSegmentBytes);
  check_traffic(cached, 2, 128, 224);
  CHECK(cached.utilisation() == 0.875);
  // In sectors the two warps touch 7 different sectors and use all of them.
  const Traffic sectors = lab02::cached_traffic({block0, block1}, kSectorBytes);
  check_traffic(sectors, 7, 32, 224);
}

TEST_CASE("A request repeated through the cache costs nothing the second time",
          "[lab02][host][cache]") {
  const auto r = lab02_test::strided_floats(8, 64);
  const Traffic once = warp_traffic(r, kSectorBytes);
  const Traffic twice = lab02::cached_traffic({r, r}, kSectorBytes);
  INFO("one request: " << describe(once) << "; the same twice: " << describe(twice));
  CHECK(twice.transactions == 32u);
  CHECK(twice.bytes_used == 128u);
  CHECK(twice.transactions == once.transactions);
}

TEST_CASE("The given mapping covers the matrix but each warp touches 32 sectors",
          "[lab02][host][given]") {
  const auto given = [](int r, int c, int t) { return lab02::uncoalesced_element(r, c, t); };
  REQUIRE(lab02_test::coverage_problem(given, 64, 96).empty());
  lab02_test::for_each_warp(given, 64, 96, [](const lab02_test::WarpView& w) {
    REQUIRE(lab02_test::sectors_touched(w.request) == 32);
  });
}

TEST_CASE("The fixed mapping handles every element of the matrix exactly once",
          "[lab02][host][mapping]") {
  const auto fixed = [](int r, int c, int t) { return lab02::coalesced_element(r, c, t); };
  const int sizes[][2] = {{1, 1},   {32, 32},   {31, 33}, {33, 31},
                          {64, 96}, {127, 129}, {1, 100}, {100, 1}};
  for (const auto& s : sizes) {
    const std::string problem = lab02_test::coverage_problem(fixed, s[0], s[1]);
    INFO("matrix " << lab02_test::size_text(s[0], s[1]) << ": " << problem
                   << "\nHint: " << lab02_test::kMappingHint);
    CHECK(problem.empty());
  }
}

TEST_CASE("Every warp of the fixed mapping touches the fewest sectors its floats allow",
          "[lab02][host][mapping]") {
  const auto fixed = [](int r, int c, int t) { return lab02::coalesced_element(r, c, t); };
  // 96 columns: full warps only. 40 columns: the right-hand tiles have 8 columns, so their
  // warps have 8 active lanes, which fit in one sector.
  const int sizes[][2] = {{64, 96}, {48, 40}};
  for (const auto& s : sizes) {
    int checked = 0;
    lab02_test::for_each_warp(fixed, s[0], s[1], [&](const lab02_test::WarpView& w) {
      const int lanes = __builtin_popcount(w.active);
      if (lanes == 0) return;
      ++checked;
      const int fewest = (lanes * 4 + kSectorBytes - 1) / kSectorBytes;
      const int got = lab02_test::sectors_touched(w.request);
      if (got != fewest) {
        FAIL("matrix " << lab02_test::size_text(s[0], s[1]) << ", block (row " << w.block_row
                       << ", col " << w.block_col << "), warp " << w.warp << ": " << lanes
                       << " active lanes touch " << got << " sector(s); " << lanes
                       << " different floats side by side touch exactly " << fewest
                       << ".\nHint: " << lab02_test::kMappingHint);
      }
    });
    INFO("matrix " << lab02_test::size_text(s[0], s[1]) << ": no warp had an element inside it");
    CHECK(checked > 0);
  }
}

TEST_CASE("The given uncoalesced kernel and the strided read are right", "[lab02][gpu][given]") {
  const auto seed = cml::test_seed();
  for (int n : {1, 33, 130}) {
    CML_REQUIRE_MATCH(lab02_test::check_scale(lab02::scale_uncoalesced, n, n + 3, seed,
                                              "the baseline is given code"));
  }
  for (int stride : {1, 2, 3, 8, 32}) {
    const std::size_t count = 1000;
    const std::size_t span = (count - 1) * stride + 1;
    const auto in = cml::random_floats(span, cml::derive_seed(seed, stride));
    cml::DeviceBuffer<float> d_in(span), d_out(count);
    d_in.upload(in);
    d_out.poison();
    lab02::strided_read(d_in.data(), d_out.data(), count, stride);
    const auto out = d_out.download();
    std::vector<double> expected(count);
    for (std::size_t i = 0; i < count; ++i) expected[i] = in[i * stride];
    cml::CompareContext ctx;
    ctx.name = "out";
    ctx.size = "count=1000, stride=" + std::to_string(stride);
    ctx.seed = seed;
    ctx.hint = "the strided read is given code";
    CML_REQUIRE_MATCH(cml::compare(out, expected, cml::Tolerance{0.0, 0.0}, ctx));
  }
}

TEST_CASE("The coalesced kernel scales every element of odd and square matrices",
          "[lab02][gpu][coalesced]") {
  const auto seed = cml::test_seed();
  const int sizes[][2] = {{1, 1},   {2, 2},     {3, 3},     {31, 31},  {32, 32},
                          {33, 33}, {127, 129}, {128, 128}, {33, 130}, {1000, 17}};
  for (const auto& s : sizes) {
    CML_REQUIRE_MATCH(lab02_test::check_scale(lab02::scale_coalesced, s[0], s[1], seed,
                                              lab02_test::kMappingHint));
  }
}

TEST_CASE("The coalesced kernel is right on a matrix that fills the GPU",
          "[lab02][gpu][coalesced]") {
  CML_REQUIRE_MATCH(lab02_test::check_scale(lab02::scale_coalesced, 4096, 4100, cml::test_seed(),
                                            lab02_test::kMappingHint));
}

TEST_CASE("Small matrices for the memory checker", "[lab02][gpu][sanitizer]") {
  const auto seed = cml::test_seed();
  for (int n : {1, 33, 70}) {
    CML_REQUIRE_MATCH(
        lab02_test::check_scale(lab02::scale_coalesced, n, n + 1, seed, lab02_test::kMappingHint));
  }
}
