// Kernels for the harness's own tests (harness_kernels.hpp).
#include "harness_kernels.hpp"

#include "cml/check.hpp"

namespace {

__global__ void copy_kernel(const float* in, float* out, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

namespace cml_test {

void copy_floats(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  const auto blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  copy_kernel<<<blocks, kThreads, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

void spin(long long cycles, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(cycles);
  CUDA_CHECK_LAUNCH();
}

}  // namespace cml_test
