// The shared GPU check of a matrix product (cml/matmul_check.hpp).
#include "cml/matmul_check.hpp"

#include <cstring>
#include <limits>

#include "cml/buffer.hpp"
#include "cml/guard_check.hpp"
#include "cml/launch_count.hpp"
#include "cml/random.hpp"

namespace cml {
namespace {

std::size_t count_of(int rows, int cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
}

}  // namespace

std::pair<std::vector<float>, std::vector<float>> matmul_inputs(const MatmulProblem& problem,
                                                                std::uint64_t seed,
                                                                std::uint64_t stream) {
  return {random_floats(count_of(problem.rows, problem.inner), derive_seed(seed, 2 * stream)),
          random_floats(count_of(problem.inner, problem.cols), derive_seed(seed, 2 * stream + 1))};
}

MatmulCheck check_matmul(const DeviceProduct& product, const std::vector<float>& a,
                         const std::vector<float>& b, const MatmulProblem& p) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> h_a(a), h_b(b);
  h_a.resize(count_of(p.rows, p.inner) + p.a_tail, nan);
  h_b.resize(count_of(p.inner, p.cols) + p.b_tail, nan);
  DeviceBuffer<float> d_a(h_a.size()), d_b(h_b.size()),
      d_c(count_of(p.rows, p.cols), p.c_guard_bytes);
  d_a.upload(h_a);
  d_b.upload(h_b);
  d_c.poison();
  MatmulCheck out;
  const LaunchCounter launches;
  product(d_a.data(), d_b.data(), d_c.data());
  out.result = require_kernel(launches, "the matrix product");
  if (!out.result.ok) return out;
  const std::vector<float> c = d_c.download();

  CompareContext ctx;
  ctx.name = "C";
  ctx.cols = static_cast<std::size_t>(p.cols);
  ctx.size = p.size;
  ctx.seed = p.seed;
  ctx.hint = p.hint;
  if (p.check_rows > 0) out.rows = sample_rows(static_cast<std::size_t>(p.rows), p.check_rows);
  out.reference = matmul_reference(a, b, p.rows, p.inner, p.cols, out.rows);
  ctx.row_labels = out.rows;
  out.got = out.rows.empty() ? c : gather_rows(c, p.cols, out.rows);
  out.tolerance = float_sum_tolerance(static_cast<std::size_t>(p.inner));
  out.result = compare(out.got, out.reference.value, out.tolerance, ctx, out.reference.magnitude);

  const CompareResult guard = check_guards(d_c, "C", p.size, p.seed, p.guard_hint);
  if (!guard.ok) {
    out.result.ok = false;
    out.result.message = guard.message + "\n" + out.result.message;
  }
  return out;
}

CompareResult check_matmul_repeatable(const DeviceProduct& product, const std::vector<float>& a,
                                      const std::vector<float>& b, const MatmulProblem& p,
                                      int runs) {
  // Repeatable and right: a product that never writes C (the untouched skeleton) gives the
  // same poison every run, so the first product is checked like any other first.
  CompareResult result = check_matmul(product, a, b, p).result;
  if (!result.ok) return result;
  DeviceBuffer<float> d_a(a.size()), d_b(b.size()), d_c(count_of(p.rows, p.cols));
  d_a.upload(a);
  d_b.upload(b);
  std::vector<float> first;
  for (int run = 0; run < runs; ++run) {
    d_c.poison();
    const LaunchCounter launches;
    product(d_a.data(), d_b.data(), d_c.data());
    const CompareResult launched = require_kernel(launches, "the matrix product");
    if (!launched.ok) return launched;
    const std::vector<float> c = d_c.download();
    ++result.checked;
    if (run == 0) {
      first = c;
    } else if (std::memcmp(first.data(), c.data(), c.size() * sizeof(float)) != 0) {
      result.ok = false;
      result.mismatches = 1;
      result.message = "run " + std::to_string(run) +
                       " of the same product differs from run 0 "
                       "(size " +
                       p.size + ", seed " + std::to_string(p.seed) + ")";
      if (!p.hint.empty()) result.message += "\nHint: " + p.hint;
      break;
    }
  }
  return result;
}

}  // namespace cml
