// The test side's own model of warps, written independently of the student's code: the
// warp and lane of a thread, and a count of divergent warps made by visiting every lane of
// every warp of the grid. Small grids only (it is a brute-force count).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "cml/guard_check.hpp"
#include "warp_sizing.cuh"

namespace lab01_test {

inline int threads_of(dim3 block) { return static_cast<int>(block.x * block.y * block.z); }

/// "16x16x1": a block shape as messages print it.
inline std::string shape(dim3 block) {
  std::ostringstream out;
  out << block.x << "x" << block.y << "x" << block.z;
  return out.str();
}

/// The thread with linear index t of `block`, as "(x,y,z)".
inline std::string thread_at(int t, dim3 block) {
  std::ostringstream out;
  const int bx = static_cast<int>(block.x), by = static_cast<int>(block.y);
  out << "(" << t % bx << "," << (t / bx) % by << "," << t / (bx * by) << ")";
  return out.str();
}

/// The thread's warp and lane: linear index x fastest, then y, then z, cut every 32.
inline lab01::WarpLane reference_warp_lane(dim3 thread, dim3 block) {
  const long long t = thread.x + static_cast<long long>(block.x) *
                                     (thread.y + static_cast<long long>(block.y) * thread.z);
  return {static_cast<int>(t / 32), static_cast<int>(t % 32)};
}

/// Counts blocks, warps and divergent warps by visiting every lane of the grid.
inline lab01::WarpCount count_by_hand(int width, int height, dim3 block) {
  const int bx = static_cast<int>(block.x), by = static_cast<int>(block.y);
  const int threads = bx * by;
  const int cols = (width + bx - 1) / bx, rows = (height + by - 1) / by;
  lab01::WarpCount count;
  for (int row = 0; row < rows; ++row) {
    for (int col = 0; col < cols; ++col) {
      ++count.blocks;
      for (int first = 0; first < threads; first += 32) {
        ++count.warps;
        int in = 0, lanes = 0;
        for (int t = first; t < first + 32 && t < threads; ++t, ++lanes) {
          const int x = col * bx + t % bx;
          const int y = row * by + t / bx;
          if (x < width && y < height) ++in;
        }
        if (in > 0 && in < lanes) ++count.divergent;
      }
    }
  }
  return count;
}

/// "blocks 130, warps 1040, divergent 75".
inline std::string describe(const lab01::WarpCount& c) {
  std::ostringstream out;
  out << "blocks " << c.blocks << ", warps " << c.warps << ", divergent " << c.divergent;
  return out.str();
}

inline bool same(const lab01::WarpCount& a, const lab01::WarpCount& b) {
  return a.blocks == b.blocks && a.warps == b.warps && a.divergent == b.divergent;
}

/// lab01::warp_lane for every thread of `block` against reference_warp_lane: empty when all
/// agree, else what the first wrong thread got and should have got (`facts`, e.g. the seed,
/// follows the block's shape).
inline std::string wrong_warp_lane(dim3 block, const std::string& facts = "") {
  for (unsigned z = 0; z < block.z; ++z)
    for (unsigned y = 0; y < block.y; ++y)
      for (unsigned x = 0; x < block.x; ++x) {
        const auto want = reference_warp_lane(dim3(x, y, z), block);
        const auto got = lab01::warp_lane(dim3(x, y, z), block);
        if (got.warp != want.warp || got.lane != want.lane) {
          std::ostringstream out;
          out << "thread (" << x << "," << y << "," << z << ") of a " << shape(block) << " block"
              << facts << ": expected warp " << want.warp << ", lane " << want.lane << "; got warp "
              << got.warp << ", lane " << got.lane;
          return out.str();
        }
      }
  return {};
}

/// What lab01::record_warp_lanes wrote for one block: each thread's warp and lane, and the
/// failure for a store outside the two arrays (ok when there was none).
struct Recorded {
  std::vector<int> warp;
  std::vector<int> lane;
  cml::CompareResult guards;
};

/// Runs lab01::record_warp_lanes on one block into poisoned arrays inside guard zones.
inline Recorded record(dim3 block, std::uint64_t seed) {
  const int n = threads_of(block);
  cml::DeviceBuffer<int> d_warp(n, 1024), d_lane(n, 1024);
  d_warp.poison();
  d_lane.poison();
  lab01::record_warp_lanes(block, d_warp.data(), d_lane.data());
  Recorded r{d_warp.download(), d_lane.download(), {}};
  r.guards =
      cml::guard_failure("the warp/lane arrays", d_warp.guard_report() + d_lane.guard_report(),
                         shape(block) + " block", seed,
                         "thread t writes index t, and t < " + std::to_string(n) + ".");
  return r;
}

/// Where measure_divergence may store: its two counters.
inline const char* kCountersGuardHint = "only counts[0] and counts[1] are the kernel's to add to.";

inline const char* kPredictHint =
    "a warp diverges only when its lanes disagree: some pixels inside the image and some "
    "outside. Warps wholly outside (below the image) do not diverge. Remember a warp is 32 "
    "consecutive linear thread indices, so in a 16-wide block it spans two rows.";

}  // namespace lab01_test
