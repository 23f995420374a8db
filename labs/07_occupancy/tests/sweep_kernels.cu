// The occupancy sweep's kernels. A register-hungry body keeps kLive values alive across
// several rounds; the compiler gives it as many registers as it may (launch bounds and
// __maxnreg__ cap that number, spilling the rest), so each variant reports a different numRegs.
#include "sweep_kernels.hpp"

#include "chase.cuh"

namespace lab07_test {
namespace {

template <int kLive>
__device__ __forceinline__ void hungry(const float* __restrict__ in, float* __restrict__ out,
                                       int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v[kLive];
#pragma unroll
  for (int k = 0; k < kLive; ++k) v[k] = in[(i + k * 97) % n];
  float s = 0.0f;
  // Two rounds keep every value live as long as four did (the same register counts on
  // CC 8.0 and 9.0) at half the compile time: ptxas's work grows with the unrolled body.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
#pragma unroll
    for (int k = 0; k < kLive; ++k) {
      v[k] = fmaf(v[k], v[(k + 1) % kLive], s);
      s += v[k];
    }
  }
  if (i < n) out[i] = s;
}

template <int kLive>
__global__ void free_kernel(const float* in, float* out, int n) {
  hungry<kLive>(in, out, n);
}

template <int kLive, int kThreads, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, lab07::arch_min_blocks(kThreads, kMinBlocks))
    bounded_kernel(const float* in, float* out, int n) {
  hungry<kLive>(in, out, n);
}

template <int kLive, int kRegs>
__global__ void __maxnreg__(kRegs) capped_kernel(const float* in, float* out, int n) {
  hungry<kLive>(in, out, n);
}

// Static shared memory plus a dynamic buffer (sized at launch).
__global__ void static_and_dynamic_kernel(float* out) {
  __shared__ float fixed[1024];
  extern __shared__ float dynamic[];
  fixed[threadIdx.x % 1024] = static_cast<float>(threadIdx.x);
  dynamic[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = fixed[(threadIdx.x + 1) % 1024] + dynamic[threadIdx.x];
}

__global__ void dynamic_only_kernel(float* out) {
  extern __shared__ float dynamic[];
  dynamic[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = dynamic[blockDim.x - 1 - threadIdx.x];
}

template <class F>
const void* fn(F* f) {
  return reinterpret_cast<const void*>(f);
}

}  // namespace

std::vector<SweepKernel> sweep_kernels() {
  return {
      {"no bounds, 4 live values", fn(free_kernel<4>)},
      {"no bounds, 16 live values", fn(free_kernel<16>)},
      {"no bounds, 32 live values", fn(free_kernel<32>)},
      {"no bounds, 64 live values", fn(free_kernel<64>)},
      {"no bounds, 128 live values", fn(free_kernel<128>)},
      {"no bounds, 200 live values", fn(free_kernel<200>)},
      {"__launch_bounds__(1024, 1)", fn(bounded_kernel<200, 1024, 1>)},
      {"__launch_bounds__(1024, 2)", fn(bounded_kernel<200, 1024, 2>)},
      {"__launch_bounds__(640, 1)", fn(bounded_kernel<200, 640, 1>)},
      {"__launch_bounds__(384, 2)", fn(bounded_kernel<200, 384, 2>)},
      {"__launch_bounds__(256, 5)", fn(bounded_kernel<200, 256, 5>)},
      {"__launch_bounds__(192, 8)", fn(bounded_kernel<200, 192, 8>)},
      {"__launch_bounds__(128, 12)", fn(bounded_kernel<200, 128, 12>)},
      {"__launch_bounds__(256, 3)", fn(bounded_kernel<200, 256, 3>)},
      {"__maxnreg__(33)", fn(capped_kernel<200, 33>)},
      {"__maxnreg__(37)", fn(capped_kernel<200, 37>)},
      {"__maxnreg__(57)", fn(capped_kernel<200, 57>)},
      {"__maxnreg__(129)", fn(capped_kernel<200, 129>)},
      {"__maxnreg__(200)", fn(capped_kernel<200, 200>)},
      {"static 4 KB + dynamic shared", fn(static_and_dynamic_kernel), true},
      {"dynamic shared only", fn(dynamic_only_kernel), true},
  };
}

}  // namespace lab07_test
