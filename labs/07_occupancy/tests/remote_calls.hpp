// The functions of occupancy.cu, for the grader's checker and runner (cml/remote.hpp): each
// call a test makes runs in the process that holds the student's code.
#pragma once

#include <tuple>

#include "occupancy.cuh"

namespace lab07 {
// The kernel of a LaunchConfig is the runner's: it crosses as a kernel identity, and the
// tests ask about it through cml/kernel_query.hpp.
inline auto remote_fields(LaunchConfig& config) {
  return std::tie(config.kernel, config.block_threads);
}
}  // namespace lab07

// clang-format off
#define CML_REMOTE_CALLS(X)                                                                   \
  X(lab07::Occupancy, lab07::textbook_occupancy,                                              \
    (const lab07::SmLimits& sm, const lab07::BlockUsage& block), (sm, block))                 \
  X(int, lab07::register_budget, (const lab07::SmLimits& sm, int block_threads),              \
    (sm, block_threads))                                                                      \
  X(lab07::DeviceLimits, lab07::device_limits, (const cudaDeviceProp& prop), (prop))          \
  X(lab07::Occupancy, lab07::exact_occupancy,                                                 \
    (const lab07::DeviceLimits& device, const lab07::BlockUsage& block), (device, block))     \
  X(void, lab07::chase_tuned,                                                                 \
    (const std::uint32_t* d_table, std::uint32_t* d_out, const lab07::ChaseParams& params),   \
    (d_table, d_out, params))                                                                 \
  X(lab07::LaunchConfig, lab07::chase_tuned_config, (), ())
// clang-format on
