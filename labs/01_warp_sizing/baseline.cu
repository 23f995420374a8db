// Lab 01's given code: the memory-bound kernel of the speed part. It reads one float and
// writes one float per thread and does almost no arithmetic, so its speed is set by how many
// memory requests the GPU keeps in flight, and that depends on the block size it is launched
// with: the bench times it at kBadBlockSize and at the size choose_block_size() picks.
#include <stdexcept>
#include <string>

#include "cml/check.hpp"
#include "warp_sizing.cuh"

namespace lab01 {
namespace {

__global__ void scale_kernel(const float* __restrict__ x, float* __restrict__ y, int n, float a) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}

}  // namespace

void scale(const float* d_x, float* d_y, int n, float a, int threads_per_block) {
  if (threads_per_block < 1 || threads_per_block > 1024) {
    throw std::invalid_argument("scale: threads_per_block = " + std::to_string(threads_per_block) +
                                " is outside 1..1024");
  }
  if (n <= 0) return;
  const unsigned blocks = static_cast<unsigned>((n + threads_per_block - 1LL) / threads_per_block);
  scale_kernel<<<blocks, threads_per_block>>>(d_x, d_y, n, a);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab01
