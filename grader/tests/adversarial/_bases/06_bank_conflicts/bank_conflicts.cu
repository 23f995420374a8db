// Lab 06: shared-memory bank conflicts, written from the interface in bank_conflicts.cuh.
#include <algorithm>
#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "bank_conflicts.cuh"
#include "cml/check.hpp"

namespace lab06 {

int bank_of(std::uint32_t byte_address) {
  const std::uint32_t word = byte_address / kBankWordBytes;
  return static_cast<int>(word % kBanks);
}

int conflict_degree(const std::vector<std::uint32_t>& byte_addresses) {
  if (byte_addresses.size() > static_cast<std::size_t>(kWarpSize)) {
    throw std::invalid_argument("conflict_degree: " + std::to_string(byte_addresses.size()) +
                                " addresses, but a warp has at most " +
                                std::to_string(kWarpSize) + " lanes");
  }
  std::vector<std::uint32_t> words;
  for (const std::uint32_t a : byte_addresses) words.push_back(a / kBankWordBytes);
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());  // broadcasts count once
  std::array<int, kBanks> per_bank{};
  int worst = 0;
  for (const std::uint32_t w : words) {
    worst = std::max(worst, ++per_bank[w % kBanks]);
  }
  return worst;
}

int column_read_degree(int row_pitch_words) {
  if (row_pitch_words < 1) {
    throw std::invalid_argument("column_read_degree: row pitch " +
                                std::to_string(row_pitch_words) + " must be >= 1 word");
  }
  std::vector<std::uint32_t> column(kWarpSize);
  for (int i = 0; i < kWarpSize; ++i) {
    column[i] = static_cast<std::uint32_t>(i * row_pitch_words * kBankWordBytes);
  }
  return conflict_degree(column);
}

namespace {

// The whole transpose of one tile through a kTile×PITCH shared array: rows in, columns out.
template <int PITCH>
__device__ __forceinline__ void transpose_tile(const float* __restrict__ in,
                                               float* __restrict__ out, int rows, int cols) {
  __shared__ float buf[kTile][PITCH];
  const int x = threadIdx.x;
  const int top = kTile * blockIdx.y;   // first row of in this block reads
  const int left = kTile * blockIdx.x;  // first column of in this block reads
  for (int y = threadIdx.y; y < kTile; y += kBlockRows) {
    if (top + y < rows && left + x < cols) {
      buf[y][x] = in[static_cast<std::size_t>(top + y) * cols + (left + x)];
    }
  }
  __syncthreads();
  // out is cols×rows; this block writes its rows left.., columns top.., along rows.
  for (int y = threadIdx.y; y < kTile; y += kBlockRows) {
    if (left + y < cols && top + x < rows) {
      out[static_cast<std::size_t>(left + y) * rows + (top + x)] = buf[x][y];
    }
  }
}

// Block (bx, by) moves the tile of `in` whose top-left element is [by·kTile][bx·kTile] to the
// tile of `out` at [bx·kTile][by·kTile]. Thread (tx, ty) handles rows ty, ty+8, ty+16, ty+24
// of the tile, column tx, so a warp (one value of ty) always walks along a row of global
// memory: reads and writes both coalesce. The transposition happens in shared memory.
__global__ void transpose_conflicted_kernel(const float* __restrict__ in, float* __restrict__ out,
                                            int rows, int cols) {
  transpose_tile<kTile>(in, out, rows, cols);  // lane x reads buf[x][y]: one bank, 32-way
}

__global__ void transpose_padded_kernel(const float* __restrict__ in, float* __restrict__ out,
                                        int rows, int cols) {
  // No padding: element [r][c] of the tile lives at column c ^ r, so a row and a column
  // of the tile both fall into 32 different banks.
  __shared__ float swizzled[kTile][kTile];
  const int x = threadIdx.x;
  const int top = kTile * blockIdx.y;
  const int left = kTile * blockIdx.x;
  for (int y = threadIdx.y; y < kTile; y += kBlockRows) {
    if (top + y < rows && left + x < cols) {
      swizzled[y][x ^ y] = in[static_cast<std::size_t>(top + y) * cols + (left + x)];
    }
  }
  __syncthreads();
  for (int y = threadIdx.y; y < kTile; y += kBlockRows) {
    if (left + y < cols && top + x < rows) {
      out[static_cast<std::size_t>(left + y) * rows + (top + x)] = swizzled[x][y ^ x];
    }
  }
}

void require_shape(int rows, int cols, const char* who) {
  if (rows < 1 || cols < 1) {
    throw std::invalid_argument(std::string(who) + ": rows = " + std::to_string(rows) +
                                " and cols = " + std::to_string(cols) + " must both be >= 1");
  }
}

// One kTile×kBlockRows block per kTile×kTile tile of the input; partial tiles at the right
// and bottom edges are handled by the kernels' bounds checks.
dim3 transpose_grid(int rows, int cols) {
  return dim3((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
}

}  // namespace

void transpose_tiled_conflicted(const float* d_in, float* d_out, int rows, int cols) {
  require_shape(rows, cols, "transpose_tiled_conflicted");
  transpose_conflicted_kernel<<<transpose_grid(rows, cols), dim3(kTile, kBlockRows)>>>(
      d_in, d_out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

void transpose_tiled_padded(const float* d_in, float* d_out, int rows, int cols) {
  require_shape(rows, cols, "transpose_tiled_padded");
  transpose_padded_kernel<<<transpose_grid(rows, cols), dim3(kTile, kBlockRows)>>>(
      d_in, d_out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab06
