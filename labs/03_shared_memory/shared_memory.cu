// Lab 03: shared memory, static and dynamic. Fill in every TODO(lab03); the handout
// handouts/03_shared_memory.md explains the ideas, and `python3 -m grader check 03`
// tells you how you are doing.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "cml/check.hpp"
#include "shared_memory.cuh"

namespace lab03 {
namespace {

// Part 1. One block reverses the array in place. Every thread first copies its element into
// shared memory; only after the barrier may a thread read an element another thread wrote.
__global__ void reverse_static_kernel(int* data, int n) {
  // TODO(lab03): Stage data in a __shared__ int array of kStaticReverseSize, then write it back reversed.
}

// The same with the array's size fixed at launch time; a thread handles every blockDim.x-th
// element, so n may exceed the number of threads.
__global__ void reverse_dynamic_kernel(int* data, int n) {
  // TODO(lab03): Declare an extern __shared__ int array and reverse all n elements through it.
}

// Part 2. Three arrays of different types share one dynamic buffer. Every extern __shared__
// array of a kernel starts at the same address, so there is one buffer and the kernel points
// into it at the byte offsets the host computed.
__global__ void carve_reverse_kernel(std::uint8_t* bytes, int n_bytes, float* floats, int n_floats,
                                     double* doubles, int n_doubles, unsigned float_offset,
                                     unsigned double_offset) {
  // TODO(lab03): Point three typed arrays into one 16-byte-aligned extern buffer at the given offsets; stage all three, then write each back reversed.
}

// Part 3. Block b produces outputs [b·tile, b·tile + count). It stages the inputs those
// outputs need, count + 2·radius of them with indices clamped to the array, then every
// output reads its 2·radius + 1 neighbours from shared memory instead of global memory.
__global__ void blur_shared_kernel(const float* __restrict__ in, float* __restrict__ out, int n,
                                   int radius, int tile) {
  // TODO(lab03): Stage this block's tile plus its halo (clamped) in extern shared memory, then average 2*radius+1 neighbours per output.
}

std::size_t opt_in_limit(const SharedLimits& limits) {
  return std::max(limits.per_block, limits.per_block_optin);
}

}  // namespace

void reverse_static(int* d_data, int n) {
  if (n < 1 || n > kStaticReverseSize) {
    throw std::invalid_argument("reverse_static: n = " + std::to_string(n) + " is outside 1.." +
                                std::to_string(kStaticReverseSize));
  }
  // TODO(lab03): Launch reverse_static_kernel with one block of n threads.
}

void reverse_dynamic(int* d_data, int n) {
  const SharedLimits limits = current_shared_limits();
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(int);
  if (n < 1 || bytes > opt_in_limit(limits)) {
    throw std::invalid_argument("reverse_dynamic: n = " + std::to_string(n) + " ints (" +
                                std::to_string(bytes) + " bytes) is outside 1 int.." +
                                std::to_string(opt_in_limit(limits)) + " bytes on this GPU");
  }
  // TODO(lab03): Opt in when n ints exceed limits.per_block, then launch one block with n ints of dynamic shared memory.
}

SharedLayout plan_shared_layout(const std::vector<SharedArray>& arrays) {
  for (const SharedArray& a : arrays) {
    if (a.align == 0 || (a.align & (a.align - 1)) != 0) {
      throw std::invalid_argument("plan_shared_layout: alignment " + std::to_string(a.align) +
                                  " is not a power of two");
    }
  }
  // TODO(lab03): Place each array at the end of the previous one rounded up to its alignment; total = end of the last.
  return {};
}

void carve_reverse(std::uint8_t* d_bytes, int n_bytes, float* d_floats, int n_floats,
                   double* d_doubles, int n_doubles) {
  if (n_bytes < 0 || n_floats < 0 || n_doubles < 0) {
    throw std::invalid_argument("carve_reverse: counts must not be negative");
  }
  const SharedLayout layout = plan_shared_layout(
      {array_of<std::uint8_t>(n_bytes), array_of<float>(n_floats), array_of<double>(n_doubles)});
  if (layout.total_bytes > kDefaultSharedPerBlock) {
    throw std::invalid_argument("carve_reverse: the three arrays need " +
                                std::to_string(layout.total_bytes) +
                                " bytes, more than the default 48 KB per block");
  }
  const int most = std::max({n_bytes, n_floats, n_doubles});
  if (most == 0) return;
  // TODO(lab03): Launch carve_reverse_kernel: one block, up to kReverseThreads threads, layout.total_bytes of dynamic shared memory.
}

BlurPlan plan_blur_tile(const SharedLimits& limits, int radius, int blocks_per_sm) {
  if (radius < 0 || blocks_per_sm < 1) {
    throw std::invalid_argument("plan_blur_tile: radius = " + std::to_string(radius) +
                                ", blocks_per_sm = " + std::to_string(blocks_per_sm) +
                                " (need radius >= 0 and blocks_per_sm >= 1)");
  }
  // TODO(lab03): Take the smaller of the two budgets, then the largest multiple of kBlurThreads outputs whose tile plus halo fits.
  return {};
}

void blur_shared(const float* d_in, float* d_out, int n, int radius, int tile) {
  if (n < 0 || radius < 0 || radius > kMaxBlurRadius || tile < 1) {
    throw std::invalid_argument(
        "blur_shared: n = " + std::to_string(n) + ", radius = " + std::to_string(radius) +
        ", tile = " + std::to_string(tile) +
        " (need n >= 0, 0 <= radius <= " + std::to_string(kMaxBlurRadius) + ", tile >= 1)");
  }
  const SharedLimits limits = current_shared_limits();
  const std::size_t bytes = (static_cast<std::size_t>(tile) + 2 * radius) * sizeof(float);
  if (bytes > opt_in_limit(limits)) {
    throw std::invalid_argument("blur_shared: tile " + std::to_string(tile) + " with radius " +
                                std::to_string(radius) + " needs " + std::to_string(bytes) +
                                " bytes of shared memory; this GPU allows " +
                                std::to_string(opt_in_limit(limits)) + " per block");
  }
  if (n == 0) return;
  // TODO(lab03): Opt in above limits.per_block, then launch one kBlurThreads-thread block per tile with `bytes` of dynamic shared memory.
}

// Given: what the tests read through cudaFuncGetAttributes. Keep the kernel names as they are.
cudaFuncAttributes kernel_attributes(Kernel kernel) {
  cudaFuncAttributes attributes{};
  switch (kernel) {
    case Kernel::ReverseStatic:
      CUDA_CHECK(cudaFuncGetAttributes(&attributes, reverse_static_kernel));
      break;
    case Kernel::ReverseDynamic:
      CUDA_CHECK(cudaFuncGetAttributes(&attributes, reverse_dynamic_kernel));
      break;
    case Kernel::CarveReverse:
      CUDA_CHECK(cudaFuncGetAttributes(&attributes, carve_reverse_kernel));
      break;
    case Kernel::BlurShared:
      CUDA_CHECK(cudaFuncGetAttributes(&attributes, blur_shared_kernel));
      break;
  }
  return attributes;
}

}  // namespace lab03
