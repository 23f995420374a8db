// The test side's own model of warps, written independently of the student's code: the
// warp and lane of a thread, and a count of divergent warps made by visiting every lane of
// every warp of the grid. Small grids only (it is a brute-force count).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

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
          out << "thread (" << x << "," << y << "," << z << ") of a " << shape(block)
              << " block" << facts << ": expected warp " << want.warp << ", lane " << want.lane
              << "; got warp " << got.warp << ", lane " << got.lane;
          return out.str();
        }
      }
  return {};
}

/// A store of record_warp_lanes outside its arrays: `report` is the warp and lane arrays'
/// guard_report()s together; success when it is empty.
inline cml::CompareResult record_guards(const std::string& report, dim3 block,
                                        std::uint64_t seed) {
  return cml::guard_failure("the warp/lane arrays", report, shape(block) + " block", seed,
                            "thread t writes index t, and t < " +
                                std::to_string(threads_of(block)) + ".");
}

/// Where measure_divergence may store: its two counters.
inline const char* kCountersGuardHint = "only counts[0] and counts[1] are the kernel's to add to.";

inline const char* kPredictHint =
    "a warp diverges only when its lanes disagree: some pixels inside the image and some "
    "outside. Warps wholly outside (below the image) do not diverge. Remember a warp is 32 "
    "consecutive linear thread indices, so in a 16-wide block it spans two rows.";

}  // namespace lab01_test
