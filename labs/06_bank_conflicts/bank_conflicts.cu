// Lab 06: shared-memory bank conflicts. Fill in every TODO(lab06); the handout
// handouts/06_bank_conflicts.md explains the ideas, and `python3 -m grader check 06`
// tells you how you are doing.
#include <algorithm>
#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "bank_conflicts.cuh"
#include "cml/check.hpp"

namespace lab06 {

int bank_of(std::uint32_t byte_address) {
  // TODO(lab06): Return the bank of the 4-byte word that holds this byte.
  return 0;
}

int conflict_degree(const std::vector<std::uint32_t>& byte_addresses) {
  if (byte_addresses.size() > static_cast<std::size_t>(kWarpSize)) {
    throw std::invalid_argument("conflict_degree: " + std::to_string(byte_addresses.size()) +
                                " addresses, but a warp has at most " + std::to_string(kWarpSize) +
                                " lanes");
  }
  // TODO(lab06): Count the distinct 4-byte words in each bank and return the largest count.
  return 0;
}

int column_read_degree(int row_pitch_words) {
  if (row_pitch_words < 1) {
    throw std::invalid_argument("column_read_degree: row pitch " + std::to_string(row_pitch_words) +
                                " must be >= 1 word");
  }
  // TODO(lab06): Build the 32 byte addresses of a column read and return their conflict degree.
  return 0;
}

namespace {

// Block (bx, by) moves the tile of `in` whose top-left element is [by·kTile][bx·kTile] to the
// tile of `out` at [bx·kTile][by·kTile]. Thread (tx, ty) handles rows ty, ty+8, ty+16, ty+24
// of the tile, column tx, so a warp (one value of ty) always walks along a row of global
// memory: reads and writes both coalesce. The transposition happens in shared memory.
__global__ void transpose_conflicted_kernel(const float* __restrict__ in, float* __restrict__ out,
                                            int rows, int cols) {
  // TODO(lab06): Stage the tile in float tile[kTile][kTile]: store rows, barrier, read it back by columns.
}

__global__ void transpose_padded_kernel(const float* __restrict__ in, float* __restrict__ out,
                                        int rows, int cols) {
  // TODO(lab06): The same transpose with each tile row one float longer: float tile[kTile][kTile + 1].
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
  transpose_conflicted_kernel<<<transpose_grid(rows, cols), dim3(kTile, kBlockRows)>>>(d_in, d_out,
                                                                                       rows, cols);
  CUDA_CHECK_LAUNCH();
}

void transpose_tiled_padded(const float* d_in, float* d_out, int rows, int cols) {
  require_shape(rows, cols, "transpose_tiled_padded");
  transpose_padded_kernel<<<transpose_grid(rows, cols), dim3(kTile, kBlockRows)>>>(d_in, d_out,
                                                                                   rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab06
