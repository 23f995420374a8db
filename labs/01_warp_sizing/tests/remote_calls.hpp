// The functions of warp_sizing.cu, for the grader's checker and runner (cml/remote.hpp): each
// call a test makes runs in the process that holds the student's code.
#pragma once

#include "warp_sizing.cuh"

// clang-format off
#define CML_REMOTE_CALLS(X)                                                                   \
  X(int, lab01::warps_per_block, (int threads), (threads))                                    \
  X(int, lab01::idle_lanes, (int threads), (threads))                                         \
  X(lab01::WarpLane, lab01::warp_lane, (dim3 thread, dim3 block), (thread, block))            \
  X(void, lab01::record_warp_lanes, (dim3 block, int* d_warp, int* d_lane),                   \
    (block, d_warp, d_lane))                                                                  \
  X(lab01::WarpCount, lab01::predict_divergence, (int width, int height, dim3 block),         \
    (width, height, block))                                                                   \
  X(void, lab01::measure_divergence,                                                          \
    (int width, int height, dim3 block, unsigned long long* d_counts),                        \
    (width, height, block, d_counts))                                                         \
  X(int, lab01::choose_block_size, (int per_block, int per_sm, int blocks_per_sm),            \
    (per_block, per_sm, blocks_per_sm))
// clang-format on
