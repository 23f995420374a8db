// Lab 05: boundary checks, written from the interface in boundary_checks.cuh.
#include <cooperative_groups.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "boundary_checks.cuh"
#include "cml/check.hpp"

namespace lab05 {
namespace {

// C (rows×cols) = A (rows×inner) · B (inner×cols). Every thread takes part in
// every load and barrier; loads outside A or B give 0 and only threads inside C
// store.
template <int TILE>
__device__ void
checked_product(const float *__restrict__ a, const float *__restrict__ b,
                float *__restrict__ c, int rows, int inner, int cols) {
  __shared__ float sa[TILE][TILE];
  __shared__ float sb[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int r = TILE * blockIdx.y + ty;
  const int q = TILE * blockIdx.x + tx;
  namespace cg = cooperative_groups;
  cg::thread_block block = cg::this_thread_block();
  float acc = 0.0f;
  for (int k0 = 0; k0 < inner; k0 += TILE) {
    const int ka = k0 + tx; // column of A this thread loads
    const int kb = k0 + ty; // row of B this thread loads
    sa[ty][tx] = (r < rows && ka < inner) ? a[r * inner + ka] : 0.0f;
    sb[ty][tx] = (kb < inner && q < cols) ? b[kb * cols + q] : 0.0f;
    block.sync();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk)
      acc += sa[ty][kk] * sb[kk][tx];
    block.sync();
  }
  if (r < rows && q < cols)
    c[r * cols + q] = acc;
}

template <int TILE>
__global__ void tiled_square_kernel(const float *__restrict__ a,
                                    const float *__restrict__ b,
                                    float *__restrict__ c, int n) {
  checked_product<TILE>(a, b, c, n, n, n);
}

template <int TILE>
__global__ void
tiled_general_kernel(const float *__restrict__ a, const float *__restrict__ b,
                     float *__restrict__ c, int rows, int inner, int cols) {
  checked_product<TILE>(a, b, c, rows, inner, cols);
}

void require_positive(const char *who, int value, const char *name) {
  if (value < 1) {
    throw std::invalid_argument(std::string(who) + ": " + name + " = " +
                                std::to_string(value) + " must be at least 1");
  }
}

unsigned tiles_over(int extent) {
  return static_cast<unsigned>((extent + kTile - 1) / kTile);
}

// Loads whose unchecked address r·len + k runs past the last element of a
// real_rows×len matrix, over the padded_rows×padded_len index range one block
// row or column walks.
std::uint64_t overrun(std::uint64_t real_rows, std::uint64_t padded_rows,
                      std::uint64_t len, std::uint64_t padded_len) {
  std::uint64_t total = 0;
  const std::uint64_t reach =
      padded_len / len + 1; // rows further up never run over
  const std::uint64_t start = real_rows > reach ? real_rows - reach : 0;
  for (std::uint64_t r = start; r < padded_rows; ++r) {
    const std::uint64_t first_bad = r < real_rows ? (real_rows - r) * len : 0;
    if (padded_len > first_bad)
      total += padded_len - first_bad;
  }
  return total;
}

} // namespace

void matmul_square(const float *d_a, const float *d_b, float *d_c, int n) {
  require_positive("matmul_square", n, "n");
  const unsigned side = tiles_over(n);
  tiled_square_kernel<kTile>
      <<<dim3(side, side), dim3(kTile, kTile)>>>(d_a, d_b, d_c, n);
  CUDA_CHECK_LAUNCH();
}

void matmul_general(const float *d_a, const float *d_b, float *d_c, int rows,
                    int inner, int cols) {
  require_positive("matmul_general", rows, "rows");
  require_positive("matmul_general", inner, "inner");
  require_positive("matmul_general", cols, "cols");
  tiled_general_kernel<kTile>
      <<<dim3(tiles_over(cols), tiles_over(rows)), dim3(kTile, kTile)>>>(
          d_a, d_b, d_c, rows, inner, cols);
  CUDA_CHECK_LAUNCH();
}

EdgeCounts count_edges(int rows, int inner, int cols, int tile) {
  require_positive("count_edges", rows, "rows");
  require_positive("count_edges", inner, "inner");
  require_positive("count_edges", cols, "cols");
  require_positive("count_edges", tile, "tile");
  EdgeCounts counts;
  const std::uint64_t I = static_cast<std::uint64_t>(rows);
  const std::uint64_t J = static_cast<std::uint64_t>(inner);
  const std::uint64_t K = static_cast<std::uint64_t>(cols);
  const std::uint64_t T = static_cast<std::uint64_t>(tile);
  const auto whole = [T](std::uint64_t x) { return (x + T - 1) / T; };
  const std::uint64_t grid_rows = whole(I), grid_cols = whole(K),
                      steps = whole(J);
  const std::uint64_t Ip = grid_rows * T, Jp = steps * T, Kp = grid_cols * T;
  counts.blocks = grid_rows * grid_cols;
  counts.edge_blocks = counts.blocks - (I / T) * (K / T);
  counts.phases = steps;
  counts.idle_threads = Ip * Kp - I * K;
  counts.masked_a = grid_cols * (Ip * Jp - I * J);
  counts.masked_b = grid_rows * (Jp * Kp - J * K);
  counts.past_end_a = grid_cols * overrun(I, Ip, J, Jp);
  counts.past_end_b = grid_rows * overrun(J, Jp, K, Kp);
  return counts;
}

} // namespace lab05
