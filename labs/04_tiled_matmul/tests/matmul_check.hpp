// Runs one matrix product on the GPU and checks it against the CPU reference: fresh random
// inputs from the run's seed, a poisoned output with guard zones, a double-precision
// reference, and a report that names the element, the size and the seed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/compare.hpp"
#include "cml/matmul_ref.hpp"
#include "cml/random.hpp"

namespace lab04_test {

/// Computes C = A·B for n×n device matrices.
using Matmul = std::function<void(const float* a, const float* b, float* c, int n)>;

/// A and B for an n×n product, derived from `seed` (different for every n).
inline std::pair<std::vector<float>, std::vector<float>> make_inputs(int n, std::uint64_t seed) {
  const std::size_t count = static_cast<std::size_t>(n) * n;
  return {cml::random_floats(count, cml::derive_seed(seed, 2 * n)),
          cml::random_floats(count, cml::derive_seed(seed, 2 * n + 1))};
}

/// Runs `matmul` on A, B and checks C. `check_rows` > 0 checks only that many rows
/// (first, last and spread between) so large sizes stay quick on the CPU.
inline cml::CompareResult check_matmul(const Matmul& matmul, const std::vector<float>& a,
                                       const std::vector<float>& b, int n, std::uint64_t seed,
                                       const std::string& hint, std::size_t check_rows = 0) {
  const std::size_t count = static_cast<std::size_t>(n) * n;
  cml::DeviceBuffer<float> d_a(count), d_b(count), d_c(count, 4096);
  d_a.upload(a);
  d_b.upload(b);
  d_c.poison();
  const cml::LaunchCounter launches;
  matmul(d_a.data(), d_b.data(), d_c.data(), n);
  if (auto k = cml::require_kernel(launches, "the matrix product"); !k.ok) return k;
  const std::vector<float> c = d_c.download();

  cml::CompareContext ctx;
  ctx.name = "C";
  ctx.cols = static_cast<std::size_t>(n);
  ctx.size = "n=" + std::to_string(n);
  ctx.seed = seed;
  ctx.hint = hint;
  if (const std::string guard = d_c.guard_report(); !guard.empty()) {
    cml::CompareResult bad;
    bad.ok = false;
    bad.message = "out-of-bounds write into C: " + guard + " (size " + ctx.size + ", seed " +
                  std::to_string(seed) + ")\nHint: every store must land inside the n×n output.";
    return bad;
  }
  std::vector<std::size_t> rows;
  if (check_rows > 0) rows = cml::sample_rows(static_cast<std::size_t>(n), check_rows);
  const auto ref = cml::matmul_reference(a, b, n, n, n, rows);
  ctx.row_labels = rows;
  const std::vector<float> got = rows.empty() ? c : cml::gather_rows(c, n, rows);
  return cml::compare(got, ref.value, cml::float_sum_tolerance(n), ctx, ref.magnitude);
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
