// Lab 04 hidden tests of the optional bonus: what the public register-tiled tests do not pin
// down (operand order, a race between slices, every block of a non-square grid of tiles),
// each with the bonus's own kernel required as in the public ones (check_register).
#include <cstring>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/launch_count.hpp"
#include "cml/testing.hpp"
#include "matmul_check.hpp"
#include "tiled_matmul.cuh"

TEST_CASE("Register tiling: A times a permutation matrix permutes A's columns",
          "[lab04][gpu][hidden][register]") {
  // A·P and P·A differ, so swapped operands (or a transposed slice of A read untransposed)
  // fail here.
  const int n = 256;
  const auto seed = cml::test_seed();
  auto [a, unused] = lab04_test::make_inputs(n, seed);
  std::vector<float> p(static_cast<std::size_t>(n) * n, 0.0f);
  for (int k = 0; k < n; ++k) p[static_cast<std::size_t>(k) * n + (k * 37 + 11) % n] = 1.0f;
  CML_REQUIRE_MATCH(lab04_test::check_register(a, p, n, seed,
                                               "A is the left operand, B the right one; a "
                                               "thread's TM values of A come from TM rows."));
}

TEST_CASE("Register tiling: repeated products are bit-identical",
          "[lab04][gpu][hidden][register]") {
  // A missing barrier between slices shows up as results that change from run to run.
  const int n = 1024;
  const auto [a, b] = lab04_test::make_inputs(n, cml::test_seed());
  const std::size_t count = static_cast<std::size_t>(n) * n;
  cml::DeviceBuffer<float> d_a(count), d_b(count), d_c(count);
  d_a.upload(a);
  d_b.upload(b);
  const cml::LaunchLog log;
  lab04::matmul_register_tiled(d_a.data(), d_b.data(), d_c.data(), n);
  CML_REQUIRE_MATCH(lab04_test::require_own_kernel(log.kernels(), n));
  const auto first = d_c.download();
  for (int run = 1; run < 4; ++run) {
    d_c.poison();
    lab04::matmul_register_tiled(d_a.data(), d_b.data(), d_c.data(), n);
    const auto again = d_c.download();
    INFO("run " << run
                << " differs from run 0: a race between loading and using the "
                   "shared slices (is a __syncthreads() missing?)");
    REQUIRE(std::memcmp(first.data(), again.data(), count * sizeof(float)) == 0);
  }
}

TEST_CASE("Register tiling: every row is right at an odd number of block tiles",
          "[lab04][gpu][hidden][register]") {
  // 3 × 3 blocks of 128: an index that mixes up the block's row and column, or assumes a
  // power-of-two grid, fails somewhere here; every row is checked.
  CML_REQUIRE_MATCH(lab04_test::check_register_random(3 * lab04::kRegisterBlock, cml::test_seed(),
                                                      "check blockIdx.x (columns of C) and "
                                                      "blockIdx.y (rows) in every index."));
}
