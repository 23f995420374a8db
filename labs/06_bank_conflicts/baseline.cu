// Lab 06's given kernels: the naive transpose every speedup is measured against, and a plain
// copy with the same block shape that says how fast moving these bytes can be. Both use 32×8
// threads per 32×32 block of the matrix, each thread moving 4 elements, like the tiled
// transposes, so the only difference between them is where the data goes.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "bank_conflicts.cuh"
#include "cml/check.hpp"

namespace lab06 {
namespace {

// Reads walk along a row of `in` (coalesced); writes walk down a column of `out`, so the 32
// lanes of a warp store to 32 different rows, `rows` floats apart: 32 sectors per store.
__global__ void naive_transpose_kernel(const float* __restrict__ in, float* __restrict__ out,
                                       int rows, int cols) {
  const int col = blockIdx.x * kTile + threadIdx.x;
  const int row0 = blockIdx.y * kTile + threadIdx.y;
  if (col >= cols) return;
  for (int j = 0; j < kTile; j += kBlockRows) {
    const int row = row0 + j;
    if (row < rows) {
      out[static_cast<std::size_t>(col) * rows + row] =
          in[static_cast<std::size_t>(row) * cols + col];
    }
  }
}

__global__ void copy_kernel(const float* __restrict__ in, float* __restrict__ out, int rows,
                            int cols) {
  const int col = blockIdx.x * kTile + threadIdx.x;
  const int row0 = blockIdx.y * kTile + threadIdx.y;
  if (col >= cols) return;
  for (int j = 0; j < kTile; j += kBlockRows) {
    const int row = row0 + j;
    if (row < rows) {
      const std::size_t at = static_cast<std::size_t>(row) * cols + col;
      out[at] = in[at];
    }
  }
}

void require_shape(int rows, int cols, const char* who) {
  if (rows < 1 || cols < 1) {
    throw std::invalid_argument(std::string(who) + ": rows = " + std::to_string(rows) +
                                " and cols = " + std::to_string(cols) + " must both be >= 1");
  }
}

dim3 grid_for(int rows, int cols) {
  return dim3((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
}

}  // namespace

void transpose_naive(const float* d_in, float* d_out, int rows, int cols) {
  require_shape(rows, cols, "transpose_naive");
  naive_transpose_kernel<<<grid_for(rows, cols), dim3(kTile, kBlockRows)>>>(d_in, d_out, rows,
                                                                            cols);
  CUDA_CHECK_LAUNCH();
}

void copy_matrix(const float* d_in, float* d_out, int rows, int cols) {
  require_shape(rows, cols, "copy_matrix");
  copy_kernel<<<grid_for(rows, cols), dim3(kTile, kBlockRows)>>>(d_in, d_out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab06
