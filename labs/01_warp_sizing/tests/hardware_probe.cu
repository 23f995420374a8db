// The grader's warp probe (see hardware_probe.hpp). Test code, not the student's: it reads
// the hardware lane register directly so the answer does not depend on any formula.
#include "cml/buffer.hpp"
#include "cml/check.hpp"
#include "hardware_probe.hpp"

namespace lab01_test {
namespace {

__global__ void probe_kernel(int* lane_out, unsigned* active_out, int* first_out) {
  // Read the active lanes first, before any branch can split the warp.
  const unsigned active = __activemask();
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  const int t =
      static_cast<int>(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int first = __shfl_sync(active, t, __ffs(active) - 1);
  lane_out[t] = static_cast<int>(lane);
  active_out[t] = active;
  first_out[t] = first;
}

}  // namespace

HardwareWarps probe_hardware(dim3 block) {
  const std::size_t n = static_cast<std::size_t>(block.x) * block.y * block.z;
  cml::DeviceBuffer<int> d_lane(n), d_first(n);
  cml::DeviceBuffer<unsigned> d_active(n);
  probe_kernel<<<1, block>>>(d_lane.data(), d_active.data(), d_first.data());
  CUDA_CHECK_LAUNCH();
  return {d_lane.download(), d_active.download(), d_first.download()};
}

}  // namespace lab01_test
