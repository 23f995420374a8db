// Lab 03: shared memory, static and dynamic, written from the interface in shared_memory.cuh.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "cml/check.hpp"
#include "shared_memory.cuh"

namespace lab03 {
namespace {

// Part 1. One block reverses the array in place. Every thread first copies its element into
// shared memory; only after the barrier may a thread read an element another thread wrote.
__global__ void reverse_static_kernel(int* data, int n) {
  __shared__ int staged_static[kStaticReverseSize];
  const int me = threadIdx.x;
  staged_static[me] = data[me];
  __syncthreads();  // another thread wrote the element this one reads
  data[me] = staged_static[(n - 1) - me];
}

// The same with the array's size fixed at launch time; a thread handles every blockDim.x-th
// element, so n may exceed the number of threads.
__global__ void reverse_dynamic_kernel(int* data, int n) {
  extern __shared__ int staged_dynamic[];
  const int step = blockDim.x;
  for (int k = threadIdx.x; k < n; k += step) staged_dynamic[k] = data[k];
  __syncthreads();
  for (int k = threadIdx.x; k < n; k += step) data[k] = staged_dynamic[(n - 1) - k];
}

// Part 2. Three arrays of different types share one dynamic buffer. Every extern __shared__
// array of a kernel starts at the same address, so there is one buffer and the kernel points
// into it at the byte offsets the host computed.
__global__ void carve_reverse_kernel(std::uint8_t* bytes, int n_bytes, float* floats,
                                     int n_floats, double* doubles, int n_doubles,
                                     unsigned float_offset, unsigned double_offset) {
  extern __shared__ __align__(16) unsigned char raw[];
  std::uint8_t* const sb = raw;
  float* const sf = reinterpret_cast<float*>(raw + float_offset);
  double* const sd = reinterpret_cast<double*>(raw + double_offset);
  const int step = blockDim.x;
  for (int k = threadIdx.x; k < n_bytes; k += step) sb[k] = bytes[k];
  for (int k = threadIdx.x; k < n_floats; k += step) sf[k] = floats[k];
  for (int k = threadIdx.x; k < n_doubles; k += step) sd[k] = doubles[k];
  __syncthreads();
  for (int k = threadIdx.x; k < n_bytes; k += step) bytes[k] = sb[(n_bytes - 1) - k];
  for (int k = threadIdx.x; k < n_floats; k += step) floats[k] = sf[(n_floats - 1) - k];
  for (int k = threadIdx.x; k < n_doubles; k += step) doubles[k] = sd[(n_doubles - 1) - k];
}

// Part 3. Block b produces outputs [b·tile, b·tile + count). It stages the inputs those
// outputs need, count + 2·radius of them with indices clamped to the array, then every
// output reads its 2·radius + 1 neighbours from shared memory instead of global memory.
__global__ void blur_shared_kernel(const float* __restrict__ in, float* __restrict__ out,
                                   int n, int radius, int tile) {
  extern __shared__ float halo_tile[];
  const long long first = static_cast<long long>(tile) * blockIdx.x;
  const long long left = n - first;
  const int outputs = left < tile ? static_cast<int>(left) : tile;
  const int staged = outputs + 2 * radius;
  for (int k = threadIdx.x; k < staged; k += blockDim.x) {
    long long from = first - radius + k;
    from = from < 0 ? 0 : (from > n - 1 ? n - 1 : from);
    halo_tile[k] = in[from];
  }
  __syncthreads();
  const float weight = 1.0f / static_cast<float>(2 * radius + 1);
  for (int k = threadIdx.x; k < outputs; k += blockDim.x) {
    float total = 0.0f;
    for (int d = 0; d <= 2 * radius; ++d) total += halo_tile[k + d];
    out[first + k] = total * weight;
  }
}

// Raising a kernel's dynamic shared memory limit (the opt-in above 48 KB).
constexpr cudaFuncAttribute kDynamicLimit = cudaFuncAttributeMaxDynamicSharedMemorySize;

// How long the last blur_shared() call took to enqueue its work, in microseconds.
double last_enqueue_us = 0.0;

std::size_t opt_in_limit(const SharedLimits& limits) {
  return std::max(limits.per_block, limits.per_block_optin);
}

}  // namespace

void reverse_static(int* d_data, int n) {
  if (n < 1 || n > kStaticReverseSize) {
    throw std::invalid_argument("reverse_static: n = " + std::to_string(n) + " is outside 1.." +
                                std::to_string(kStaticReverseSize));
  }
  reverse_static_kernel<<<dim3(1), dim3(n)>>>(d_data, n);
  CUDA_CHECK_LAUNCH();
}

void reverse_dynamic(int* d_data, int n) {
  const SharedLimits limits = current_shared_limits();
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(int);
  if (n < 1 || bytes > opt_in_limit(limits)) {
    throw std::invalid_argument("reverse_dynamic: n = " + std::to_string(n) + " ints (" +
                                std::to_string(bytes) + " bytes) is outside 1 int.." +
                                std::to_string(opt_in_limit(limits)) + " bytes on this GPU");
  }
  if (limits.per_block < bytes) {
    const int wanted = static_cast<int>(bytes);
    const cudaError_t opted = cudaFuncSetAttribute(reverse_dynamic_kernel, kDynamicLimit, wanted);
    CUDA_CHECK(opted);
  }
  const int threads = n < kReverseThreads ? n : kReverseThreads;
  reverse_dynamic_kernel<<<dim3(1), dim3(threads), bytes>>>(d_data, n);
  CUDA_CHECK_LAUNCH();
}

SharedLayout plan_shared_layout(const std::vector<SharedArray>& arrays) {
  for (const SharedArray& a : arrays) {
    if (a.align == 0 || (a.align & (a.align - 1)) != 0) {
      throw std::invalid_argument("plan_shared_layout: alignment " + std::to_string(a.align) +
                                  " is not a power of two");
    }
  }
  SharedLayout plan;
  std::size_t cursor = 0;
  for (const SharedArray& a : arrays) {
    cursor = (cursor + (a.align - 1)) & ~(a.align - 1);  // align is a power of two
    plan.offsets.push_back(cursor);
    cursor += a.count * a.elem_bytes;
  }
  plan.total_bytes = cursor;
  return plan;
}

void carve_reverse(std::uint8_t* d_bytes, int n_bytes, float* d_floats, int n_floats,
                   double* d_doubles, int n_doubles) {
  if (n_bytes < 0 || n_floats < 0 || n_doubles < 0) {
    throw std::invalid_argument("carve_reverse: counts must not be negative");
  }
  const SharedLayout layout = plan_shared_layout({array_of<std::uint8_t>(n_bytes),
                                                  array_of<float>(n_floats),
                                                  array_of<double>(n_doubles)});
  if (layout.total_bytes > kDefaultSharedPerBlock) {
    throw std::invalid_argument("carve_reverse: the three arrays need " +
                                std::to_string(layout.total_bytes) +
                                " bytes, more than the default 48 KB per block");
  }
  const int most = std::max({n_bytes, n_floats, n_doubles});
  if (most == 0) return;
  const int threads = most < kReverseThreads ? most : kReverseThreads;
  carve_reverse_kernel<<<dim3(1), dim3(threads), layout.total_bytes>>>(
      d_bytes, n_bytes, d_floats, n_floats, d_doubles, n_doubles,
      static_cast<unsigned>(layout.offsets[1]), static_cast<unsigned>(layout.offsets[2]));
  CUDA_CHECK_LAUNCH();
}

BlurPlan plan_blur_tile(const SharedLimits& limits, int radius, int blocks_per_sm) {
  if (radius < 0 || blocks_per_sm < 1) {
    throw std::invalid_argument("plan_blur_tile: radius = " + std::to_string(radius) +
                                ", blocks_per_sm = " + std::to_string(blocks_per_sm) +
                                " (need radius >= 0 and blocks_per_sm >= 1)");
  }
  const std::size_t share = limits.per_sm / static_cast<std::size_t>(blocks_per_sm);
  if (share <= limits.reserved_per_block) return BlurPlan{};
  std::size_t budget = share - limits.reserved_per_block;
  if (opt_in_limit(limits) < budget) budget = opt_in_limit(limits);
  const std::size_t fit = budget / sizeof(float);
  const std::size_t edge = static_cast<std::size_t>(radius) * 2;
  if (fit < edge + kBlurThreads) return BlurPlan{};
  BlurPlan plan;
  plan.tile = static_cast<int>(((fit - edge) / kBlurThreads) * kBlurThreads);
  plan.shared_bytes = sizeof(float) * (edge + static_cast<std::size_t>(plan.tile));
  plan.needs_optin = limits.per_block < plan.shared_bytes;
  return plan;
}

void blur_shared(const float* d_in, float* d_out, int n, int radius, int tile) {
  if (n < 0 || radius < 0 || radius > kMaxBlurRadius || tile < 1) {
    throw std::invalid_argument("blur_shared: n = " + std::to_string(n) + ", radius = " +
                                std::to_string(radius) + ", tile = " + std::to_string(tile) +
                                " (need n >= 0, 0 <= radius <= " +
                                std::to_string(kMaxBlurRadius) + ", tile >= 1)");
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
  const auto started = std::chrono::steady_clock::now();
  if (limits.per_block < bytes) {
    const int wanted = static_cast<int>(bytes);
    const cudaError_t opted = cudaFuncSetAttribute(blur_shared_kernel, kDynamicLimit, wanted);
    CUDA_CHECK(opted);
  }
  const long long tiles = (static_cast<long long>(n) - 1) / tile + 1;
  blur_shared_kernel<<<dim3(static_cast<unsigned>(tiles)), dim3(kBlurThreads), bytes>>>(
      d_in, d_out, n, radius, tile);
  CUDA_CHECK_LAUNCH();
  last_enqueue_us = std::chrono::duration<double, std::micro>(
                        std::chrono::steady_clock::now() - started).count();
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
