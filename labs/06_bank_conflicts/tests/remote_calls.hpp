// The functions of bank_conflicts.cu, for the grader's checker and runner (cml/remote.hpp):
// each call a test makes runs in the process that holds the student's code.
#pragma once

#include "bank_conflicts.cuh"

// clang-format off
#define CML_REMOTE_CALLS(X)                                                                   \
  X(int, lab06::bank_of, (std::uint32_t byte_address), (byte_address))                        \
  X(int, lab06::conflict_degree, (const std::vector<std::uint32_t>& addresses), (addresses))  \
  X(int, lab06::column_read_degree, (int row_pitch_words), (row_pitch_words))                 \
  X(void, lab06::transpose_tiled_conflicted,                                                  \
    (const float* d_in, float* d_out, int rows, int cols), (d_in, d_out, rows, cols))         \
  X(void, lab06::transpose_tiled_padded,                                                      \
    (const float* d_in, float* d_out, int rows, int cols), (d_in, d_out, rows, cols))
// clang-format on
