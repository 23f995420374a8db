// Runs one transpose on the GPU and checks it: fresh random input from the run's seed, a
// poisoned output with guard zones, and a report that names the output element, the input
// element it should have come from, the shape and the seed. A transpose only moves floats,
// so the check is exact.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/compare.hpp"
#include "cml/guard_check.hpp"
#include "cml/random.hpp"

namespace lab06_test {

/// out (cols×rows) = inᵀ for a rows×cols device matrix.
using Transpose = std::function<void(const float* in, float* out, int rows, int cols)>;

inline std::string shape(int rows, int cols) {
  return "rows=" + std::to_string(rows) + ", cols=" + std::to_string(cols);
}

/// Runs `transpose` on `in` (rows×cols, row-major) and compares with the exact transpose.
inline cml::CompareResult check_transpose_of(const Transpose& transpose,
                                             const std::vector<float>& in, int rows, int cols,
                                             std::uint64_t seed, const std::string& hint) {
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  cml::DeviceBuffer<float> d_in(count), d_out(count, 4096);
  d_in.upload(in);
  d_out.poison();
  const cml::LaunchCounter launches;
  transpose(d_in.data(), d_out.data(), rows, cols);
  if (auto k = cml::require_kernel(launches, "the transpose"); !k.ok) return k;
  const std::vector<float> out = d_out.download();

  cml::CompareContext ctx;
  ctx.name = "out";
  ctx.cols = static_cast<std::size_t>(rows);  // out is cols×rows
  ctx.size = shape(rows, cols);
  ctx.seed = seed;
  ctx.hint = hint;
  const auto bad = cml::check_guards(d_out, ctx,
                                     "an edge tile is partial; test the output row "
                                     "against cols and the output column against rows before "
                                     "storing.");
  if (!bad.ok) return bad;
  std::vector<double> expected(count);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      expected[static_cast<std::size_t>(c) * rows + r] = in[static_cast<std::size_t>(r) * cols + c];
    }
  }
  cml::Tolerance exact;
  exact.rel = 0;
  exact.abs = 0;
  return cml::compare(out, expected, exact, ctx);
}

/// Random input for the shape (different for every shape), then check_transpose_of().
inline cml::CompareResult check_transpose(const Transpose& transpose, int rows, int cols,
                                          std::uint64_t seed, const std::string& hint) {
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  const auto in =
      cml::random_floats(count,
                         cml::derive_seed(seed,
                                          static_cast<std::uint64_t>(rows) * 1'000'003u + cols));
  return check_transpose_of(transpose, in, rows, cols, seed, hint);
}

/// The shapes every transpose must get right: tiny, one off a tile, non-square, one row or
/// one column.
inline const std::vector<std::pair<int, int>>& shapes() {
  static const std::vector<std::pair<int, int>> all = {{1, 1},     {2, 2},   {3, 3},     {31, 31},
                                                       {32, 32},   {33, 33}, {127, 127}, {128, 128},
                                                       {129, 129}, {1, 100}, {100, 1},   {37, 1000},
                                                       {1000, 37}, {64, 96}};
  return all;
}

inline const char* kTileHint =
    "out[i][j] must equal in[j][i]. The block at (bx, by) reads the input tile at rows "
    "by*32.., columns bx*32.. and writes the output tile at rows bx*32.., columns by*32..; "
    "write the tile row-wise, __syncthreads(), then read it column-wise. Check every load "
    "against rows/cols and every store against cols/rows.";

}  // namespace lab06_test
