// The bench's own rungs of the SGEMM ladder (see ladder.hpp); the last rung is the student's
// matmul_register_tiled(), which adds float4 loads and a transposed A slice to the 2D rung.
#include <cstddef>

#include "cml/check.hpp"
#include "ladder.hpp"

namespace lab04_bench {
namespace {

// 1D: (BM/TM)·BN threads; thread t owns column t % BN and rows TM·(t / BN) … +TM−1.
template <int BM, int BN, int BK, int TM>
__global__ void __launch_bounds__((BM / TM) * BN)
    blocktile_1d_kernel(const float* __restrict__ a, const float* __restrict__ b,
                        float* __restrict__ c, int n) {
  static_assert((BM / TM) * BN == BM * BK && BM * BK == BK * BN, "one load of each per thread");
  __shared__ float tile_a[BM * BK];
  __shared__ float tile_b[BK * BN];
  const int col = threadIdx.x % BN, row = threadIdx.x / BN;
  a += static_cast<std::size_t>(blockIdx.y) * BM * n;
  b += static_cast<std::size_t>(blockIdx.x) * BN;
  c += static_cast<std::size_t>(blockIdx.y) * BM * n + static_cast<std::size_t>(blockIdx.x) * BN;
  const int a_col = threadIdx.x % BK, a_row = threadIdx.x / BK;
  const int b_col = threadIdx.x % BN, b_row = threadIdx.x / BN;
  float acc[TM] = {};
  for (int k0 = 0; k0 < n; k0 += BK) {
    tile_a[a_row * BK + a_col] = a[a_row * n + a_col];
    tile_b[b_row * BN + b_col] = b[b_row * n + b_col];
    __syncthreads();
    a += BK;
    b += static_cast<std::size_t>(BK) * n;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float bk = tile_b[k * BN + col];
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += tile_a[(row * TM + i) * BK + k] * bk;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) c[(row * TM + i) * n + col] = acc[i];
}

// 2D, scalar loads: (BM/TM)·(BN/TN) threads, each a TM×TN block of C.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    blocktile_2d_kernel(const float* __restrict__ a, const float* __restrict__ b,
                        float* __restrict__ c, int n) {
  constexpr int kThreads = (BM / TM) * (BN / TN);
  __shared__ float tile_a[BM * BK];
  __shared__ float tile_b[BK * BN];
  const int col = threadIdx.x % (BN / TN), row = threadIdx.x / (BN / TN);
  a += static_cast<std::size_t>(blockIdx.y) * BM * n;
  b += static_cast<std::size_t>(blockIdx.x) * BN;
  c += static_cast<std::size_t>(blockIdx.y) * BM * n + static_cast<std::size_t>(blockIdx.x) * BN;
  const int a_col = threadIdx.x % BK, a_row = threadIdx.x / BK;
  const int b_col = threadIdx.x % BN, b_row = threadIdx.x / BN;
  constexpr int kRowsA = kThreads / BK, kRowsB = kThreads / BN;
  float acc[TM * TN] = {};
  float reg_a[TM], reg_b[TN];
  for (int k0 = 0; k0 < n; k0 += BK) {
#pragma unroll
    for (int r = 0; r < BM; r += kRowsA)
      tile_a[(a_row + r) * BK + a_col] = a[(a_row + r) * n + a_col];
#pragma unroll
    for (int r = 0; r < BK; r += kRowsB)
      tile_b[(b_row + r) * BN + b_col] = b[(b_row + r) * n + b_col];
    __syncthreads();
    a += BK;
    b += static_cast<std::size_t>(BK) * n;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) reg_a[i] = tile_a[(row * TM + i) * BK + k];
#pragma unroll
      for (int j = 0; j < TN; ++j) reg_b[j] = tile_b[k * BN + col * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i * TN + j] += reg_a[i] * reg_b[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) c[(row * TM + i) * n + col * TN + j] = acc[i * TN + j];
  }
}

}  // namespace

void matmul_1d_blocktile(const float* d_a, const float* d_b, float* d_c, int n) {
  const dim3 grid(n / 64, n / 64);
  blocktile_1d_kernel<64, 64, 8, 8><<<grid, 512>>>(d_a, d_b, d_c, n);
  CUDA_CHECK_LAUNCH();
}

void matmul_2d_blocktile(const float* d_a, const float* d_b, float* d_c, int n) {
  const dim3 grid(n / 128, n / 128);
  blocktile_2d_kernel<128, 128, 8, 8, 8><<<grid, 256>>>(d_a, d_b, d_c, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab04_bench
