// Lab 05 public tests: the edge-count model on the CPU (with the notes' 3×3 product in 2×2
// tiles), the report that points at edge tiles, and the boundary-checked kernels on the GPU at
// sizes that are not multiples of the tile, non-square and one row or column thin.
#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "boundary_checks.cuh"
#include "cml/matmul_ref.hpp"
#include "cml/random.hpp"
#include "cml/testing.hpp"
#include "product_check.hpp"

using lab05_test::check_random;
using lab05_test::general;
using lab05_test::kGeneralHint;
using lab05_test::kSquareHint;
using lab05_test::Padding;
using lab05_test::Shape;
using lab05_test::square;
using lab05_test::square_only;

namespace {

std::string describe(const lab05::EdgeCounts& c) {
  std::ostringstream out;
  out << "blocks " << c.blocks << ", edge_blocks " << c.edge_blocks << ", phases " << c.phases
      << ", idle_threads " << c.idle_threads << ", masked_a " << c.masked_a << ", masked_b "
      << c.masked_b << ", past_end_a " << c.past_end_a << ", past_end_b " << c.past_end_b;
  return out.str();
}

// Compares all fields at once, so a failure shows every count side by side.
void check_counts(int rows, int inner, int cols, int tile, const lab05::EdgeCounts& want) {
  const lab05::EdgeCounts got = lab05::count_edges(rows, inner, cols, tile);
  INFO("count_edges(" << rows << ", " << inner << ", " << cols << ", " << tile << ")");
  CHECK(describe(got) == describe(want));
}

lab05::EdgeCounts counts(std::uint64_t blocks, std::uint64_t edge_blocks, std::uint64_t phases,
                         std::uint64_t idle, std::uint64_t masked_a, std::uint64_t masked_b,
                         std::uint64_t past_end_a, std::uint64_t past_end_b) {
  return {blocks, edge_blocks, phases, idle, masked_a, masked_b, past_end_a, past_end_b};
}

}  // namespace

TEST_CASE("The notes' 3x3 product in 2x2 tiles", "[lab05][host][model]") {
  // 2×2 blocks of 2×2 threads, 2 phases. Per block column the 4×4 padded strip of A holds
  // 16 - 9 = 7 loads to mask; 5 of them (row 2 at k = 3, and all of the missing row 3) lie
  // past A's 9th element, while M[0][3] and M[1][3] silently read M[1][0] and M[2][0].
  check_counts(3, 3, 3, 2, counts(4, 3, 2, 7, 14, 14, 10, 10));
}

TEST_CASE("Sizes that are multiples of the tile have nothing to mask", "[lab05][host][model]") {
  check_counts(64, 64, 64, 32, counts(4, 0, 2, 0, 0, 0, 0, 0));
  check_counts(64, 96, 32, 32, counts(2, 0, 3, 0, 0, 0, 0, 0));
}

TEST_CASE("One past a multiple of the tile makes most blocks edge blocks", "[lab05][host][model]") {
  // n = 33 with 32×32 tiles: 4 blocks of which 3 hang over C, and 3007 of the 4096 threads
  // have no element of C.
  check_counts(33, 33, 33, 32, counts(4, 3, 2, 3007, 6014, 6014, 4030, 4030));
  check_counts(1000, 1000, 1000, 32, counts(1024, 63, 32, 48576, 1554432, 1554432, 787200, 787200));
}

TEST_CASE("An inner size off the tile masks loads in blocks that are not edge blocks",
          "[lab05][host][model]") {
  // C is 64×64, all four blocks are full, yet each one's last phase reaches k = 33..63.
  check_counts(64, 33, 64, 32, counts(4, 0, 2, 0, 3968, 3968, 62, 3968));
}

