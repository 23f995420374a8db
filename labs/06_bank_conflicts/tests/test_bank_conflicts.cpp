// Lab 06 public tests: the bank and conflict-degree model on the CPU; the transposes and the
// cycles-per-access measurement on the GPU.
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "bank_conflicts.cuh"
#include "cml/testing.hpp"
#include "transpose_check.hpp"

using lab06_test::check_transpose;
using lab06_test::kTileHint;

namespace {

// Lane i reads the 4-byte word at byte `base + i * stride_bytes`.
std::vector<std::uint32_t> warp_addresses(std::uint32_t stride_bytes, std::uint32_t base = 0) {
  std::vector<std::uint32_t> addresses;
  for (std::uint32_t lane = 0; lane < lab06::kWarpSize; ++lane) {
    addresses.push_back(base + lane * stride_bytes);
  }
  return addresses;
}

std::vector<std::uint32_t> word_stride(int words) {
  return warp_addresses(static_cast<std::uint32_t>(words) * 4);
}

}  // namespace

TEST_CASE("Consecutive 4-byte words sit in consecutive banks, wrapping after 32",
          "[lab06][host][model]") {
  CHECK(lab06::bank_of(0) == 0);
  CHECK(lab06::bank_of(4) == 1);
  CHECK(lab06::bank_of(124) == 31);
  CHECK(lab06::bank_of(128) == 0);  // word 32 wraps around to bank 0
  CHECK(lab06::bank_of(7) == 1);    // any byte of word 1
  CHECK(lab06::bank_of(4096 + 8) == 2);
}

TEST_CASE("Stride-1 words are conflict-free", "[lab06][host][model]") {
  CHECK(lab06::conflict_degree(word_stride(1)) == 1);
  // The base address does not matter, only the banks the lanes fall in.
  CHECK(lab06::conflict_degree(warp_addresses(4, 4 * 13)) == 1);
}

TEST_CASE("Stride-2 words are a 2-way conflict", "[lab06][host][model]") {
  INFO("lanes 0 and 16 both land in bank 0 (words 0 and 32), lanes 1 and 17 in bank 2, ...");
  CHECK(lab06::conflict_degree(word_stride(2)) == 2);
}

TEST_CASE("Stride-32 words are a 32-way conflict", "[lab06][host][model]") {
  INFO("words 0, 32, 64, ... are all in bank 0: 32 different words, one bank");
  CHECK(lab06::conflict_degree(word_stride(32)) == 32);
}

TEST_CASE("Lanes reading the same word are served at once (broadcast)", "[lab06][host][model]") {
  INFO("every lane reads word 0: one word, one pass");
  CHECK(lab06::conflict_degree(word_stride(0)) == 1);
  INFO("bytes 0..31 (a char per lane) are words 0..7: several lanes per word, no conflict");
  CHECK(lab06::conflict_degree(warp_addresses(1)) == 1);
  INFO("half the lanes on word 0, half on word 32: two words in bank 0");
  std::vector<std::uint32_t> halves(32, 0);
  for (int lane = 16; lane < 32; ++lane) halves[lane] = 32 * 4;
  CHECK(lab06::conflict_degree(halves) == 2);
}

TEST_CASE("A struct of 32 floats is a 32-way conflict; one float of padding removes it",
          "[lab06][host][model]") {
  struct Plain {
    float f[32];
  };
  struct Padded {
    float f[32];
    float pad;
  };
  static_assert(sizeof(Plain) == 128 && sizeof(Padded) == 132, "4-byte floats");
  for (std::uint32_t field : {0u, 5u}) {
    INFO("lane i reads s[i].f[" << field << "]");
    CHECK(lab06::conflict_degree(warp_addresses(sizeof(Plain), field * 4)) == 32);
    CHECK(lab06::conflict_degree(warp_addresses(sizeof(Padded), field * 4)) == 1);
  }
}

TEST_CASE("Fewer active lanes than 32 are counted as given", "[lab06][host][model]") {
  CHECK(lab06::conflict_degree({}) == 0);
  CHECK(lab06::conflict_degree({4 * 7}) == 1);
  CHECK(lab06::conflict_degree({0, 128, 256, 384}) == 4);  // four lanes, four words, bank 0
}

TEST_CASE("A column of an unpadded 32-wide tile is 32-way; of a padded one, conflict-free",
          "[lab06][host][model]") {
  CHECK(lab06::column_read_degree(lab06::kTile) == 32);
  CHECK(lab06::column_read_degree(lab06::kTile + 1) == 1);
  CHECK(lab06::column_read_degree(1) == 1);  // a 1-wide "tile" is just a row
  CHECK(lab06::column_read_degree(2) == 2);
  CHECK(lab06::column_read_degree(64) == 32);
}

TEST_CASE("Empty shapes are refused", "[lab06][host][given]") {
  CHECK_THROWS_AS(lab06::transpose_naive(nullptr, nullptr, 0, 4), std::invalid_argument);
  CHECK_THROWS_AS(lab06::transpose_tiled_conflicted(nullptr, nullptr, 4, 0), std::invalid_argument);
  CHECK_THROWS_AS(lab06::transpose_tiled_padded(nullptr, nullptr, -1, 4), std::invalid_argument);
}

