// Kernels whose only job is to be asked about: each is compiled with different launch bounds,
// register caps or shared memory, so the occupancy sweep meets many register counts and
// shared-memory sizes. They are never launched.
#pragma once

#include <string>
#include <vector>

namespace lab07_test {

struct SweepKernel {
  std::string name;
  const void* func = nullptr;
  bool dynamic_shared = false;  ///< opts in to the device's largest dynamic shared memory
};

std::vector<SweepKernel> sweep_kernels();

}  // namespace lab07_test
