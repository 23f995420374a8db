// Lab 04 public tests of the optional bonus: the 2D register-tiled product against the
// double-precision CPU reference, at multiples of the block tile and at the fallback sizes.
#include <stdexcept>

#include "cml/testing.hpp"
#include "matmul_check.hpp"
#include "tiled_matmul.cuh"

namespace {

const char* kRegisterHint =
    "each block computes a kRegisterBlock×kRegisterBlock tile of C and each thread a "
    "kThreadTile×kThreadTile block of it; check which rows of A and columns of B a thread "
    "reads in registers for every k of the slice, that A's slice is stored transposed "
    "(tile_a[k][row]) if you read it as such, and that both __syncthreads() are there.";

}  // namespace

TEST_CASE("The register-tiled kernel matches the reference at multiples of the block tile",
          "[lab04][gpu][register]") {
  const auto seed = cml::test_seed();
  for (int n : {lab04::kRegisterBlock, 2 * lab04::kRegisterBlock, 512}) {
    CML_REQUIRE_MATCH(lab04_test::check_random(lab04::matmul_register_tiled, n, seed,
                                               kRegisterHint));
  }
}

TEST_CASE("The register-tiled kernel is right on a matrix that fills the GPU",
          "[lab04][gpu][register]") {
  CML_REQUIRE_MATCH(lab04_test::check_random(lab04::matmul_register_tiled, 4096,
                                             cml::test_seed(), kRegisterHint, 24));
}

TEST_CASE("The register-tiled product falls back to the tiled kernel off the block tile",
          "[lab04][gpu][register]") {
  // 96 and 160 are multiples of kTile but not of kRegisterBlock: matmul_tiled runs.
  const auto seed = cml::test_seed();
  for (int n : {96, 160}) {
    CML_REQUIRE_MATCH(lab04_test::check_random(lab04::matmul_register_tiled, n, seed,
                                               lab04_test::kTiledHint));
  }
}

TEST_CASE("A small register-tiled product for the memory and race checkers",
          "[lab04][gpu][register][sanitizer]") {
  CML_REQUIRE_MATCH(lab04_test::check_random(lab04::matmul_register_tiled,
                                             lab04::kRegisterBlock, cml::test_seed(),
                                             kRegisterHint));
}

TEST_CASE("The register-tiled product refuses sizes that are not a multiple of kTile",
          "[lab04][host][given]") {
  CHECK_THROWS_AS(lab04::matmul_register_tiled(nullptr, nullptr, nullptr, 100),
                  std::invalid_argument);
  CHECK_THROWS_AS(lab04::matmul_register_tiled(nullptr, nullptr, nullptr, 0),
                  std::invalid_argument);
}
