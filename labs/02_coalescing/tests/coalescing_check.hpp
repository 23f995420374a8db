// Helpers for lab 02's tests: building warp requests, walking a mapping warp by warp on the
// host, and checking a scale kernel's output against the CPU.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/compare.hpp"
#include "cml/guard_check.hpp"
#include "cml/random.hpp"
#include "coalescing.cuh"

namespace lab02_test {

/// A request whose lane l reads `access_bytes` at `address(l)`; lanes outside `active` idle.
template <class AddressOf>
lab02::WarpRequest make_request(AddressOf address, int access_bytes = 4,
                                std::uint32_t active = lab02::kAllLanes) {
  lab02::WarpRequest r;
  for (int lane = 0; lane < lab02::kWarpSize; ++lane) r.address[lane] = address(lane);
  r.access_bytes = access_bytes;
  r.active = active;
  return r;
}

/// Lane l reads the float `stride` floats after lane l-1's, starting at byte `base`.
inline lab02::WarpRequest strided_floats(int stride, std::uint64_t base = 0) {
  return make_request(
      [=](int lane) { return base + 4u * static_cast<std::uint64_t>(lane) * stride; });
}

/// "1 transaction(s), 128 B moved, 128 B used (100 %)" for messages.
inline std::string describe(const lab02::Traffic& t) {
  std::ostringstream out;
  out << t.transactions << " transaction(s), " << t.bytes_moved << " B moved, " << t.bytes_used
      << " B used (" << 100.0 * t.utilisation() << " %)";
  return out.str();
}

/// The signature of the two index functions.
using Mapping = std::function<lab02::Element(int block_row, int block_col, int thread)>;

/// One warp of a launch over a rows×cols float matrix at byte 0: its active lanes' elements.
struct WarpView {
  int block_row = 0, block_col = 0, warp = 0;
  std::uint32_t active = 0;  ///< lanes whose element lies inside the matrix
  lab02::WarpRequest request;
};

/// Calls `visit(WarpView)` for every warp of the launch scale_* makes (ceil(cols/kTile) ×
/// ceil(rows/kTile) blocks of kBlockThreads threads), evaluating `mapping` on the host.
template <class Visit>
void for_each_warp(const Mapping& mapping, int rows, int cols, Visit visit) {
  const int block_rows = (rows + lab02::kTile - 1) / lab02::kTile;
  const int block_cols = (cols + lab02::kTile - 1) / lab02::kTile;
  for (int br = 0; br < block_rows; ++br) {
    for (int bc = 0; bc < block_cols; ++bc) {
      for (int warp = 0; warp < lab02::kBlockThreads / lab02::kWarpSize; ++warp) {
        WarpView view;
        view.block_row = br;
        view.block_col = bc;
        view.warp = warp;
        for (int lane = 0; lane < lab02::kWarpSize; ++lane) {
          const lab02::Element e = mapping(br, bc, warp * lab02::kWarpSize + lane);
          if (e.row < 0 || e.col < 0 || e.row >= rows || e.col >= cols) continue;
          view.active |= 1u << lane;
          view.request.address[lane] =
              4u * (static_cast<std::uint64_t>(e.row) * cols + static_cast<std::uint64_t>(e.col));
        }
        view.request.active = view.active;
        visit(view);
      }
    }
  }
}

/// Distinct 32-byte sectors a request touches: the tests' own count, independent of the
/// student's model.
inline int sectors_touched(const lab02::WarpRequest& r) {
  std::set<std::uint64_t> sectors;
  for (int lane = 0; lane < lab02::kWarpSize; ++lane) {
    if ((r.active >> lane) & 1u) sectors.insert(r.address[lane] / lab02::kSectorBytes);
  }
  return static_cast<int>(sectors.size());
}

/// Empty when `mapping`, over the launch for rows×cols, hits every element exactly once;
/// otherwise a sentence naming the first problem.
inline std::string coverage_problem(const Mapping& mapping, int rows, int cols) {
  std::vector<int> hits(static_cast<std::size_t>(rows) * cols, 0);
  std::string problem;
  for_each_warp(mapping, rows, cols, [&](const WarpView& w) {
    for (int lane = 0; lane < lab02::kWarpSize && problem.empty(); ++lane) {
      if (((w.active >> lane) & 1u) == 0) continue;
      const std::uint64_t index = w.request.address[lane] / 4;
      if (++hits[index] == 2) {
        std::ostringstream out;
        out << "element [" << index / cols << "][" << index % cols
            << "] is handled twice (again by thread " << w.warp * lab02::kWarpSize + lane
            << " of block (row " << w.block_row << ", col " << w.block_col << "))";
        problem = out.str();
      }
    }
  });
  if (!problem.empty()) return problem;
  for (std::size_t i = 0; i < hits.size(); ++i) {
    if (hits[i] == 0) {
      std::ostringstream out;
      out << "element [" << i / cols << "][" << i % cols << "] is handled by no thread";
      return out.str();
    }
  }
  return {};
}

inline std::string size_text(int rows, int cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

/// Runs `scale(in, out, rows, cols, factor)` on random input and checks out = factor·in,
/// with a poisoned output and guard zones.
inline cml::CompareResult check_scale(
    const std::function<void(const float*, float*, int, int, float)>& scale, int rows, int cols,
    std::uint64_t seed, const std::string& hint) {
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  const float factor = 3.0f;
  const auto in = cml::random_floats(count, cml::derive_seed(seed, 7919u * rows + cols));
  cml::DeviceBuffer<float> d_in(count), d_out(count, 4096);
  d_in.upload(in);
  d_out.poison();
  const cml::LaunchCounter launches;
  scale(d_in.data(), d_out.data(), rows, cols, factor);
  if (auto k = cml::require_kernel(launches, "the scale call"); !k.ok) return k;
  const std::vector<float> out = d_out.download();

  cml::CompareContext ctx;
  ctx.name = "out";
  ctx.cols = static_cast<std::size_t>(cols);
  ctx.size = size_text(rows, cols);
  ctx.seed = seed;
  ctx.hint = hint;
  const auto bad =
      cml::check_guards(d_out, ctx, "threads whose element is outside the matrix must not store.");
  if (!bad.ok) return bad;
  std::vector<double> expected(count);
  for (std::size_t i = 0; i < count; ++i) expected[i] = static_cast<double>(factor) * in[i];
  return cml::compare(out, expected, cml::Tolerance{1e-6, 0.0}, ctx);
}

inline const char* kMappingHint =
    "coalesced_element() must give each thread of a block its own element of the block's "
    "kTile×kTile tile, consecutive threads on consecutive columns of one row.";

}  // namespace lab02_test
