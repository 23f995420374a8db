/// \file
/// The one comparison routine: GPU output against a double-precision reference, with a
/// relative+absolute tolerance, and a report a student can act on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cml/launch_count.hpp"

namespace cml {

/// |got - expected| <= abs + rel * scale, where scale is |expected| or, when the caller
/// supplies one, the sum of the magnitudes that produced the element (see MatmulReference).
struct Tolerance {
  double rel = 1e-5;
  double abs = 1e-6;
};

/// Tolerance for a float32 sum of `terms` products: a bound of 2·terms·2^-24 times the sum of
/// magnitudes, which every correct accumulation order meets and any wrong index misses.
Tolerance float_sum_tolerance(std::size_t terms);

/// What to print with a mismatch.
struct CompareContext {
  std::string name = "C";               ///< the array's name in messages, e.g. "C" gives C[3][7]
  std::size_t cols = 0;                 ///< row length for [row][col] messages; 0 prints [index]
  std::string size;                     ///< e.g. "n=129" or "M=3, N=5, K=7"
  std::uint64_t seed = 0;               ///< the seed that produced the inputs
  std::string hint;                     ///< one lab-specific sentence about where to look
  std::vector<std::size_t> row_labels;  ///< when only some rows were checked: their numbers
  int max_reported = 5;                 ///< how many mismatches to list
};

/// The outcome: `ok` and, when not, a multi-line message ready for a test failure.
struct CompareResult {
  bool ok = true;
  std::size_t checked = 0;
  std::size_t mismatches = 0;  ///< wrong values, NaN and unwritten elements together
  std::size_t unwritten = 0;   ///< elements that still hold the poison pattern
  std::string message;
  explicit operator bool() const { return ok; }
};

/// Fails (ok = false, with a message a student understands) when the call `call`, counted by
/// `launches` since it began, launched no kernel: a result computed on the CPU and copied to
/// the device is not the lab's work. Passes where this executable does not count launches.
inline CompareResult require_kernel(const LaunchCounter& launches, const std::string& call) {
  CompareResult r;
  if (launch_counting_active() && launches.count() == 0) {
    r.ok = false;
    r.message = call +
                " launched no kernel: the work must run on the GPU (a result "
                "computed on the CPU and copied to the device earns none of these points).";
  }
  return r;
}

/// Compares `got` with `expected` element by element. `scale`, when not empty, replaces
/// |expected| in the relative term. NaN and infinities never pass.
CompareResult compare(const std::vector<float>& got, const std::vector<double>& expected,
                      const Tolerance& tol, const CompareContext& ctx,
                      const std::vector<double>& scale = {});

/// Exact comparison for integer results (counts, indices).
CompareResult compare_exact(const std::vector<int>& got, const std::vector<int>& expected,
                            const CompareContext& ctx);

}  // namespace cml
