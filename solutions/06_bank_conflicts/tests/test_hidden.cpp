// Lab 06 hidden tests: the conflict-degree model on random and partial warps against an
// independent count, every tile pitch, and transposes where each output element says which
// input element it came from.
#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "bank_conflicts.cuh"
#include "cml/buffer.hpp"
#include "cml/testing.hpp"
#include "transpose_check.hpp"

namespace {

// The rule, written differently from any solution: the set of words each bank must serve.
int reference_degree(const std::vector<std::uint32_t>& addresses) {
  std::map<std::uint32_t, std::set<std::uint32_t>> per_bank;
  for (const std::uint32_t a : addresses) per_bank[(a >> 2) & 31u].insert(a >> 2);
  std::size_t worst = 0;
  for (const auto& [bank, words] : per_bank) worst = std::max(worst, words.size());
  return static_cast<int>(worst);
}

}  // namespace

TEST_CASE("The conflict degree matches the bank rule on random warps",
          "[lab06][host][hidden][model]") {
  std::mt19937_64 rng(cml::test_seed());
  for (int trial = 0; trial < 2000; ++trial) {
    const int lanes = 1 + static_cast<int>(rng() % 32);
    // Small address ranges make shared words (broadcasts) and shared banks both common.
    const std::uint32_t span = trial % 2 == 0 ? 256u : 48u * 1024u;
    std::vector<std::uint32_t> addresses;
    for (int lane = 0; lane < lanes; ++lane)
      addresses.push_back(static_cast<std::uint32_t>(rng() % span));
    INFO("trial " << trial << ", " << lanes << " lanes, seed " << cml::test_seed());
    REQUIRE(lab06::conflict_degree(addresses) == reference_degree(addresses));
  }
}

TEST_CASE("The conflict degree depends on the set of addresses, not on lane order",
          "[lab06][host][hidden][model]") {
  std::vector<std::uint32_t> addresses;
  for (std::uint32_t lane = 0; lane < 32; ++lane)
    addresses.push_back((lane % 4) * 128 + (lane / 4) * 4);
  const int degree = lab06::conflict_degree(addresses);
  CHECK(degree == 4);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::shuffle(addresses.begin(), addresses.end(), rng);
    CHECK(lab06::conflict_degree(addresses) == degree);
  }
}

TEST_CASE("The degree of a column read is gcd(pitch, 32) for every pitch",
          "[lab06][host][hidden][model]") {
  for (int pitch = 1; pitch <= 130; ++pitch) {
    INFO("row pitch " << pitch << " words");
    CHECK(lab06::column_read_degree(pitch) == std::gcd(pitch, 32));
  }
}

TEST_CASE("More addresses than lanes are refused", "[lab06][host][hidden][model]") {
  CHECK_THROWS_AS(lab06::conflict_degree(std::vector<std::uint32_t>(33, 0)), std::invalid_argument);
  CHECK_THROWS_AS(lab06::column_read_degree(0), std::invalid_argument);
  // The refusals are given code; the points are for the answers at the limits: a full warp
  // on one word is a broadcast (1), and a pitch of one word is conflict-free (1).
  CHECK(lab06::conflict_degree(std::vector<std::uint32_t>(32, 0)) == 1);
  CHECK(lab06::column_read_degree(1) == 1);
}

namespace {

// Input element [r][c] holds r*cols + c, exact in a float below 2^24, so a wrong element
// names the input position it came from.
cml::CompareResult check_positions(const lab06_test::Transpose& t, int rows, int cols) {
  std::vector<float> in(static_cast<std::size_t>(rows) * cols);
  std::iota(in.begin(), in.end(), 0.0f);
  return lab06_test::check_transpose_of(
      t, in, rows, cols, cml::test_seed(),
      "input [r][c] holds r*cols + c here, so a wrong value tells you which input element "
      "landed in that output position.");
}

}  // namespace

TEST_CASE("Every output element comes from the mirrored input element (conflicted)",
          "[lab06][gpu][hidden][tiled]") {
  CML_REQUIRE_MATCH(check_positions(lab06::transpose_tiled_conflicted, 1000, 3000));
  CML_REQUIRE_MATCH(check_positions(lab06::transpose_tiled_conflicted, 1, 70000));
  CML_REQUIRE_MATCH(check_positions(lab06::transpose_tiled_conflicted, 70000, 1));
}

TEST_CASE("Every output element comes from the mirrored input element (padded)",
          "[lab06][gpu][hidden][padded]") {
  CML_REQUIRE_MATCH(check_positions(lab06::transpose_tiled_padded, 3000, 1000));
  CML_REQUIRE_MATCH(check_positions(lab06::transpose_tiled_padded, 1, 70000));
  CML_REQUIRE_MATCH(check_positions(lab06::transpose_tiled_padded, 70000, 1));
}

TEST_CASE("Transposing twice gives the input back, bit for bit", "[lab06][gpu][hidden][padded]") {
  // A missing barrier reads tile elements before they are written: values that change from
  // run to run and break the round trip.
  const int rows = 2048, cols = 1536;
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  const auto in = cml::random_floats(count, cml::derive_seed(cml::test_seed(), 99));
  cml::DeviceBuffer<float> d_a(count), d_b(count), d_c(count);
  d_a.upload(in);
  for (int run = 0; run < 3; ++run) {
    d_b.poison();
    d_c.poison();
    lab06::transpose_tiled_padded(d_a.data(), d_b.data(), rows, cols);
    lab06::transpose_tiled_padded(d_b.data(), d_c.data(), cols, rows);
    const auto back = d_c.download();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) wrong += back[i] != in[i];
    INFO("run " << run << ": " << wrong << " of " << count
                << " elements differ after two transposes (is a __syncthreads() missing?)");
    REQUIRE(wrong == 0);
  }
}
