// Lab 01: warp sizing, written from the interface in warp_sizing.cuh.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "cml/check.hpp"
#include "warp_sizing.cuh"

namespace lab01 {
namespace detail {

// x fastest, then y, then z; shared by the host model and the kernels.
__host__ __device__ int linear_index(dim3 thread, dim3 block) {
  const unsigned plane = block.x * block.y;
  return static_cast<int>(thread.z * plane + thread.y * block.x + thread.x);
}

__global__ void record_kernel(int *__restrict__ d_warp,
                              int *__restrict__ d_lane) {
  const int me = linear_index(threadIdx, blockDim);
  if (me == 0)
    printf("record_kernel: %u x %u x %u block\n", blockDim.x, blockDim.y,
           blockDim.z);
  d_lane[me] = me % kWarpSize;
  d_warp[me] = me / kWarpSize;
}

__global__ void
count_divergent_kernel(int width, int height,
                       unsigned long long *__restrict__ d_counts) {
  const unsigned present =
      __activemask(); // before any branch: the lanes that exist
  const long long px =
      static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long py =
      static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y;
  const unsigned agree = __ballot_sync(present, px < width && py < height);
  if (linear_index(threadIdx, blockDim) % kWarpSize != 0)
    return;
  atomicAdd(d_counts + kWarpsSeen, 1ull);
  if (agree != 0u && agree != present)
    atomicAdd(d_counts + kDivergentSeen, 1ull);
}

int block_threads(dim3 block) {
  return static_cast<int>(block.x * block.y * block.z);
}

void require_image_grid(int width, int height, dim3 block, const char *who) {
  const long long threads = static_cast<long long>(block.x) * block.y * block.z;
  if (width < 1 || height < 1 || block.z != 1 || threads < 1 ||
      threads > 1024) {
    throw std::invalid_argument(
        std::string(who) +
        ": need width, height >= 1 and a 2-D block (z = 1) of 1..1024 "
        "threads; got " +
        std::to_string(width) + "x" + std::to_string(height) + " with a " +
        std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
        std::to_string(block.z) + " block");
  }
}

// Warps of one block whose lanes disagree when only x < valid_x, y < valid_y
// pass.
std::uint64_t divergent_in_block(dim3 block, int valid_x, int valid_y) {
  const int total = block_threads(block);
  const int bx = static_cast<int>(block.x);
  std::uint64_t mixed = 0;
  for (int first = 0; first < total; first += kWarpSize) {
    bool some_in = false, some_out = false;
    for (int t = first; t < total && t < first + kWarpSize; ++t) {
      const bool in = t % bx < valid_x && t / bx < valid_y;
      some_in = some_in || in;
      some_out = some_out || !in;
    }
    if (some_in && some_out)
      ++mixed;
  }
  return mixed;
}

} // namespace detail

int warps_per_block(int threads_per_block) {
  return threads_per_block > 0 ? (threads_per_block - 1) / kWarpSize + 1 : 0;
}

int idle_lanes(int threads_per_block) {
  if (threads_per_block < 1)
    return 0;
  const int used_in_last = threads_per_block % kWarpSize;
  return used_in_last == 0 ? 0 : kWarpSize - used_in_last;
}

WarpLane warp_lane(dim3 thread, dim3 block) {
  const int linear = detail::linear_index(thread, block);
  WarpLane where;
  where.warp = linear / kWarpSize;
  where.lane = linear % kWarpSize;
  return where;
}

void record_warp_lanes(dim3 block, int *d_warp, int *d_lane) {
  detail::record_kernel<<<dim3(1), block>>>(d_warp, d_lane);
  CUDA_CHECK_LAUNCH();
}

WarpCount predict_divergence(int width, int height, dim3 block) {
  detail::require_image_grid(width, height, block, "predict_divergence");
  const std::uint64_t w = static_cast<std::uint64_t>(width);
  const std::uint64_t h = static_cast<std::uint64_t>(height);
  const int part_x =
      static_cast<int>(w % block.x); // valid columns of the right edge block
  const int part_y =
      static_cast<int>(h % block.y); // valid rows of the bottom edge block
  const std::uint64_t inner_x = w / block.x, inner_y = h / block.y;
  WarpCount tally;
  tally.blocks = (inner_x + (part_x ? 1 : 0)) * (inner_y + (part_y ? 1 : 0));
  tally.warps =
      tally.blocks *
      static_cast<std::uint64_t>(warps_per_block(detail::block_threads(block)));
  const int full_x = static_cast<int>(block.x),
            full_y = static_cast<int>(block.y);
  if (part_x)
    tally.divergent +=
        inner_y * detail::divergent_in_block(block, part_x, full_y);
  if (part_y)
    tally.divergent +=
        inner_x * detail::divergent_in_block(block, full_x, part_y);
  if (part_x && part_y)
    tally.divergent += detail::divergent_in_block(block, part_x, part_y);
  return tally;
}

void measure_divergence(int width, int height, dim3 block,
                        unsigned long long *d_counts) {
  detail::require_image_grid(width, height, block, "measure_divergence");
  CUDA_CHECK(cudaMemsetAsync(d_counts, 0, 2 * sizeof(unsigned long long)));
  const unsigned across =
      (static_cast<unsigned>(width) + block.x - 1) / block.x;
  const unsigned down = (static_cast<unsigned>(height) + block.y - 1) / block.y;
  detail::count_divergent_kernel<<<dim3(across, down), block>>>(width, height,
                                                                d_counts);
  CUDA_CHECK_LAUNCH();
}

int choose_block_size(int max_threads_per_block, int max_threads_per_sm,
                      int max_blocks_per_sm) {
  const auto fits = [&](int t) {
    return t <= max_threads_per_block && max_threads_per_sm % t == 0 &&
           max_threads_per_sm / t <= max_blocks_per_sm;
  };
  // 256 threads when it fits (several blocks per SM to swap), else the nearest
  // size below, else the nearest above.
  for (int t = 8 * kWarpSize; t >= kWarpSize; t -= kWarpSize) {
    if (fits(t))
      return t;
  }
  for (int t = 9 * kWarpSize; t <= max_threads_per_block; t += kWarpSize) {
    if (fits(t))
      return t;
  }
  return 0;
}

} // namespace lab01
