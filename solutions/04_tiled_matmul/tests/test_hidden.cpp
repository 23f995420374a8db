// Lab 04 hidden tests: structure the public tests do not pin down (operand order, races,
// tile widths that are not powers of two, 64-bit counts).
#include <cstdint>
#include <cstring>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/testing.hpp"
#include "matmul_check.hpp"
#include "tiled_matmul.cuh"

TEST_CASE("A times a permutation matrix permutes A's columns", "[lab04][gpu][hidden][tiled]") {
  // A·P and P·A differ, so a kernel that swaps its operands fails here.
  const int n = 160;
  const auto seed = cml::test_seed();
  auto [a, unused] = lab04_test::make_inputs(n, seed);
  std::vector<float> p(static_cast<std::size_t>(n) * n, 0.0f);
  for (int k = 0; k < n; ++k) p[static_cast<std::size_t>(k) * n + (k * 7 + 3) % n] = 1.0f;
  CML_REQUIRE_MATCH(lab04_test::check_matmul(lab04::matmul_tiled, a, p, n, seed,
                                             "A is the left operand, B the right one."));
}

TEST_CASE("Repeated products are bit-identical", "[lab04][gpu][hidden][tiled]") {
  // A missing barrier shows up as results that change from run to run.
  const int n = 1024;
  const auto seed = cml::test_seed();
  const auto [a, b] = lab04_test::make_inputs(n, seed);
  const auto product = [n](const float* d_a, const float* d_b, float* d_c) {
    lab04::matmul_tiled(d_a, d_b, d_c, n);
  };
  CML_REQUIRE_MATCH(cml::check_matmul_repeatable(
      product, a, b,
      lab04_test::problem(n, seed,
                          "a race between loading and using the tiles (is a "
                          "__syncthreads() missing?)")));
}

TEST_CASE("The run-time tile kernel handles tile widths that are not powers of two",
          "[lab04][gpu][hidden][dynamic]") {
  const auto seed = cml::test_seed();
  for (int tile : {1, 3, 12, 24}) {
    INFO("tile = " << tile);
    const auto run = [tile](const float* a, const float* b, float* c, int n) {
      lab04::matmul_tiled_dynamic(a, b, c, n, tile);
    };
    CML_REQUIRE_MATCH(lab04_test::check_random(run, 4 * tile, seed, lab04_test::kTiledHint));
  }
}

TEST_CASE("Load counts hold for any tile and for large n", "[lab04][host][hidden][model]") {
  CHECK(lab04::tiled_global_loads(96, 3) == 2u * 96u * 96u * 96u / 3u);
  CHECK(lab04::naive_global_loads(65536) == 562'949'953'421'312u);
  CHECK(lab04::tiled_global_loads(65536, 32) == 17'592'186'044'416u);
}

TEST_CASE("The tile chooser caps at kMaxTile and handles odd limits",
          "[lab04][host][hidden][choose]") {
  CHECK(lab04::choose_tile(1000, 48 * 1024) == 16);
  CHECK(lab04::choose_tile(2048, std::size_t{1} << 20) == lab04::kMaxTile);
  CHECK(lab04::choose_tile(1, 8) == 1);
  CHECK(lab04::choose_tile(1024, 7) == 0);
}
