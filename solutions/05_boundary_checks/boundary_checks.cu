// >>>
// Lab 05 reference solution. The student skeleton labs/05_boundary_checks/boundary_checks.cu
// is generated from this file: never edit the skeleton by hand.
// === stub
// // Lab 05: boundary checks. Fill in every TODO(lab05); the handout
// // handouts/05_boundary_checks.md explains the ideas, and `python3 -m grader check 05`
// // tells you how you are doing.
// <<<
#include <cstdint>
#include <stdexcept>
#include <string>

#include "boundary_checks.cuh"
#include "cml/check.hpp"

namespace lab05 {
namespace {

// One block computes one TILE×TILE tile of the n×n product, as in lab 04, but n need not be a
// multiple of TILE. Blocks on the right and bottom edges hang over C and the last phase hangs
// over A's and B's edges; every thread still takes part in every load and every barrier.
template <int TILE>
__global__ void tiled_square_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                    float* __restrict__ c, int n) {
  // >>> TODO(lab05): Tile as in lab 04 with ceil(n/TILE) phases; load 0 where the row or the column is >= n; store only inside C.
  __shared__ float tile_a[TILE][TILE];
  __shared__ float tile_b[TILE][TILE];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  const int phases = (n + TILE - 1) / TILE;
  float sum = 0.0f;
  for (int phase = 0; phase < phases; ++phase) {
    const int a_col = phase * TILE + tx;
    const int b_row = phase * TILE + ty;
    // Row and column are tested separately: a_col >= n with row < n is still a valid address
    // (the next row's element), so testing the linear index alone would not catch it. The 0
    // matters: without it the tile keeps the previous phase's value at this place.
    tile_a[ty][tx] = (row < n && a_col < n) ? a[row * n + a_col] : 0.0f;
    tile_b[ty][tx] = (b_row < n && col < n) ? b[b_row * n + col] : 0.0f;
    // Every thread of the block gets here, also those with no element of C: the barrier must
    // never sit inside a branch that some threads skip.
    __syncthreads();
    for (int k = 0; k < TILE; ++k) sum += tile_a[ty][k] * tile_b[k][tx];
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = sum;
  // <<<
}

// The same for C (rows×cols) = A (rows×inner) · B (inner×cols): rows bound A's and C's row
// index, inner bounds the phase index k, cols bounds B's and C's column index.
template <int TILE>
__global__ void tiled_general_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ c, int rows, int inner, int cols) {
  // >>> TODO(lab05): As above, with rows, inner and cols in place of n (each index tested against its own size).
  __shared__ float tile_a[TILE][TILE];
  __shared__ float tile_b[TILE][TILE];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  const int phases = (inner + TILE - 1) / TILE;
  float sum = 0.0f;
  for (int phase = 0; phase < phases; ++phase) {
    const int a_col = phase * TILE + tx;
    const int b_row = phase * TILE + ty;
    tile_a[ty][tx] = (row < rows && a_col < inner) ? a[row * inner + a_col] : 0.0f;
    tile_b[ty][tx] = (b_row < inner && col < cols) ? b[b_row * cols + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) sum += tile_a[ty][k] * tile_b[k][tx];
    __syncthreads();
  }
  if (row < rows && col < cols) c[row * cols + col] = sum;
  // <<<
}

void require_positive(const char* who, int value, const char* name) {
  if (value < 1) {
    throw std::invalid_argument(std::string(who) + ": " + name + " = " + std::to_string(value) +
                                " must be at least 1");
  }
}

}  // namespace

void matmul_square(const float* d_a, const float* d_b, float* d_c, int n) {
  require_positive("matmul_square", n, "n");
  // >>> TODO(lab05): Launch tiled_square_kernel<kTile> with kTile×kTile blocks, enough of them to cover every element of C.
  const int blocks = (n + kTile - 1) / kTile;
  tiled_square_kernel<kTile><<<dim3(blocks, blocks), dim3(kTile, kTile)>>>(d_a, d_b, d_c, n);
  CUDA_CHECK_LAUNCH();
  // <<<
}

void matmul_general(const float* d_a, const float* d_b, float* d_c, int rows, int inner, int cols) {
  require_positive("matmul_general", rows, "rows");
  require_positive("matmul_general", inner, "inner");
  require_positive("matmul_general", cols, "cols");
  // >>> TODO(lab05): Launch tiled_general_kernel<kTile>: blockIdx.x walks C's columns, blockIdx.y its rows.
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  tiled_general_kernel<kTile><<<grid, dim3(kTile, kTile)>>>(d_a, d_b, d_c, rows, inner, cols);
  CUDA_CHECK_LAUNCH();
  // <<<
}

EdgeCounts count_edges(int rows, int inner, int cols, int tile) {
  require_positive("count_edges", rows, "rows");
  require_positive("count_edges", inner, "inner");
  require_positive("count_edges", cols, "cols");
  require_positive("count_edges", tile, "tile");
  EdgeCounts counts;
  // >>> TODO(lab05): Fill every field of counts in 64-bit arithmetic, by formula or a loop over rows (a loop over every thread and phase is far too slow for large sizes).
  const std::uint64_t i = static_cast<std::uint64_t>(rows);
  const std::uint64_t j = static_cast<std::uint64_t>(inner);
  const std::uint64_t k = static_cast<std::uint64_t>(cols);
  const std::uint64_t t = static_cast<std::uint64_t>(tile);
  const std::uint64_t block_rows = (i + t - 1) / t;
  const std::uint64_t block_cols = (k + t - 1) / t;
  // The sizes rounded up to whole tiles: the index ranges the threads actually cover.
  const std::uint64_t i_pad = block_rows * t;
  const std::uint64_t j_pad = (j + t - 1) / t * t;
  const std::uint64_t k_pad = block_cols * t;

  counts.blocks = block_rows * block_cols;
  counts.edge_blocks = counts.blocks - (i / t) * (k / t);  // all but the full interior blocks
  counts.phases = j_pad / t;
  counts.idle_threads = i_pad * k_pad - i * k;
  // Every block column loads the whole i_pad×j_pad strip of A once; every block row the
  // j_pad×k_pad strip of B. Everything outside the real I×J (J×K) is masked.
  counts.masked_a = block_cols * (i_pad * j_pad - i * j);
  counts.masked_b = block_rows * (j_pad * k_pad - j * k);
  // A load at (r, kk) lands past A's end when r·J + kk >= I·J, i.e. kk >= (I - r)·J. Only the
  // last real row and the padding rows can do that, unless J is smaller than the tile.
  std::uint64_t past_a = 0;
  for (std::uint64_t r = 0; r < i_pad; ++r) {
    const std::uint64_t first = r >= i ? 0 : (i - r) * j;  // first kk past the end
    past_a += j_pad > first ? j_pad - first : 0;
  }
  std::uint64_t past_b = 0;
  for (std::uint64_t kk = 0; kk < j_pad; ++kk) {
    const std::uint64_t first = kk >= j ? 0 : (j - kk) * k;  // first col past the end
    past_b += k_pad > first ? k_pad - first : 0;
  }
  counts.past_end_a = block_cols * past_a;
  counts.past_end_b = block_rows * past_b;
  // <<<
  return counts;
}

}  // namespace lab05
