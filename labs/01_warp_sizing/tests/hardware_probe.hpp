// What the hardware says about warps, asked by a kernel the grader owns: for each thread of a
// block, the lane it really runs in (%laneid), the lanes __activemask() reports running with
// it, and which warp it shares (the linear index of its warp's first lane, passed around with
// __shfl_sync). Then the check of the student's recorded warps and lanes against it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/compare.hpp"
#include "warp_model.hpp"
#include "warp_sizing.cuh"

namespace lab01_test {

/// Per thread t (linear index in the block): hardware lane, __activemask(), and the linear
/// index of the first thread of its warp. Defined in hardware_probe.cu.
struct HardwareWarps {
  std::vector<int> lane;
  std::vector<unsigned> active;
  std::vector<int> first;
};

/// Launches the probe as one block of shape `block` and returns what it saw.
HardwareWarps probe_hardware(dim3 block);

inline std::string hex(unsigned mask) {
  std::ostringstream out;
  out << "0x" << std::hex;
  out.width(8);
  out.fill('0');
  out << mask;
  return out.str();
}

/// Runs lab01::record_warp_lanes on one block and checks every thread's warp and lane
/// against the hardware: the lane must be the one the thread runs in, the warp must be the
/// block's warp (counted from 0) that holds it, and the lanes the student's formula puts in
/// one warp must be exactly those __activemask() reports running together.
inline cml::CompareResult check_record(dim3 block, std::uint64_t seed) {
  const int n = threads_of(block);
  const Recorded recorded = record(block, seed);
  if (!recorded.guards.ok) return recorded.guards;
  const std::vector<int>& warp = recorded.warp;
  const std::vector<int>& lane = recorded.lane;
  const HardwareWarps hw = probe_hardware(block);

  cml::CompareResult result;
  result.checked = static_cast<std::size_t>(n);
  std::ostringstream lines;
  // The hardware's warp number of each thread: warps ordered by their first thread.
  std::set<int> firsts(hw.first.begin(), hw.first.end());
  std::map<int, int> warp_of_first;
  for (int f : firsts) warp_of_first.emplace(f, static_cast<int>(warp_of_first.size()));
  // The lanes the student's formula puts in each warp, as a 32-bit mask.
  std::map<int, unsigned> formula_mask;
  for (int t = 0; t < n; ++t) {
    if (lane[t] >= 0 && lane[t] < 32) formula_mask[warp[t]] |= 1u << lane[t];
  }
  for (int t = 0; t < n; ++t) {
    const int hw_warp = warp_of_first.at(hw.first[t]);
    const bool unwritten = cml::is_poison(warp[t]) || cml::is_poison(lane[t]);
    const bool good = !unwritten && warp[t] == hw_warp && lane[t] == hw.lane[t] &&
                      formula_mask[warp[t]] == hw.active[t];
    if (good) continue;
    ++result.mismatches;
    if (unwritten) ++result.unwritten;
    if (result.mismatches > 5) continue;
    lines << "  thread " << thread_at(t, block) << " (linear " << t << "): ";
    if (unwritten) {
      lines << "never written; the hardware ran it in warp " << hw_warp << ", lane " << hw.lane[t]
            << "\n";
    } else {
      lines << "recorded warp " << warp[t] << ", lane " << lane[t] << "; the hardware ran it "
            << "in warp " << hw_warp << ", lane " << hw.lane[t]
            << ", where __activemask() = " << hex(hw.active[t]) << " (your warp " << warp[t]
            << " has lanes " << hex(formula_mask[warp[t]]) << ")\n";
    }
  }
  result.ok = result.mismatches == 0;
  if (!result.ok) {
    std::ostringstream out;
    out << result.mismatches << " of " << n << " threads of a " << shape(block)
        << " block disagree with the hardware";
    if (result.unwritten > 0) out << " (" << result.unwritten << " never written)";
    out << " (seed " << seed << "):\n" << lines.str();
    if (result.mismatches > 5) out << "  ... and " << result.mismatches - 5 << " more\n";
    out << "Hint: number the threads x fastest, then y, then z (t = x + X*(y + Y*z) for a "
           "block of X*Y*Z); warp = t / 32, lane = t % 32; thread t writes index t.\n";
    result.message = out.str();
  }
  return result;
}

}  // namespace lab01_test
