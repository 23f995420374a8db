/// \file
/// The one GPU check of a matrix product, shared by the matmul labs' tests: random inputs
/// from the run's seed, a poisoned output inside guard zones (and, on request, NaN past the
/// ends of A and B), the launch counted, a double-precision reference (on a sample of rows
/// for large sizes), and a report that names the element, the size and the seed. A lab adds
/// its own diagnosis from what the check returns. The reference is computed on the CPU after
/// the product ran, from the host copies of A and B: nothing on the device holds a result
/// while the code under test runs (the host copies are memory it could read, but they hold
/// only the inputs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cml/compare.hpp"
#include "cml/matmul_ref.hpp"

namespace cml {

/// Runs C = A·B on device matrices (row-major, shapes as in the MatmulProblem).
using DeviceProduct = std::function<void(const float* a, const float* b, float* c)>;

/// One product to check: C (rows×cols) = A (rows×inner) · B (inner×cols).
struct MatmulProblem {
  int rows = 1;
  int inner = 1;
  int cols = 1;
  std::string size;                  ///< the size in messages, e.g. "n=129" or "I=3, J=5, K=7"
  std::uint64_t seed = 0;            ///< the seed that produced the inputs
  std::string hint;                  ///< where to look when C is wrong
  std::string guard_hint;            ///< where to look when a store landed outside C
  std::size_t check_rows = 0;        ///< > 0: check only that many rows of C (sample_rows())
  std::size_t a_tail = 0;            ///< NaN elements after A (a load past its end turns into NaN)
  std::size_t b_tail = 0;            ///< NaN elements after B
  std::size_t c_guard_bytes = 4096;  ///< guard zone on each side of C
};

/// The outcome, with what a lab needs for its own report on a failure.
struct MatmulCheck {
  CompareResult result;           ///< guard zones, launches and every checked element
  std::vector<float> got;         ///< the checked rows of C, as the GPU left them
  std::vector<std::size_t> rows;  ///< their row numbers in C (empty: all rows, in order)
  MatmulReference reference;      ///< the reference for those rows
  Tolerance tolerance;            ///< the tolerance used
};

/// A and B for `problem`'s shape, random in [-1, 1) from `seed`; `stream` tells one product's
/// inputs from another's (A comes from stream 2·stream, B from 2·stream + 1).
std::pair<std::vector<float>, std::vector<float>> matmul_inputs(const MatmulProblem& problem,
                                                                std::uint64_t seed,
                                                                std::uint64_t stream);

/// Runs `product` on A and B and checks C. A store outside C fails the check (its report
/// comes first, then the comparison's); a call that launched no kernel fails it alone.
MatmulCheck check_matmul(const DeviceProduct& product, const std::vector<float>& a,
                         const std::vector<float>& b, const MatmulProblem& problem);

/// Checks `product` once as check_matmul does (a kernel launched, C right), then runs it `runs`
/// times on the same A and B and fails when a run launches no kernel or its C differs from the
/// first run's bit for bit: a race (a missing barrier) shows as results that change from run
/// to run. The report names the run, the size and the seed, then `problem.hint`.
CompareResult check_matmul_repeatable(const DeviceProduct& product, const std::vector<float>& a,
                                      const std::vector<float>& b, const MatmulProblem& problem,
                                      int runs = 5);

}  // namespace cml
