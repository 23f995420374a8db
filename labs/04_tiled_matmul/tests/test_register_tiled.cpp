// Lab 04 public tests of the optional bonus: the 2D register-tiled product against the
// double-precision CPU reference, at multiples of the block tile and at the fallback sizes.
// Every case needs the bonus's own kernel: where the block tile divides n, the call must
// launch a kernel that none of the required products launches (check_register), so neither
// the given fallback nor a call of matmul_tiled earns the bonus.
#include <stdexcept>
#include <string>

#include "cml/testing.hpp"
#include "matmul_check.hpp"
#include "tiled_matmul.cuh"

namespace {

const char* kRegisterHint =
    "each block computes a kRegisterBlock×kRegisterBlock tile of C and each thread a "
    "kThreadTile×kThreadTile block of it; check which rows of A and columns of B a thread "
    "reads in registers for every k of the slice, that A's slice is stored transposed "
    "(tile_a[k][row]) if you read it as such, and that both __syncthreads() are there.";

const std::string kFallbackHint =
    std::string(
        "sizes that are not multiples of kRegisterBlock take the fallback to "
        "matmul_tiled: 192 and 320 are multiples of 64 but not of 128, so a kernel "
        "with a 128×128 block tile must not run there. ") +
    lab04_test::kTiledHint;

}  // namespace

TEST_CASE("The register-tiled kernel matches the reference at multiples of the block tile",
          "[lab04][gpu][register]") {
  const auto seed = cml::test_seed();
  for (int n : {lab04::kRegisterBlock, 2 * lab04::kRegisterBlock, 512}) {
    CML_REQUIRE_MATCH(lab04_test::check_register_random(n, seed, kRegisterHint));
  }
}

TEST_CASE("The register-tiled kernel is right on a matrix that fills the GPU",
          "[lab04][gpu][register]") {
  CML_REQUIRE_MATCH(lab04_test::check_register_random(4096, cml::test_seed(), kRegisterHint, 24));
}

TEST_CASE("The register-tiled product falls back to the tiled kernel off the block tile",
          "[lab04][gpu][register]") {
  // The fallback is given code: its sizes count only for a file whose own kernel runs where
  // the block tile fits.
  const auto seed = cml::test_seed();
  CML_REQUIRE_MATCH(lab04_test::check_register_random(lab04::kRegisterBlock, seed, kRegisterHint));
  // 96 and 160 are multiples of kTile but not of 64; 192 and 320 of 64 but not of
  // kRegisterBlock. matmul_tiled runs at all four.
  for (int n : {96, 160, 192, 320}) {
    CML_REQUIRE_MATCH(lab04_test::check_register_random(n, seed, kFallbackHint));
  }
}

TEST_CASE("A small register-tiled product for the memory and race checkers",
          "[lab04][gpu][register][sanitizer]") {
  CML_REQUIRE_MATCH(
      lab04_test::check_register_random(lab04::kRegisterBlock, cml::test_seed(), kRegisterHint));
}

TEST_CASE("The register-tiled product refuses sizes that are not a multiple of kTile",
          "[lab04][host][given]") {
  CHECK_THROWS_AS(lab04::matmul_register_tiled(nullptr, nullptr, nullptr, 100),
                  std::invalid_argument);
  CHECK_THROWS_AS(lab04::matmul_register_tiled(nullptr, nullptr, nullptr, 0),
                  std::invalid_argument);
}
