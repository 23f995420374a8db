// The functions of coalescing.cu, for the grader's checker and runner (cml/remote.hpp): each
// call a test makes runs in the process that holds the student's code.
#pragma once

#include "coalescing.cuh"

// clang-format off
#define CML_REMOTE_CALLS(X)                                                                   \
  X(lab02::Traffic, lab02::warp_traffic, (const lab02::WarpRequest& request, int unit),       \
    (request, unit))                                                                          \
  X(lab02::Traffic, lab02::cached_traffic,                                                    \
    (const std::vector<lab02::WarpRequest>& requests, int unit), (requests, unit))            \
  X(lab02::Element, lab02::coalesced_element, (int block_row, int block_col, int thread),     \
    (block_row, block_col, thread))                                                           \
  X(void, lab02::scale_coalesced,                                                             \
    (const float* d_in, float* d_out, int rows, int cols, float factor),                      \
    (d_in, d_out, rows, cols, factor))
// clang-format on
