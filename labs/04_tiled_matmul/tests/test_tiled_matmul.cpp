// Lab 04 public tests: the load-count model and the tile chooser on the CPU, the kernels on
// the GPU against a double-precision reference.
#include <cstdint>
#include <string>

#include "cml/device_info.hpp"
#include "cml/testing.hpp"
#include "matmul_check.hpp"
#include "tiled_matmul.cuh"

using lab04_test::check_random;
using lab04_test::kTiledHint;

TEST_CASE("The naive kernel loads two floats per multiply-add", "[lab04][host][model]") {
  CHECK(lab04::naive_global_loads(1) == 2u);
  CHECK(lab04::naive_global_loads(4) == 128u);
  CHECK(lab04::naive_global_loads(1000) == 2'000'000'000u);
  // 2 * 4096^3 does not fit in 32 bits: the count must be computed in 64.
  CHECK(lab04::naive_global_loads(4096) == 137'438'953'472u);
}

TEST_CASE("Tiling divides the global loads by the tile width", "[lab04][host][model]") {
  CHECK(lab04::tiled_global_loads(4, 2) == 64u);
  CHECK(lab04::tiled_global_loads(64, 16) == 32'768u);
  for (int tile : {1, 2, 4, 8, 16, 32}) {
    INFO("tile = " << tile << ", n = 1024");
    const std::uint64_t naive = lab04::naive_global_loads(1024);
    const std::uint64_t tiled = lab04::tiled_global_loads(1024, tile);
    REQUIRE(tiled > 0u);
    CHECK(naive / tiled == static_cast<std::uint64_t>(tile));
    CHECK(naive % tiled == 0u);
  }
}

TEST_CASE("The run-time tile is the largest that fits the device's limits",
          "[lab04][host][choose]") {
  CHECK(lab04::choose_tile(1024, 48 * 1024) == 32);
  CHECK(lab04::choose_tile(1024, 8192) == 32);  // two 32×32 float tiles are exactly 8 KB
  CHECK(lab04::choose_tile(1024, 8191) == 16);
  CHECK(lab04::choose_tile(512, 48 * 1024) == 16);
  CHECK(lab04::choose_tile(64, 48 * 1024) == 8);
  CHECK(lab04::choose_tile(1024, 100) == 2);
  CHECK(lab04::choose_tile(0, 48 * 1024) == 0);
}

TEST_CASE("The naive baseline matches the CPU reference", "[lab04][gpu][given]") {
  const auto seed = cml::test_seed();
  for (int n : {1, 3, 32, 33, 128}) {
    CML_REQUIRE_MATCH(check_random(lab04::matmul_naive, n, seed, "the baseline is given code"));
  }
}

TEST_CASE("The tiled kernel matches the reference at multiples of the tile",
          "[lab04][gpu][tiled]") {
  const auto seed = cml::test_seed();
  for (int n : {32, 64, 96, 128, 256, 512}) {
    CML_REQUIRE_MATCH(check_random(lab04::matmul_tiled, n, seed, kTiledHint));
  }
}

TEST_CASE("The tiled kernel is right on a matrix that fills the GPU", "[lab04][gpu][tiled]") {
  CML_REQUIRE_MATCH(check_random(lab04::matmul_tiled, 4096, cml::test_seed(), kTiledHint, 24));
}

TEST_CASE("The run-time tile kernel matches the reference for every tile width",
          "[lab04][gpu][dynamic]") {
  const auto seed = cml::test_seed();
  for (int tile : {4, 8, 16, 32}) {
    for (int n : {tile, 3 * tile, 256}) {
      INFO("tile = " << tile);
      const auto run = [tile](const float* a, const float* b, float* c, int size) {
        lab04::matmul_tiled_dynamic(a, b, c, size, tile);
      };
      CML_REQUIRE_MATCH(check_random(
          run, n, seed,
          "the shared buffer holds both tiles: A's at offset 0, B's at tile*tile; pass "
          "2*tile*tile*sizeof(float) as the launch's third parameter."));
    }
  }
}

TEST_CASE("The run-time tile chosen for this GPU works", "[lab04][gpu][dynamic]") {
  const auto device = cml::query_device();
  REQUIRE(device.has_value());
  const int tile = lab04::choose_tile(device->max_threads_per_block, device->shared_per_block);
  INFO("choose_tile(" << device->max_threads_per_block << ", " << device->shared_per_block
                      << ") returned " << tile);
  REQUIRE(tile >= 1);
  REQUIRE(tile <= lab04::kMaxTile);
  const auto run = [tile](const float* a, const float* b, float* c, int n) {
    lab04::matmul_tiled_dynamic(a, b, c, n, tile);
  };
  CML_REQUIRE_MATCH(check_random(run, 32 * tile, cml::test_seed(), kTiledHint));
}

TEST_CASE("Small products for the memory and race checkers", "[lab04][gpu][sanitizer]") {
  const auto seed = cml::test_seed();
  CML_REQUIRE_MATCH(check_random(lab04::matmul_tiled, 64, seed, kTiledHint));
  const auto run = [](const float* a, const float* b, float* c, int n) {
    lab04::matmul_tiled_dynamic(a, b, c, n, 16);
  };
  CML_REQUIRE_MATCH(check_random(run, 48, seed, kTiledHint));
}

TEST_CASE("Sizes that are not a multiple of the tile are refused", "[lab04][host][given]") {
  CHECK_THROWS_AS(lab04::matmul_tiled(nullptr, nullptr, nullptr, 33), std::invalid_argument);
  CHECK_THROWS_AS(lab04::matmul_tiled_dynamic(nullptr, nullptr, nullptr, 30, 8),
                  std::invalid_argument);
  CHECK_THROWS_AS(lab04::matmul_tiled_dynamic(nullptr, nullptr, nullptr, 64, 64),
                  std::invalid_argument);
}
