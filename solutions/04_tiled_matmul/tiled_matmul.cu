// >>>
// Lab 04 reference solution. The student skeleton labs/04_tiled_matmul/tiled_matmul.cu is
// generated from this file: never edit the skeleton by hand.
// === stub
// // Lab 04: tiled matrix multiplication. Fill in every TODO(lab04); the handout
// // handouts/04_tiled_matmul.md explains the ideas, and `python3 -m grader check 04`
// // tells you how you are doing.
// <<<
#include <stdexcept>
#include <string>

#include "cml/check.hpp"
#include "tiled_matmul.cuh"

namespace lab04 {
namespace {

// One block computes one TILE×TILE tile of C. The loop walks the tiles of A's block row and
// B's block column in phases: load a tile of each into shared memory, then multiply them.
template <int TILE>
__global__ void tiled_kernel(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, int n) {
  // >>> TODO(lab04): Declare two TILE×TILE __shared__ tiles and compute C[row][col] phase by phase.
  __shared__ float tile_a[TILE][TILE];
  __shared__ float tile_b[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float sum = 0.0f;
  for (int phase = 0; phase < n / TILE; ++phase) {
    // Each thread loads one element of each tile; threadIdx.x walks along rows so that a
    // warp's loads of A and of B both touch consecutive addresses.
    tile_a[threadIdx.y][threadIdx.x] = a[row * n + phase * TILE + threadIdx.x];
    tile_b[threadIdx.y][threadIdx.x] = b[(phase * TILE + threadIdx.y) * n + col];
    // Wait until the whole tile is loaded before anyone reads it.
    __syncthreads();
    for (int k = 0; k < TILE; ++k) sum += tile_a[threadIdx.y][k] * tile_b[k][threadIdx.x];
    // Wait again so faster threads don't overwrite the tiles slower threads still read.
    __syncthreads();
  }
  c[row * n + col] = sum;
  // <<<
}

// The same with the tile width chosen at run time: both tiles live in one dynamically sized
// shared buffer whose size is the launch's third parameter.
__global__ void tiled_dynamic_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ c, int n, int tile) {
  // >>> TODO(lab04): Carve the A and B tiles out of one extern __shared__ buffer and compute as above.
  extern __shared__ float shared[];
  float* tile_a = shared;
  float* tile_b = shared + tile * tile;
  const int ty = threadIdx.y;
  const int tx = threadIdx.x;
  const int row = blockIdx.y * tile + ty;
  const int col = blockIdx.x * tile + tx;
  float sum = 0.0f;
  for (int phase = 0; phase < n / tile; ++phase) {
    tile_a[ty * tile + tx] = a[row * n + phase * tile + tx];
    tile_b[ty * tile + tx] = b[(phase * tile + ty) * n + col];
    __syncthreads();
    for (int k = 0; k < tile; ++k) sum += tile_a[ty * tile + k] * tile_b[k * tile + tx];
    __syncthreads();
  }
  c[row * n + col] = sum;
  // <<<
}

void require_multiple(int n, int tile, const char* who) {
  if (n <= 0 || tile <= 0 || n % tile != 0) {
    throw std::invalid_argument(std::string(who) + ": n = " + std::to_string(n) +
                                " must be a positive multiple of the tile width " +
                                std::to_string(tile) + " (lab 05 removes this restriction)");
  }
}

}  // namespace

void matmul_tiled(const float* d_a, const float* d_b, float* d_c, int n) {
  require_multiple(n, kTile, "matmul_tiled");
  // >>> TODO(lab04): Launch tiled_kernel<kTile> with one kTile×kTile block per tile of C.
  const dim3 block(kTile, kTile);
  const dim3 grid(n / kTile, n / kTile);
  tiled_kernel<kTile><<<grid, block>>>(d_a, d_b, d_c, n);
  CUDA_CHECK_LAUNCH();
  // <<<
}

void matmul_tiled_dynamic(const float* d_a, const float* d_b, float* d_c, int n, int tile) {
  if (tile < 1 || tile > kMaxTile) {
    throw std::invalid_argument("matmul_tiled_dynamic: tile = " + std::to_string(tile) +
                                " is outside 1.." + std::to_string(kMaxTile));
  }
  require_multiple(n, tile, "matmul_tiled_dynamic");
  // >>> TODO(lab04): Launch tiled_dynamic_kernel with tile×tile blocks and room for two tiles of shared memory.
  const dim3 block(tile, tile);
  const dim3 grid(n / tile, n / tile);
  const std::size_t shared_bytes = 2 * static_cast<std::size_t>(tile) * tile * sizeof(float);
  tiled_dynamic_kernel<<<grid, block, shared_bytes>>>(d_a, d_b, d_c, n, tile);
  CUDA_CHECK_LAUNCH();
  // <<<
}

int choose_tile(int max_threads_per_block, std::size_t shared_bytes_per_block) {
  // >>> TODO(lab04): Return the largest power of two <= kMaxTile whose block and two tiles fit the limits.
  for (int tile = kMaxTile; tile >= 1; tile /= 2) {
    const std::size_t bytes = 2 * static_cast<std::size_t>(tile) * tile * sizeof(float);
    if (tile * tile <= max_threads_per_block && bytes <= shared_bytes_per_block) return tile;
  }
  return 0;
  // === stub
  // return 0;
  // <<<
}

std::uint64_t naive_global_loads(int n) {
  // >>> TODO(lab04): Count the loads: each of the n*n outputs reads a row of A and a column of B.
  const std::uint64_t m = static_cast<std::uint64_t>(n);
  return 2 * m * m * m;
  // === stub
  // return 0;
  // <<<
}

std::uint64_t tiled_global_loads(int n, int tile) {
  // >>> TODO(lab04): Count the loads: (n/tile)^2 blocks, n/tile phases, two tile×tile loads per phase.
  const std::uint64_t m = static_cast<std::uint64_t>(n);
  const std::uint64_t t = static_cast<std::uint64_t>(tile);
  const std::uint64_t blocks = (m / t) * (m / t);
  const std::uint64_t phases = m / t;
  return blocks * phases * 2 * t * t;
  // === stub
  // return 0;
  // <<<
}

}  // namespace lab04
