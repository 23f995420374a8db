// Lab 04: tiled matrix multiplication in the textbook's style (Programming Massively Parallel
// Processors, the tiled matrix multiplication kernel): TILE_WIDTH, Mds/Nds, Row/Col, Pvalue.
#include <stdexcept>
#include <string>

#include "cml/check.hpp"
#include "tiled_matmul.cuh"

#define TILE_WIDTH 32

namespace lab04 {

// Each thread computes one element P[Row][Col] of P = M * N, Width x Width.
__global__ void MatrixMulKernel(const float* M, const float* N, float* P, int Width) {
  __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
  __shared__ float Nds[TILE_WIDTH][TILE_WIDTH];

  int bx = blockIdx.x;  int by = blockIdx.y;
  int tx = threadIdx.x; int ty = threadIdx.y;

  // Identify the row and column of the P element to work on
  int Row = by * TILE_WIDTH + ty;
  int Col = bx * TILE_WIDTH + tx;

  // Loop over the M and N tiles required to compute the P element
  float Pvalue = 0;
  for (int ph = 0; ph < Width / TILE_WIDTH; ++ph) {
    // Collaborative loading of M and N tiles into shared memory
    Mds[ty][tx] = M[Row * Width + ph * TILE_WIDTH + tx];
    Nds[ty][tx] = N[(ph * TILE_WIDTH + ty) * Width + Col];
    __syncthreads();

    for (int k = 0; k < TILE_WIDTH; ++k) {
      Pvalue += Mds[ty][k] * Nds[k][tx];
    }
    __syncthreads();
  }
  P[Row * Width + Col] = Pvalue;
}

// The same with the tile width known only at run time: Mds and Nds are carved out of one
// dynamically sized array, tile_width * tile_width floats each.
__global__ void MatrixMulKernelDynamic(const float* M, const float* N, float* P, int Width,
                                       int tile_width) {
  extern __shared__ float Mds_Nds[];
  float* Mds = Mds_Nds;
  float* Nds = Mds_Nds + tile_width * tile_width;

  int bx = blockIdx.x;  int by = blockIdx.y;
  int tx = threadIdx.x; int ty = threadIdx.y;
  int Row = by * tile_width + ty;
  int Col = bx * tile_width + tx;

  float Pvalue = 0;
  for (int ph = 0; ph < Width / tile_width; ++ph) {
    Mds[ty * tile_width + tx] = M[Row * Width + ph * tile_width + tx];
    Nds[ty * tile_width + tx] = N[(ph * tile_width + ty) * Width + Col];
    __syncthreads();
    for (int k = 0; k < tile_width; ++k) {
      Pvalue += Mds[ty * tile_width + k] * Nds[k * tile_width + tx];
    }
    __syncthreads();
  }
  P[Row * Width + Col] = Pvalue;
}

static void check_width(int Width, int tile_width, const char* function) {
  if (Width <= 0 || Width % tile_width != 0) {
    throw std::invalid_argument(std::string(function) + ": Width " + std::to_string(Width) +
                                " is not a positive multiple of the tile width " +
                                std::to_string(tile_width));
  }
}

void matmul_tiled(const float* d_a, const float* d_b, float* d_c, int n) {
  check_width(n, TILE_WIDTH, "matmul_tiled");
  dim3 dimGrid(n / TILE_WIDTH, n / TILE_WIDTH);
  dim3 dimBlock(TILE_WIDTH, TILE_WIDTH);
  MatrixMulKernel<<<dimGrid, dimBlock>>>(d_a, d_b, d_c, n);
  CUDA_CHECK_LAUNCH();
}

void matmul_tiled_dynamic(const float* d_a, const float* d_b, float* d_c, int n, int tile) {
  if (tile < 1 || tile > kMaxTile) {
    throw std::invalid_argument("matmul_tiled_dynamic: tile width " + std::to_string(tile) +
                                " must be between 1 and " + std::to_string(kMaxTile));
  }
  check_width(n, tile, "matmul_tiled_dynamic");
  dim3 dimGrid(n / tile, n / tile);
  dim3 dimBlock(tile, tile);
  size_t size = 2 * tile * tile * sizeof(float);  // Mds and Nds
  MatrixMulKernelDynamic<<<dimGrid, dimBlock, size>>>(d_a, d_b, d_c, n, tile);
  CUDA_CHECK_LAUNCH();
}

int choose_tile(int max_threads_per_block, std::size_t shared_bytes_per_block) {
  for (int tile_width = kMaxTile; tile_width >= 1; tile_width /= 2) {
    const std::size_t threads = static_cast<std::size_t>(tile_width) * tile_width;
    if (threads <= static_cast<std::size_t>(max_threads_per_block) &&
        2 * threads * sizeof(float) <= shared_bytes_per_block) {
      return tile_width;
    }
  }
  return 0;
}

// Every one of the Width x Width threads reads Width elements of M and Width of N.
std::uint64_t naive_global_loads(int n) {
  const std::uint64_t Width = static_cast<std::uint64_t>(n);
  return 2 * Width * Width * Width;
}

// Tiling divides the global traffic by the tile width.
std::uint64_t tiled_global_loads(int n, int tile) {
  return naive_global_loads(n) / static_cast<std::uint64_t>(tile);
}

// Not attempted: the optional register-tiled bonus.
void matmul_register_tiled(const float*, const float*, float*, int) {}

}  // namespace lab04
