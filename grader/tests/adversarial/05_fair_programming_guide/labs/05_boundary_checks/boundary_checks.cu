// Lab 05: boundary checks, written from the interface in boundary_checks.cuh.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "boundary_checks.cuh"
#include "cml/check.hpp"

namespace lab05 {
namespace {

// C (rows×cols) = A (rows×inner) · B (inner×cols). Every thread takes part in every load
// and barrier; loads outside A or B give 0 and only threads inside C store.
// The CUDA Programming Guide's shared-memory product (Matrix, GetSubMatrix, GetElement,
// SetElement), with the bounds checks lab 05 adds: an element outside the matrix reads as 0
// and is never written.
struct Matrix {
  int width;
  int height;
  int stride;
  float* elements;
};

__device__ float GetElement(const Matrix A, int row, int col) {
  if (row >= A.height || col >= A.width) return 0.0f;
  return A.elements[row * A.stride + col];
}

__device__ void SetElement(Matrix A, int row, int col, float value) {
  if (row < A.height && col < A.width) A.elements[row * A.stride + col] = value;
}

// The sub-matrix `row` blocks down and `col` across, clipped to what is left of A.
__device__ Matrix GetSubMatrix(Matrix A, int row, int col, int size) {
  Matrix Asub;
  Asub.width = min(size, A.width - size * col);
  Asub.height = min(size, A.height - size * row);
  Asub.stride = A.stride;
  Asub.elements = &A.elements[A.stride * size * row + size * col];
  return Asub;
}

template <int BLOCK_SIZE>
__device__ void checked_product(const float* __restrict__ a, const float* __restrict__ b,
                                float* __restrict__ c, int rows, int inner, int cols) {
  const Matrix A{inner, rows, inner, const_cast<float*>(a)};
  const Matrix B{cols, inner, cols, const_cast<float*>(b)};
  const Matrix C{cols, rows, cols, c};
  int blockRow = blockIdx.y;
  int blockCol = blockIdx.x;
  Matrix Csub = GetSubMatrix(C, blockRow, blockCol, BLOCK_SIZE);
  float Cvalue = 0;
  int row = threadIdx.y;
  int col = threadIdx.x;
  for (int m = 0; m < (A.width + BLOCK_SIZE - 1) / BLOCK_SIZE; ++m) {
    Matrix Asub = GetSubMatrix(A, blockRow, m, BLOCK_SIZE);
    Matrix Bsub = GetSubMatrix(B, m, blockCol, BLOCK_SIZE);
    __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
    As[row][col] = GetElement(Asub, row, col);
    Bs[row][col] = GetElement(Bsub, row, col);
    __syncthreads();
    for (int e = 0; e < BLOCK_SIZE; ++e) Cvalue += As[row][e] * Bs[e][col];
    __syncthreads();
  }
  SetElement(Csub, row, col, Cvalue);
}

template <int TILE>
__global__ void tiled_square_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                    float* __restrict__ c, int n) {
  checked_product<TILE>(a, b, c, n, n, n);
}

template <int TILE>
__global__ void tiled_general_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ c, int rows, int inner, int cols) {
  checked_product<TILE>(a, b, c, rows, inner, cols);
}

void require_positive(const char* who, int value, const char* name) {
  if (value < 1) {
    throw std::invalid_argument(std::string(who) + ": " + name + " = " + std::to_string(value) +
                                " must be at least 1");
  }
}

unsigned tiles_over(int extent) { return static_cast<unsigned>((extent + kTile - 1) / kTile); }

// Loads whose unchecked address r·len + k runs past the last element of a real_rows×len
// matrix, over the padded_rows×padded_len index range one block row or column walks.
std::uint64_t overrun(std::uint64_t real_rows, std::uint64_t padded_rows, std::uint64_t len,
                      std::uint64_t padded_len) {
  std::uint64_t total = 0;
  const std::uint64_t reach = padded_len / len + 1;  // rows further up never run over
  const std::uint64_t start = real_rows > reach ? real_rows - reach : 0;
  for (std::uint64_t r = start; r < padded_rows; ++r) {
    const std::uint64_t first_bad = r < real_rows ? (real_rows - r) * len : 0;
    if (padded_len > first_bad) total += padded_len - first_bad;
  }
  return total;
}

}  // namespace

void matmul_square(const float* d_a, const float* d_b, float* d_c, int n) {
  require_positive("matmul_square", n, "n");
  const unsigned side = tiles_over(n);
  tiled_square_kernel<kTile><<<dim3(side, side), dim3(kTile, kTile)>>>(d_a, d_b, d_c, n);
  CUDA_CHECK_LAUNCH();
}

void matmul_general(const float* d_a, const float* d_b, float* d_c, int rows, int inner,
                    int cols) {
  require_positive("matmul_general", rows, "rows");
  require_positive("matmul_general", inner, "inner");
  require_positive("matmul_general", cols, "cols");
  tiled_general_kernel<kTile><<<dim3(tiles_over(cols), tiles_over(rows)), dim3(kTile, kTile)>>>(
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
  const std::uint64_t grid_rows = whole(I), grid_cols = whole(K), steps = whole(J);
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

}  // namespace lab05