TEST_CASE("Thin shapes: a dot product and a 17x31x33 product", "[lab05][host][model]") {
  // 1×1000 times 1000×1: one block with one useful thread, 32 phases. A has a single row, so
  // every masked A load is past its end; B's masked loads at col >= 1 mostly read a later row.
  check_counts(1, 1000, 1, 32, counts(1, 1, 32, 1023, 31768, 31768, 31768, 1264));
  check_counts(17, 31, 33, 32, counts(2, 2, 1, 1487, 994, 1025, 962, 95));
}

TEST_CASE("Sizes below 1 are refused", "[lab05][host][given]") {
  CHECK_THROWS_AS(lab05::count_edges(0, 3, 3, 2), std::invalid_argument);
  CHECK_THROWS_AS(lab05::count_edges(3, 3, 3, 0), std::invalid_argument);
  CHECK_THROWS_AS(lab05::matmul_square(nullptr, nullptr, nullptr, 0), std::invalid_argument);
  CHECK_THROWS_AS(lab05::matmul_general(nullptr, nullptr, nullptr, 4, -1, 4),
                  std::invalid_argument);
}

TEST_CASE("The failure report points at the edge tiles", "[lab05][host][given]") {
  // The report is built on the CPU from a result with errors placed by hand.
  const Shape s{33, 64, 40};
  const auto [a, b] = lab05_test::make_inputs(s, cml::test_seed());
  const auto ref = cml::matmul_reference(a, b, s.rows, s.inner, s.cols);
  const auto tol = cml::float_sum_tolerance(s.inner);
  std::vector<float> got(ref.value.begin(), ref.value.end());

  SECTION("errors only in the last block row and column") {
    got[32 * 40 + 5] += 1.0f;   // row 32: the last block row
    got[10 * 40 + 35] += 1.0f;  // column 35: the last block column
    const std::string report = lab05_test::edge_report(s, 32, got, ref, {}, tol);
    INFO(report);
    CHECK(report.find("The errors are in the edge tiles only") != std::string::npos);
    CHECK(report.find("2 of ") != std::string::npos);
  }
  SECTION("an interior error when J is a multiple of the tile") {
    got[3 * 40 + 28] = std::numeric_limits<float>::quiet_NaN();  // past the landing columns
    const std::string report = lab05_test::edge_report(s, 32, got, ref, {}, tol);
    INFO(report);
    CHECK(report.find("not only an edge problem") != std::string::npos);
  }
  SECTION("an interior error when J is not a multiple of the tile") {
    const Shape t{33, 33, 33};
    const auto [a2, b2] = lab05_test::make_inputs(t, cml::test_seed());
    const auto ref2 = cml::matmul_reference(a2, b2, t.rows, t.inner, t.cols);
    std::vector<float> got2(ref2.value.begin(), ref2.value.end());
    got2[20] += 1.0f;  // row 0: no stray store from a row above can land there
    const std::string report =
        lab05_test::edge_report(t, 32, got2, ref2, {}, cml::float_sum_tolerance(t.inner));
    INFO(report);
    CHECK(report.find("partial last phase") != std::string::npos);
    CHECK(report.find("edge tiles of A's last tile column") != std::string::npos);
  }
}

TEST_CASE("The naive baseline matches the reference for any shape", "[lab05][gpu][given]") {
  const auto seed = cml::test_seed();
  for (const Shape& s :
       {Shape{1, 1, 1}, Shape{3, 3, 3}, Shape{17, 31, 33}, Shape{1, 100, 33}, Shape{129, 1, 7}}) {
    CML_REQUIRE_MATCH(check_random(general(lab05::matmul_naive), s, seed, "given code"));
  }
}

TEST_CASE("The unchecked tiled kernel is right at multiples of the tile", "[lab05][gpu][given]") {
  const auto seed = cml::test_seed();
  for (int n : {32, 64, 128}) {
    CML_REQUIRE_MATCH(
        check_random(square_only(lab05::matmul_tiled_unchecked), square(n), seed, "given code"));
  }
}

