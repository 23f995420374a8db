// The functions of shared_memory.cu, for the grader's checker and runner (cml/remote.hpp): each
// call a test makes runs in the process that holds the student's code.
#pragma once

#include <tuple>

#include "shared_memory.cuh"

namespace lab03 {
// SharedLayout holds a vector: its fields cross one by one.
inline auto remote_fields(SharedLayout& layout) {
  return std::tie(layout.offsets, layout.total_bytes);
}
}  // namespace lab03

// clang-format off
#define CML_REMOTE_CALLS(X)                                                                   \
  X(void, lab03::reverse_static, (int* d_data, int n), (d_data, n))                           \
  X(void, lab03::reverse_dynamic, (int* d_data, int n), (d_data, n))                          \
  X(lab03::SharedLayout, lab03::plan_shared_layout,                                           \
    (const std::vector<lab03::SharedArray>& arrays), (arrays))                                \
  X(void, lab03::carve_reverse,                                                               \
    (std::uint8_t* d_bytes, int n_bytes, float* d_floats, int n_floats, double* d_doubles,    \
     int n_doubles),                                                                          \
    (d_bytes, n_bytes, d_floats, n_floats, d_doubles, n_doubles))                             \
  X(lab03::BlurPlan, lab03::plan_blur_tile,                                                   \
    (const lab03::SharedLimits& limits, int radius, int blocks_per_sm),                       \
    (limits, radius, blocks_per_sm))                                                          \
  X(void, lab03::blur_shared, (const float* d_in, float* d_out, int n, int radius, int tile), \
    (d_in, d_out, n, radius, tile))                                                           \
  X(cudaFuncAttributes, lab03::kernel_attributes, (lab03::Kernel kernel), (kernel))
// clang-format on
