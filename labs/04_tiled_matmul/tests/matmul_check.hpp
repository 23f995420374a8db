// Lab 04's n×n products through the shared matrix-product check (cml/matmul_check.hpp):
// fresh random inputs from the run's seed, a poisoned output with guard zones, a
// double-precision reference, and a report that names the element, the size and the seed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cml/matmul_check.hpp"

namespace lab04_test {

/// Computes C = A·B for n×n device matrices.
using Matmul = std::function<void(const float* a, const float* b, float* c, int n)>;

/// C = A·B for n×n matrices, as the shared check (cml/matmul_check.hpp) takes it.
inline cml::MatmulProblem problem(int n, std::uint64_t seed, const std::string& hint,
                                  std::size_t check_rows = 0) {
  cml::MatmulProblem p;
  p.rows = p.inner = p.cols = n;
  p.size = "n=" + std::to_string(n);
  p.seed = seed;
  p.hint = hint;
  p.guard_hint = "every store must land inside the n×n output.";
  p.check_rows = check_rows;
  return p;
}

/// A and B for an n×n product, derived from `seed` (different for every n).
inline std::pair<std::vector<float>, std::vector<float>> make_inputs(int n, std::uint64_t seed) {
  return cml::matmul_inputs(problem(n, seed, ""), seed, static_cast<std::uint64_t>(n));
}

/// Runs `matmul` on A, B and checks C. `check_rows` > 0 checks only that many rows
/// (first, last and spread between) so large sizes stay quick on the CPU.
inline cml::CompareResult check_matmul(const Matmul& matmul, const std::vector<float>& a,
                                       const std::vector<float>& b, int n, std::uint64_t seed,
                                       const std::string& hint, std::size_t check_rows = 0) {
  const auto product = [&](const float* d_a, const float* d_b, float* d_c) {
    matmul(d_a, d_b, d_c, n);
  };
  return cml::check_matmul(product, a, b, problem(n, seed, hint, check_rows)).result;
}

/// make_inputs() then check_matmul().
inline cml::CompareResult check_random(const Matmul& matmul, int n, std::uint64_t seed,
                                       const std::string& hint, std::size_t check_rows = 0) {
  const auto [a, b] = make_inputs(n, seed);
  return check_matmul(matmul, a, b, n, seed, hint, check_rows);
}

inline const char* kTiledHint =
    "each block computes one tile of C; check the row/column of the element each thread "
    "loads in every phase, and that there is a __syncthreads() after loading the tiles and "
    "another after using them.";

}  // namespace lab04_test
