/// \file
/// Double-precision CPU reference for C = A·B (row-major), for checking GPU results.
#pragma once

#include <cstddef>
#include <vector>

namespace cml {

/// Reference values and, per element, the sum of |a_ik·b_kj|: the scale a float32
/// accumulation error is proportional to (pass it to compare() with float_sum_tolerance()).
struct MatmulReference {
  std::vector<double> value;
  std::vector<double> magnitude;
};

/// C = A·B with A rows×inner and B inner×cols, all row-major. When `only_rows` is not empty,
/// only those rows of C are computed (in that order): large products are checked on a sample.
MatmulReference matmul_reference(const std::vector<float>& a, const std::vector<float>& b,
                                 std::size_t rows, std::size_t inner, std::size_t cols,
                                 const std::vector<std::size_t>& only_rows = {});

/// Picks up to `count` row numbers of an `rows`-row matrix for sampled checking: the first
/// and last rows (where edge bugs live) and evenly spread ones between.
std::vector<std::size_t> sample_rows(std::size_t rows, std::size_t count);

/// Copies the listed rows of a row-major matrix into one contiguous vector.
std::vector<float> gather_rows(const std::vector<float>& matrix, std::size_t cols,
                               const std::vector<std::size_t>& rows);

}  // namespace cml
