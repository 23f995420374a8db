// Lab 05 hidden tests: structure the public tests do not pin down (operand order and row
// lengths of a non-square product, threads outside C that must still load and reach every
// barrier, races, 64-bit counts, tiles larger than the matrices).
#include <cstdint>
#include <cstring>
#include <vector>

#include "boundary_checks.cuh"
#include "cml/buffer.hpp"
#include "cml/testing.hpp"
#include "product_check.hpp"

using lab05_test::Shape;

TEST_CASE("A times a column-scattering matrix moves A's columns", "[lab05][gpu][hidden][general]") {
  // B (J×K) has one 1 per row, at column (7k + 3) mod K: C's columns are A's columns, moved.
  // A kernel that swaps the operands or mixes up J and K as a row length fails here.
  const Shape s{70, 45, 61};
  const auto seed = cml::test_seed();
  auto [a, unused] = lab05_test::make_inputs(s, seed);
  std::vector<float> b(s.b_count(), 0.0f);
  for (int k = 0; k < s.inner; ++k)
    b[static_cast<std::size_t>(k) * s.cols + (7 * k + 3) % s.cols] = 1.0f;
  CML_REQUIRE_MATCH(lab05_test::check_product(lab05_test::general(lab05::matmul_general), a, b, s,
                                              seed, "A is the left operand, B the right one."));
}

TEST_CASE("Threads with no element of C still load for their neighbours",
          "[lab05][gpu][hidden][general]") {
  // In each shape most threads of a block have no element of C but load elements the others
  // need. A kernel that returns early, or keeps its loads and barriers inside `if (row < I &&
  // col < K)`, leaves holes in the tiles (and a barrier some threads never reach).
  const auto seed = cml::test_seed();
  for (const Shape& s :
       {Shape{33, 64, 1}, Shape{1, 64, 33}, Shape{5, 200, 3}, Shape{40, 100, 31}, Shape{2, 2, 2}}) {
    for (int run = 0; run < 2; ++run) {
      CML_REQUIRE_MATCH(lab05_test::check_random(
          lab05_test::general(lab05::matmul_general), s, seed,
          "every thread loads its element of both tiles (0 outside A or B) and reaches every "
          "__syncthreads(); only the store is skipped outside C."));
    }
  }
}

TEST_CASE("Repeated products at an edge size are bit-identical", "[lab05][gpu][hidden][square]") {
  // A missing barrier shows up as results that change from run to run.
  const int n = 1000;
  cml::MatmulProblem p = lab05_test::problem(lab05_test::square(n));
  p.seed = cml::test_seed();
  p.hint =
      "a race between loading and using the tiles (is a __syncthreads() missing, or "
      "skipped by some threads?)";
  const auto [a, b] = lab05_test::make_inputs(lab05_test::square(n), p.seed);
  const auto product = [n](const float* d_a, const float* d_b, float* d_c) {
    lab05::matmul_square(d_a, d_b, d_c, n);
  };
  CML_REQUIRE_MATCH(cml::check_matmul_repeatable(product, a, b, p));
}

TEST_CASE("The square kernel handles more sizes around the tile", "[lab05][gpu][hidden][square]") {
  const auto seed = cml::test_seed();
  for (int n : {4, 5, 15, 16, 63, 64, 65, 95, 97, 255, 257}) {
    CML_REQUIRE_MATCH(lab05_test::check_random(lab05_test::square_only(lab05::matmul_square),
                                               lab05_test::square(n), seed,
                                               lab05_test::kSquareHint));
  }
}

TEST_CASE("Edge counts of large sizes need 64 bits", "[lab05][host][hidden][model]") {
  const auto c = lab05::count_edges(65537, 65537, 65537, 32);
  CHECK(c.blocks == 4'198'401u);
  CHECK(c.edge_blocks == 4'097u);
  CHECK(c.phases == 2'049u);
  CHECK(c.idle_threads == 4'064'255u);
  CHECK(c.masked_a == 8'327'658'495u);
  CHECK(c.masked_b == 8'327'658'495u);
  CHECK(c.past_end_a == 4'164'877'311u);
  CHECK(c.past_end_b == 4'164'877'311u);
}

TEST_CASE("Edge counts for a unit tile and for a tile larger than the matrices",
          "[lab05][host][hidden][model]") {
  const auto unit = lab05::count_edges(5, 7, 3, 1);
  CHECK(unit.blocks == 15u);
  CHECK(unit.edge_blocks == 0u);
  CHECK(unit.phases == 7u);
  CHECK(unit.idle_threads == 0u);
  CHECK(unit.masked_a + unit.masked_b + unit.past_end_a + unit.past_end_b == 0u);

  const auto big = lab05::count_edges(3, 5, 7, 64);
  CHECK(big.blocks == 1u);
  CHECK(big.edge_blocks == 1u);
  CHECK(big.phases == 1u);
  CHECK(big.idle_threads == 4'075u);
  CHECK(big.masked_a == 4'081u);
  CHECK(big.masked_b == 4'061u);
  CHECK(big.past_end_a == 4'066u);
  CHECK(big.past_end_b == 3'991u);
}