TEST_CASE("The naive transpose matches the CPU", "[lab06][gpu][given]") {
  const auto seed = cml::test_seed();
  for (const auto& [rows, cols] : lab06_test::shapes()) {
    CML_REQUIRE_MATCH(check_transpose(lab06::transpose_naive, rows, cols, seed, "given code"));
  }
}

TEST_CASE("The plain copy copies", "[lab06][gpu][given]") {
  const auto copy_as_transpose = [](const float* in, float* out, int rows, int cols) {
    lab06::copy_matrix(in, out, rows, cols);
  };
  // A copy of a 1×n or n×1 matrix is also its transpose.
  CML_REQUIRE_MATCH(check_transpose(copy_as_transpose, 1, 1000, cml::test_seed(), "given code"));
}

TEST_CASE("The conflicted tile transpose is right for every shape", "[lab06][gpu][tiled]") {
  const auto seed = cml::test_seed();
  for (const auto& [rows, cols] : lab06_test::shapes()) {
    CML_REQUIRE_MATCH(
        check_transpose(lab06::transpose_tiled_conflicted, rows, cols, seed, kTileHint));
  }
}

TEST_CASE("The conflicted tile transpose is right on a matrix that fills the GPU",
          "[lab06][gpu][tiled]") {
  CML_REQUIRE_MATCH(
      check_transpose(lab06::transpose_tiled_conflicted, 4096, 3072, cml::test_seed(), kTileHint));
}

TEST_CASE("The padded tile transpose is right for every shape", "[lab06][gpu][padded]") {
  const auto seed = cml::test_seed();
  for (const auto& [rows, cols] : lab06_test::shapes()) {
    CML_REQUIRE_MATCH(check_transpose(lab06::transpose_tiled_padded, rows, cols, seed, kTileHint));
  }
}

TEST_CASE("The padded tile transpose is right on a matrix that fills the GPU",
          "[lab06][gpu][padded]") {
  CML_REQUIRE_MATCH(
      check_transpose(lab06::transpose_tiled_padded, 3072, 4096, cml::test_seed(), kTileHint));
}

TEST_CASE("Small transposes for the memory and race checkers", "[lab06][gpu][sanitizer]") {
  const auto seed = cml::test_seed();
  CML_REQUIRE_MATCH(check_transpose(lab06::transpose_tiled_conflicted, 33, 65, seed, kTileHint));
  CML_REQUIRE_MATCH(check_transpose(lab06::transpose_tiled_padded, 65, 33, seed, kTileHint));
}

TEST_CASE("Measured cycles per access rise with the predicted conflict degree",
          "[lab06][gpu][measure]") {
  // Stride 0 is the broadcast; 33 is the padded struct's 33-word pitch.
  const std::vector<int> strides = {0, 1, 2, 4, 8, 16, 32, 33};
  const std::vector<int> want = {1, 1, 2, 4, 8, 16, 32, 1};
  std::vector<int> degree;
  std::vector<double> cycles;
  std::ostringstream table;
  table << "stride  predicted degree  cycles per access\n";
  for (std::size_t i = 0; i < strides.size(); ++i) {
    std::vector<std::uint32_t> addresses;
    for (int lane = 0; lane < lab06::kWarpSize; ++lane) {
      addresses.push_back(static_cast<std::uint32_t>(lane * strides[i] * 4));
    }
    degree.push_back(lab06::conflict_degree(addresses));
    cycles.push_back(lab06::measure_cycles_per_access(strides[i]));
    table << std::setw(6) << strides[i] << std::setw(18) << degree[i] << std::setw(19) << std::fixed
          << std::setprecision(1) << cycles[i] << "\n";
  }
  std::cout << table.str();
  INFO(table.str());
  for (std::size_t i = 0; i < strides.size(); ++i) {
    INFO("conflict_degree for stride " << strides[i] << " words gave " << degree[i]
                                       << "; the bank model says " << want[i]);
    REQUIRE(degree[i] == want[i]);
  }
  // The measurement side: conflicts must cost something, conflict-free accesses must cost
  // about the same, and a higher degree must never be clearly cheaper than a lower one.
  const double lo = cycles[1];
  const double hi = cycles[6];
  INFO("stride 1 costs " << lo << " cycles, stride 32 costs " << hi);
  REQUIRE(hi > lo + 8);
  const double slack = 0.25 * (hi - lo);
  for (std::size_t i = 0; i < strides.size(); ++i) {
    for (std::size_t k = 0; k < strides.size(); ++k) {
      if (degree[i] == 1 && degree[k] == 1) {
        INFO("conflict-free strides " << strides[i] << " and " << strides[k]);
        CHECK(std::abs(cycles[i] - cycles[k]) <= slack);
      } else if (degree[i] < degree[k]) {
        INFO("stride " << strides[k] << " (degree " << degree[k] << ") vs stride " << strides[i]
                       << " (degree " << degree[i] << ")");
        CHECK(cycles[k] >= cycles[i] - slack);
      }
    }
  }
}
