// Runs a chase launch on the GPU and checks every word it writes against the CPU model:
// a fresh table from the run's seed, a poisoned output with guard zones, and a report that
// names the warp, the lane, the sizes and the seed.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/compare.hpp"
#include "cml/guard_check.hpp"
#include "cml/random.hpp"
#include "occupancy.cuh"

namespace lab07_test {

using Chase = std::function<void(const std::uint32_t*, std::uint32_t*, const lab07::ChaseParams&)>;

inline std::vector<int> as_ints(const std::vector<std::uint32_t>& words) {
  std::vector<int> out(words.size());
  if (!words.empty()) std::memcpy(out.data(), words.data(), words.size() * sizeof(int));
  return out;
}

/// Runs `chase` over `warps` chains of `rounds` rounds in a table of 2^lines_log2 lines.
inline cml::CompareResult check_chase(const Chase& chase, int lines_log2, int warps, int rounds,
                                      std::uint64_t seed, const std::string& hint) {
  const std::size_t lines = std::size_t{1} << lines_log2;
  const auto table = lab07::make_chase_table(lines, cml::derive_seed(seed, lines_log2));
  lab07::ChaseParams params;
  params.line_mask = static_cast<std::uint32_t>(lines - 1);
  params.warps = warps;
  params.rounds = rounds;
  params.seed = static_cast<std::uint32_t>(cml::derive_seed(seed, 1000 + warps));
  const std::size_t words = static_cast<std::size_t>(warps) * lab07::kWarpSize;
  cml::DeviceBuffer<std::uint32_t> d_table(table.size()), d_out(words, 4096);
  d_table.upload(table);
  d_out.poison();
  const cml::LaunchCounter launches;
  chase(d_table.data(), d_out.data(), params);
  if (auto k = cml::require_kernel(launches, "the chase"); !k.ok) return k;
  const auto got = d_out.download();

  cml::CompareContext ctx;
  ctx.name = "out";
  ctx.cols = lab07::kWarpSize;
  ctx.size = "warps=" + std::to_string(warps) + ", rounds=" + std::to_string(rounds) +
             ", lines=" + std::to_string(lines);
  ctx.seed = seed;
  ctx.hint = hint;
  const auto bad = cml::check_guards(d_out, ctx,
                                     "launch exactly enough blocks for the warps; "
                                     "chase_warp returns for warps past params.warps.");
  if (!bad.ok) return bad;
  const auto want = lab07::chase_reference(table, params, 0, warps);
  return cml::compare_exact(as_ints(got), as_ints(want), ctx);
}

inline const char* kChaseHint =
    "out[warp][lane] is what lane `lane` of warp `warp` accumulates; launch "
    "ceil(warps * 32 / kChaseBlock) blocks of kChaseBlock threads so every warp runs once.";

}  // namespace lab07_test
