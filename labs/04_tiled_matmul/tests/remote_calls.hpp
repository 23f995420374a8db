// The functions of tiled_matmul.cu, for the grader's checker and runner (cml/remote.hpp): each
// call a test makes runs in the process that holds the student's code.
#pragma once

#include "tiled_matmul.cuh"

// clang-format off
#define CML_REMOTE_CALLS(X)                                                                   \
  X(void, lab04::matmul_tiled, (const float* d_a, const float* d_b, float* d_c, int n),       \
    (d_a, d_b, d_c, n))                                                                       \
  X(void, lab04::matmul_tiled_dynamic,                                                        \
    (const float* d_a, const float* d_b, float* d_c, int n, int tile), (d_a, d_b, d_c, n, tile)) \
  X(void, lab04::matmul_register_tiled,                                                       \
    (const float* d_a, const float* d_b, float* d_c, int n), (d_a, d_b, d_c, n))              \
  X(int, lab04::choose_tile, (int threads, std::size_t shared), (threads, shared))            \
  X(std::uint64_t, lab04::naive_global_loads, (int n), (n))                                   \
  X(std::uint64_t, lab04::tiled_global_loads, (int n, int tile), (n, tile))
// clang-format on
