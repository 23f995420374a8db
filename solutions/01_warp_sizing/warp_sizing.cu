// >>>
// Lab 01 reference solution. The student skeleton labs/01_warp_sizing/warp_sizing.cu is
// generated from this file: never edit the skeleton by hand.
// === stub
// // Lab 01: warp sizing. Fill in every TODO(lab01); the handout handouts/01_warp_sizing.md
// // explains the ideas, and `python3 -m grader check 01` tells you how you are doing.
// <<<
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "cml/check.hpp"
#include "warp_sizing.cuh"

namespace lab01 {
// Helpers of this file, not part of the interface. (A named namespace rather than an
// anonymous one, so the compiler stays quiet about helpers a TODO has not used yet.)
namespace detail {

// The thread's position when the block is read x fastest, then y, then z. Used by the host
// functions and by the kernels alike, so the CPU and the GPU agree by construction.
__host__ __device__ int linear_index(dim3 thread, dim3 block) {
  // >>> TODO(lab01): Return the thread's linear index in its block: x fastest, then y, then z.
  return static_cast<int>(thread.x + block.x * (thread.y + block.y * thread.z));
  // === stub
  // return 0;
  // <<<
}

// One thread per entry of d_warp and d_lane, indexed by the thread's linear index.
__global__ void record_kernel(int* __restrict__ d_warp, int* __restrict__ d_lane) {
  // >>> TODO(lab01): Write this thread's warp and lane, computed from threadIdx and blockDim.
  const int t = linear_index(threadIdx, blockDim);
  d_warp[t] = t / kWarpSize;
  d_lane[t] = t % kWarpSize;
  // <<<
}

// One thread per pixel; a warp's lane 0 reports for the whole warp after a vote on the
// boundary check.
__global__ void count_divergent_kernel(int width, int height,
                                       unsigned long long* __restrict__ d_counts) {
  // >>> TODO(lab01): Vote on the boundary check with __ballot_sync; lane 0 counts the warp, and whether it diverged.
  // Ask who is here before any branch: at this point every lane the warp has is active,
  // so `active` is exactly the lanes that hold a thread (fewer than 32 only in a block's
  // last warp when the block is not a whole number of warps).
  const unsigned active = __activemask();
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const bool inside = x < width && y < height;
  const unsigned votes = __ballot_sync(active, inside);
  if (linear_index(threadIdx, blockDim) % kWarpSize == 0) {
    atomicAdd(&d_counts[kWarpsSeen], 1ull);
    // Divergent: some active lanes passed the check and some did not.
    if (votes != 0u && votes != active) atomicAdd(&d_counts[kDivergentSeen], 1ull);
  }
  // <<<
}

int block_threads(dim3 block) { return static_cast<int>(block.x * block.y * block.z); }

void require_image_grid(int width, int height, dim3 block, const char* who) {
  const long long threads = static_cast<long long>(block.x) * block.y * block.z;
  if (width < 1 || height < 1 || block.z != 1 || threads < 1 || threads > 1024) {
    throw std::invalid_argument(std::string(who) +
                                ": need width, height >= 1 and a 2-D block (z = 1) of 1..1024 "
                                "threads; got " +
                                std::to_string(width) + "x" + std::to_string(height) + " with a " +
                                std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
                                std::to_string(block.z) + " block");
  }
}

// How many of the warps of one block diverge when only its threads with x < valid_x and
// y < valid_y pass the boundary check. Every block of the grid is one of at most four kinds
// (inside, right edge, bottom edge, corner), so the model counts one block of each kind.
std::uint64_t divergent_in_block(dim3 block, int valid_x, int valid_y) {
  // >>> TODO(lab01): Walk the warps of one block and count those whose lanes disagree on the check.
  const int threads = block_threads(block);
  std::uint64_t divergent = 0;
  for (int first = 0; first < threads; first += kWarpSize) {
    const int last = first + kWarpSize < threads ? first + kWarpSize : threads;
    int inside = 0;
    for (int t = first; t < last; ++t) {
      const int tx = t % static_cast<int>(block.x);
      const int ty = t / static_cast<int>(block.x);
      if (tx < valid_x && ty < valid_y) ++inside;
    }
    if (inside > 0 && inside < last - first) ++divergent;
  }
  return divergent;
  // === stub
  // return 0;
  // <<<
}

}  // namespace detail

int warps_per_block(int threads_per_block) {
  // >>> TODO(lab01): Return how many 32-thread warps hold threads_per_block threads (round up).
  if (threads_per_block <= 0) return 0;
  return (threads_per_block + kWarpSize - 1) / kWarpSize;
  // === stub
  // return 0;
  // <<<
}

int idle_lanes(int threads_per_block) {
  // >>> TODO(lab01): Return the lanes of the last warp that get no thread.
  if (threads_per_block <= 0) return 0;
  return warps_per_block(threads_per_block) * kWarpSize - threads_per_block;
  // === stub
  // return 0;
  // <<<
}

WarpLane warp_lane(dim3 thread, dim3 block) {
  // >>> TODO(lab01): Split the thread's linear index into a warp number and a lane.
  const int t = detail::linear_index(thread, block);
  return {t / kWarpSize, t % kWarpSize};
  // === stub
  // return {};
  // <<<
}

void record_warp_lanes(dim3 block, int* d_warp, int* d_lane) {
  // >>> TODO(lab01): Launch record_kernel as one block of shape `block`.
  detail::record_kernel<<<1, block>>>(d_warp, d_lane);
  CUDA_CHECK_LAUNCH();
  // <<<
}

WarpCount predict_divergence(int width, int height, dim3 block) {
  detail::require_image_grid(width, height, block, "predict_divergence");
  // >>> TODO(lab01): Count the grid's blocks, its warps, and the warps whose lanes disagree on the check.
  const std::uint64_t bx = block.x;
  const std::uint64_t by = block.y;
  // Full blocks along each axis, and the valid extent of the partial edge block (0: none).
  const std::uint64_t full_x = width / bx;
  const std::uint64_t full_y = height / by;
  const int edge_x = static_cast<int>(width % bx);
  const int edge_y = static_cast<int>(height % by);
  const std::uint64_t cols = full_x + (edge_x > 0 ? 1 : 0);
  const std::uint64_t rows = full_y + (edge_y > 0 ? 1 : 0);

  WarpCount count;
  count.blocks = cols * rows;
  count.warps = count.blocks * warps_per_block(detail::block_threads(block));
  // Blocks entirely inside the image have no divergent warps. The rest: the right edge
  // column, the bottom edge row and the corner block where both meet.
  if (edge_x > 0) {
    count.divergent += full_y * detail::divergent_in_block(block, edge_x, static_cast<int>(by));
  }
  if (edge_y > 0) {
    count.divergent += full_x * detail::divergent_in_block(block, static_cast<int>(bx), edge_y);
  }
  if (edge_x > 0 && edge_y > 0) {
    count.divergent += detail::divergent_in_block(block, edge_x, edge_y);
  }
  return count;
  // === stub
  // return {};
  // <<<
}

void measure_divergence(int width, int height, dim3 block, unsigned long long* d_counts) {
  detail::require_image_grid(width, height, block, "measure_divergence");
  CUDA_CHECK(cudaMemsetAsync(d_counts, 0, 2 * sizeof(unsigned long long)));
  // >>> TODO(lab01): Launch count_divergent_kernel with enough `block`-shaped blocks to cover every pixel.
  const dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
  detail::count_divergent_kernel<<<grid, block>>>(width, height, d_counts);
  CUDA_CHECK_LAUNCH();
  // <<<
}

int choose_block_size(int max_threads_per_block, int max_threads_per_sm, int max_blocks_per_sm) {
  // >>> TODO(lab01): Return a whole-warp block size within the block limit whose blocks fill an SM's thread slots.
  // Every valid size keeps all of an SM's thread slots busy; among them take the one
  // closest to 256 threads (a smaller one on a tie), which leaves the scheduler several
  // blocks per SM to swap in as others finish.
  int best = 0;
  for (int threads = kWarpSize; threads <= max_threads_per_block; threads += kWarpSize) {
    const bool fills_sm =
        max_threads_per_sm % threads == 0 && max_threads_per_sm / threads <= max_blocks_per_sm;
    if (!fills_sm) continue;
    if (best == 0 || std::abs(threads - 256) < std::abs(best - 256)) best = threads;
  }
  return best;
  // === stub
  // return 0;
  // <<<
}

}  // namespace lab01
