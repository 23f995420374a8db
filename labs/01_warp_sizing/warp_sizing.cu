// Lab 01: warp sizing. Fill in every TODO(lab01); the handout handouts/01_warp_sizing.md
// explains the ideas, and `python3 -m grader check 01` tells you how you are doing.
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
  // TODO(lab01): Return the thread's linear index in its block: x fastest, then y, then z.
  return 0;
}

// One thread per entry of d_warp and d_lane, indexed by the thread's linear index.
__global__ void record_kernel(int* __restrict__ d_warp, int* __restrict__ d_lane) {
  // TODO(lab01): Write this thread's warp and lane, computed from threadIdx and blockDim.
}

// One thread per pixel; a warp's lane 0 reports for the whole warp after a vote on the
// boundary check.
__global__ void count_divergent_kernel(int width, int height,
                                       unsigned long long* __restrict__ d_counts) {
  // TODO(lab01): Vote on the boundary check with __ballot_sync; lane 0 counts the warp, and whether it diverged.
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
  // TODO(lab01): Walk the warps of one block and count those whose lanes disagree on the check.
  return 0;
}

}  // namespace detail

int warps_per_block(int threads_per_block) {
  // TODO(lab01): Return how many 32-thread warps hold threads_per_block threads (round up).
  return 0;
}

int idle_lanes(int threads_per_block) {
  // TODO(lab01): Return the lanes of the last warp that get no thread.
  return 0;
}

WarpLane warp_lane(dim3 thread, dim3 block) {
  // TODO(lab01): Split the thread's linear index into a warp number and a lane.
  return {};
}

void record_warp_lanes(dim3 block, int* d_warp, int* d_lane) {
  // TODO(lab01): Launch record_kernel as one block of shape `block`.
}

WarpCount predict_divergence(int width, int height, dim3 block) {
  detail::require_image_grid(width, height, block, "predict_divergence");
  // TODO(lab01): Count the grid's blocks, its warps, and the warps whose lanes disagree on the check.
  return {};
}

void measure_divergence(int width, int height, dim3 block, unsigned long long* d_counts) {
  detail::require_image_grid(width, height, block, "measure_divergence");
  CUDA_CHECK(cudaMemsetAsync(d_counts, 0, 2 * sizeof(unsigned long long)));
  // TODO(lab01): Launch count_divergent_kernel with enough `block`-shaped blocks to cover every pixel.
}

int choose_block_size(int max_threads_per_block, int max_threads_per_sm, int max_blocks_per_sm) {
  // TODO(lab01): Return a whole-warp block size within the block limit whose blocks fill an SM's thread slots.
  return 0;
}

}  // namespace lab01
