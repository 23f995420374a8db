// The rungs of the SGEMM ladder that only the bench runs (given code, never the student's):
// each step of the handout's ladder between the tiled kernel and the register-tiled one.
// All take n×n row-major device matrices, enqueue on the default stream and need n to be a
// multiple of kLadderBlock.
#pragma once

namespace lab04_bench {

/// Both rungs need n to be a multiple of this.
inline constexpr int kLadderBlock = 128;

/// 1D block tiling: 64×64 block tiles, slices of 8, each thread 8 outputs of one column of C
/// (one value of B in a register, reused for 8 values of A).
void matmul_1d_blocktile(const float* d_a, const float* d_b, float* d_c, int n);

/// 2D block tiling with scalar loads: 128×128 block tiles, slices of 8, each thread an 8×8
/// block of C in registers; A's slice stored as it is in memory, every load one float.
void matmul_2d_blocktile(const float* d_a, const float* d_b, float* d_c, int n);

}  // namespace lab04_bench
