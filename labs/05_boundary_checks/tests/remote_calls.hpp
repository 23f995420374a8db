// The functions of boundary_checks.cu, for the grader's checker and runner (cml/remote.hpp):
// each call a test makes runs in the process that holds the student's code.
#pragma once

#include "boundary_checks.cuh"

// clang-format off
#define CML_REMOTE_CALLS(X)                                                                   \
  X(void, lab05::matmul_square, (const float* d_a, const float* d_b, float* d_c, int n),      \
    (d_a, d_b, d_c, n))                                                                       \
  X(void, lab05::matmul_general,                                                              \
    (const float* d_a, const float* d_b, float* d_c, int rows, int inner, int cols),          \
    (d_a, d_b, d_c, rows, inner, cols))                                                       \
  X(lab05::EdgeCounts, lab05::count_edges, (int rows, int inner, int cols, int tile),         \
    (rows, inner, cols, tile))
// clang-format on
