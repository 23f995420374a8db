// Lab 02: coalescing, written from the interface in coalescing.cuh.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cml/check.hpp"
#include "coalescing.cuh"

namespace lab02 {
namespace {

// What the requests seen so far touch: the units (segment or sector numbers)
// and the byte ranges [begin, end) the active lanes asked for. Duplicates are
// removed in summarise().
struct Footprint {
  std::vector<std::uint64_t> units;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
};

void check_arguments(const WarpRequest& request, int unit_bytes) {
  if (unit_bytes <= 0 || (unit_bytes & (unit_bytes - 1)) != 0) {
    throw std::invalid_argument("unit_bytes = " + std::to_string(unit_bytes) +
                                " must be a positive power of two");
  }
  if (request.access_bytes <= 0) {
    throw std::invalid_argument(
        "access_bytes = " + std::to_string(request.access_bytes) +
        " must be positive");
  }
}

void add_request(const WarpRequest& request, int unit_bytes,
                 Footprint& footprint) {
  const std::uint64_t size = static_cast<std::uint64_t>(request.access_bytes);
  const std::uint64_t granule = static_cast<std::uint64_t>(unit_bytes);
  for (int l = 0; l < kWarpSize; ++l) {
    if ((request.active & (1u << l)) == 0u) continue;
    const std::uint64_t lo = request.address[l];
    const std::uint64_t hi = lo + size - 1;  // last byte this lane reads
    footprint.ranges.push_back({lo, hi + 1});
    for (std::uint64_t u = lo / granule; u <= hi / granule; ++u)
      footprint.units.push_back(u);
  }
}

Traffic summarise(Footprint& footprint, int unit_bytes) {
  Traffic traffic;
  std::vector<std::uint64_t>& seen = footprint.units;
  std::sort(seen.begin(), seen.end());
  const auto distinct = std::unique(seen.begin(), seen.end()) - seen.begin();
  traffic.transactions = static_cast<std::uint64_t>(distinct);
  traffic.bytes_moved =
      static_cast<std::uint64_t>(unit_bytes) * traffic.transactions;
  auto& spans = footprint.ranges;
  std::sort(spans.begin(), spans.end());
  std::uint64_t done_to = 0;  // every byte below this one is counted already
  for (const auto& span : spans) {
    const std::uint64_t from = span.first > done_to ? span.first : done_to;
    if (span.second > from) {
      traffic.bytes_used += span.second - from;
      done_to = span.second;
    }
  }
  return traffic;
}

}  // namespace

Traffic warp_traffic(const WarpRequest& request, int unit_bytes) {
  check_arguments(request, unit_bytes);
  Footprint footprint;
  add_request(request, unit_bytes, footprint);
  return summarise(footprint, unit_bytes);
}

Traffic cached_traffic(const std::vector<WarpRequest>& requests,
                       int unit_bytes) {
  Footprint all;  // one footprint for every request: a unit is moved once
  for (const auto& one : requests) {
    check_arguments(one, unit_bytes);
    add_request(one, unit_bytes, all);
  }
  return summarise(all, unit_bytes);
}

// Runs on the host (the tests evaluate it warp by warp) and on the device (the
// kernel below).
__host__ __device__ Element coalesced_element(int block_row, int block_col,
                                              int thread) {
  const int r = thread / kTile,
            c = thread % kTile;  // consecutive threads: consecutive columns
  return Element{kTile * block_row + r, kTile * block_col + c};
}

namespace {

__global__ void scale_coalesced_kernel(const float* __restrict__ in,
                                       float* __restrict__ out, int rows,
                                       int cols, float factor) {
  const Element e = coalesced_element(blockIdx.y, blockIdx.x, threadIdx.x);
  if (e.row < 0 || e.col < 0 || e.row >= rows || e.col >= cols) return;
  const std::size_t at = static_cast<std::size_t>(e.row) * cols + e.col;
  out[at] = factor * in[at];
}

}  // namespace

void scale_coalesced(const float* d_in, float* d_out, int rows, int cols,
                     float factor) {
  if (rows < 0 || cols < 0) {
    throw std::invalid_argument("scale_coalesced: negative size " +
                                std::to_string(rows) + "x" +
                                std::to_string(cols));
  }
  if (rows == 0 || cols == 0) return;
  // The launch shape is part of the interface: the tests evaluate
  // coalesced_element() over exactly this grid on the host.
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  scale_coalesced_kernel<<<grid, kBlockThreads>>>(d_in, d_out, rows, cols,
                                                  factor);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lab02
