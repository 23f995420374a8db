// Lab 05: boundary checks. Fill in every TODO(lab05); the handout
// handouts/05_boundary_checks.md explains the ideas, and `python3 -m grader check 05`
// tells you how you are doing.
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
  // TODO(lab05): Tile as in lab 04 with ceil(n/TILE) phases; load 0 where the row or the column is >= n; store only inside C.
}

// The same for C (rows×cols) = A (rows×inner) · B (inner×cols): rows bound A's and C's row
// index, inner bounds the phase index k, cols bounds B's and C's column index.
template <int TILE>
__global__ void tiled_general_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ c, int rows, int inner, int cols) {
  // TODO(lab05): As above, with rows, inner and cols in place of n (each index tested against its own size).
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
  // TODO(lab05): Launch tiled_square_kernel<kTile> with kTile×kTile blocks, enough of them to cover every element of C.
}

void matmul_general(const float* d_a, const float* d_b, float* d_c, int rows, int inner, int cols) {
  require_positive("matmul_general", rows, "rows");
  require_positive("matmul_general", inner, "inner");
  require_positive("matmul_general", cols, "cols");
  // TODO(lab05): Launch tiled_general_kernel<kTile>: blockIdx.x walks C's columns, blockIdx.y its rows.
}

EdgeCounts count_edges(int rows, int inner, int cols, int tile) {
  require_positive("count_edges", rows, "rows");
  require_positive("count_edges", inner, "inner");
  require_positive("count_edges", cols, "cols");
  require_positive("count_edges", tile, "tile");
  EdgeCounts counts;
  // TODO(lab05): Fill every field of counts in 64-bit arithmetic, by formula or a loop over rows (a loop over every thread and phase is far too slow for large sizes).
  return counts;
}

}  // namespace lab05