TEST_CASE("The unchecked tiled kernel fails at n = 33 and the report says why",
          "[lab05][gpu][given]") {
  // Lab 04's kernel at a size it was not written for. The padded buffers keep its stray
  // accesses inside memory the test owns; the report must send the reader to the edge tiles.
  const auto result = check_random(square_only(lab05::matmul_tiled_unchecked), square(33),
                                   cml::test_seed(), kSquareHint);
  INFO(result.message);
  REQUIRE_FALSE(result.ok);
  CHECK(result.message.find("out-of-bounds write into C") != std::string::npos);
  CHECK(result.message.find("edge tiles") != std::string::npos);
  CHECK(result.message.find("partial last phase") != std::string::npos);
}

TEST_CASE("The tiled kernel matches the reference for square sizes off the tile",
          "[lab05][gpu][square]") {
  const auto seed = cml::test_seed();
  for (int n : lab05_test::square_sizes()) {
    CML_REQUIRE_MATCH(
        check_random(square_only(lab05::matmul_square), square(n), seed, kSquareHint));
  }
}

TEST_CASE("The tiled kernel is right at n = 1000", "[lab05][gpu][square]") {
  CML_REQUIRE_MATCH(check_random(square_only(lab05::matmul_square), square(1000), cml::test_seed(),
                                 kSquareHint, 40));
}

TEST_CASE("The tiled kernel is right on a matrix that fills the GPU", "[lab05][gpu][square]") {
  CML_REQUIRE_MATCH(check_random(square_only(lab05::matmul_square), square(4097), cml::test_seed(),
                                 kSquareHint, 24));
}

TEST_CASE("The general kernel matches the reference for non-square shapes",
          "[lab05][gpu][general]") {
  const auto seed = cml::test_seed();
  for (const Shape& s : {Shape{2, 3, 4}, Shape{17, 31, 33}, Shape{33, 17, 31}, Shape{31, 33, 17},
                         Shape{64, 96, 32}, Shape{100, 1, 100}, Shape{129, 127, 1},
                         Shape{1, 127, 129}, Shape{3, 1000, 5}, Shape{127, 129, 128}}) {
    CML_REQUIRE_MATCH(check_random(general(lab05::matmul_general), s, seed, kGeneralHint));
  }
}

TEST_CASE("The general kernel handles one-row and one-column shapes", "[lab05][gpu][general]") {
  // 1×N and N×1 results, a dot product and an outer product: all but a sliver of each block
  // has no element of C, yet those threads' loads are needed.
  const auto seed = cml::test_seed();
  for (const Shape& s :
       {Shape{1, 1, 1}, Shape{1, 1000, 1}, Shape{1, 33, 1000}, Shape{1000, 33, 1},
        Shape{1, 1, 1000}, Shape{1000, 1, 1}, Shape{1000, 1, 1000}, Shape{1000, 1000, 1}}) {
    CML_REQUIRE_MATCH(check_random(general(lab05::matmul_general), s, seed, kGeneralHint));
  }
}

TEST_CASE("The general kernel is right on a large non-square product", "[lab05][gpu][general]") {
  CML_REQUIRE_MATCH(check_random(general(lab05::matmul_general), Shape{4095, 1000, 4097},
                                 cml::test_seed(), kGeneralHint, 24));
}

TEST_CASE("Small products for the memory, race and barrier checkers", "[lab05][gpu][sanitizer]") {
  // No padding around the arrays: under compute-sanitizer any access past them is reported.
  const auto seed = cml::test_seed();
  for (int n : {3, 33}) {
    CML_REQUIRE_MATCH(check_random(square_only(lab05::matmul_square), square(n), seed, kSquareHint,
                                   0, Padding::none));
  }
  for (const Shape& s : {Shape{17, 31, 33}, Shape{1, 40, 1}, Shape{40, 1, 40}}) {
    CML_REQUIRE_MATCH(
        check_random(general(lab05::matmul_general), s, seed, kGeneralHint, 0, Padding::none));
  }
}
