// Lab 04's baseline: the naive matrix product. Consecutive threads of a warp take consecutive
// columns, so their reads of B and writes of C coalesce; each reads A's row element that the
// whole warp shares. Every multiply-add still costs two global loads.
#include "cml/check.hpp"
#include "tiled_matmul.cuh"

namespace lab04 {
namespace {

__global__ void naive_kernel(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, int n) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n || col >= n) return;
  float sum = 0.0f;
  for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + col];
  c[row * n + col] = sum;
}

}  // namespace

void matmul_naive(const float* d_a, const float* d_b, float* d_c, int n) {
  const dim3 block(32, 8);
  const dim3 grid((n + block.x - 1) / block.x, (n + block.y - 1) / block.y);
  naive_kernel<<<grid, block>>>(d_a, d_b, d_c, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab04
