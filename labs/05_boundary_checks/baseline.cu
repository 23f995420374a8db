// Lab 05's given kernels: the naive product for any I×J×K (the baseline on odd sizes) and
// lab 04's tiled kernel with no boundary tests at all (the baseline on multiples of the tile,
// and the example of what goes wrong elsewhere).
#include <stdexcept>
#include <string>

#include "boundary_checks.cuh"
#include "cml/check.hpp"

namespace lab05 {
namespace {

// One thread per element of C; threadIdx.x walks along C's row so a warp's reads of B and
// writes of C coalesce. Threads past the edge have nothing to do and no neighbour to help,
// so here (unlike in a tiled kernel) they may simply return.
__global__ void naive_kernel(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, int rows, int inner, int cols) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows || col >= cols) return;
  float sum = 0.0f;
  for (int k = 0; k < inner; ++k) sum += a[row * inner + k] * b[k * cols + col];
  c[row * cols + col] = sum;
}

// Lab 04's kernel as written there: every index assumed inside the matrices.
template <int TILE>
__global__ void unchecked_tiled_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                       float* __restrict__ c, int n) {
  __shared__ float tile_a[TILE][TILE];
  __shared__ float tile_b[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float sum = 0.0f;
  for (int phase = 0; phase < n / TILE; ++phase) {
    tile_a[threadIdx.y][threadIdx.x] = a[row * n + phase * TILE + threadIdx.x];
    tile_b[threadIdx.y][threadIdx.x] = b[(phase * TILE + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < TILE; ++k) sum += tile_a[threadIdx.y][k] * tile_b[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = sum;
}

void require_positive(const char* who, int value, const char* name) {
  if (value < 1) {
    throw std::invalid_argument(std::string(who) + ": " + name + " = " + std::to_string(value) +
                                " must be at least 1");
  }
}

}  // namespace

void matmul_naive(const float* d_a, const float* d_b, float* d_c, int rows, int inner, int cols) {
  require_positive("matmul_naive", rows, "rows");
  require_positive("matmul_naive", inner, "inner");
  require_positive("matmul_naive", cols, "cols");
  const dim3 block(32, 8);
  const dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
  naive_kernel<<<grid, block>>>(d_a, d_b, d_c, rows, inner, cols);
  CUDA_CHECK_LAUNCH();
}

void matmul_tiled_unchecked(const float* d_a, const float* d_b, float* d_c, int n) {
  require_positive("matmul_tiled_unchecked", n, "n");
  // Rounding the grid up gives every element of C a thread; nothing else here is rounded.
  const int blocks = (n + kTile - 1) / kTile;
  unchecked_tiled_kernel<kTile><<<dim3(blocks, blocks), dim3(kTile, kTile)>>>(d_a, d_b, d_c, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab05
