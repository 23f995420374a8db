// Lab 05 bench: what the boundary checks cost and what they buy, interleaved per the project's
// timing protocol (common/include/cml/timing.hpp: fresh inputs for every pair, every output
// verified whole on the GPU, activity-record timing, launches counted). Prints one JSON
// document with two comparisons:
//   "odd"      naive (given) vs the checked tiled kernel at a size off the tile (scored);
//   "multiple" lab 04's unchecked tiled kernel (given) vs the checked one at a multiple of
//              the tile, where the checks are pure overhead.
//   labNN_bench_<variant> [--n 4096] [--odd 4097] [--only odd|multiple] [--json PATH] ...
// (--only runs one comparison, so a profiler sees the same number of launches of each side.)
#include <iostream>
#include <string>

#include "boundary_checks.cuh"
#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/gpu_verify.hpp"

namespace {

using SquareFn = void (*)(const float*, const float*, float*, int);

// Times baseline against candidate at size n, on inputs regenerated for every pair, each
// writing its own output, and records the comparison. Expected: the baseline's output for
// the same inputs (given code). Each element is a float sum of n products whose magnitudes
// |a||b| average 1/4 for inputs uniform in [-1, 1); a fair kernel may sum in another order,
// so determinism is reported, not required.
cml::PairTiming compare_pair(cml::Harness& harness, cml::BenchReport& report,
                             const std::string& name, int n, const std::string& baseline_name,
                             SquareFn baseline, const std::string& candidate_name,
                             SquareFn candidate) {
  const std::size_t count = static_cast<std::size_t>(n) * n;
  cml::DeviceBuffer<float> d_a(count), d_b(count), d_base(count), d_cand(count);
  cml::FreshInputs inputs;
  inputs.uniform(d_a);
  inputs.uniform(d_b);
  const auto call = [&](const std::string& label, cml::DeviceBuffer<float>& out, SquareFn fn) {
    const float* a = d_a.data();
    const float* b = d_b.data();
    float* c = out.data();
    return cml::TimedCase{label, [a, b, c, n, fn](const cml::Sample&) { fn(a, b, c, n); },
                          cml::device_array(out)};
  };
  cml::Measurement m;
  m.baseline = call(baseline_name, d_base, baseline);
  m.candidate = call(candidate_name, d_cand, candidate);
  m.inputs = &inputs;
  m.check = cml::Check::within(cml::sum_tolerance(static_cast<std::size_t>(n), n / 4.0),
                               cml::Determinism::Report, "C", static_cast<std::size_t>(n));
  const auto t = harness.time_pair(m);
  const cml::Work work{2.0 * n * static_cast<double>(n) * n, 3.0 * count * sizeof(float)};
  report.add_comparison(name, t, work);
  std::cerr << name << " (n=" << n << "): " << cml::summary(t) << "\n";
  return t;
}

void naive_square(const float* a, const float* b, float* c, int n) {
  lab05::matmul_naive(a, b, c, n, n, n);
}

void boundary_checks(cml::BenchContext& ctx) {
  const int n = static_cast<int>(ctx.args.get_int("n"));
  const int odd = static_cast<int>(ctx.args.get_int("odd"));
  const std::string only = ctx.args.get("only", "");
  if (only != "multiple") {
    compare_pair(ctx.harness, ctx.report, "odd", odd, "naive", naive_square, "checked_tiled",
                 lab05::matmul_square);
  }
  if (only != "odd") {
    const auto t =
        compare_pair(ctx.harness, ctx.report, "multiple", n, "unchecked_tiled",
                     lab05::matmul_tiled_unchecked, "checked_tiled", lab05::matmul_square);
    // Above 1: the checked kernel is slower than lab 04's at a size where no check fires
    // (the median over pairs of the time ratio).
    if (t.speedup.median > 0) {
      ctx.report.metric("checked_over_unchecked_time", 1.0 / t.speedup.median);
    }
  }
}

}  // namespace

CML_BENCH(boundary_checks)
    .param("n", 4096, "N", "the size of the \"multiple\" comparison, a multiple of 32")
    .param("odd", 4097, "M", "the size of the \"odd\" comparison, not a multiple of 32")
    .choice("only", {"odd", "multiple"}, "run that one comparison only (default: both)")
    .check([](const cml::BenchArgs& args) -> std::string {
      const long long n = args.get_int("n"), odd = args.get_int("odd");
      if (n < lab05::kTile || n % lab05::kTile != 0 || odd < 1 || odd % lab05::kTile == 0) {
        return "--n must be a positive multiple of " + std::to_string(lab05::kTile) +
               " and --odd a positive size that is not";
      }
      return "";
    });
