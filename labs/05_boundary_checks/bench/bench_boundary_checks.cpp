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

}  // namespace

int main(int argc, char** argv) {
  const auto args = cml::parse_bench_args(
      argc, argv, {"n", "odd", "only"},
      "usage: lab05 bench [--n N (a multiple of 32, default 4096)] [--odd M (not a multiple "
      "of 32, default 4097)] [--only odd|multiple]");
  const int n = static_cast<int>(args.get_int("n", 4096));
  const int odd = static_cast<int>(args.get_int("odd", 4097));
  const std::string only = args.get("only", "");
  if (!only.empty() && only != "odd" && only != "multiple") {
    std::cerr << "--only takes odd or multiple, not '" << only << "'\n";
    return 2;
  }
  if (n < lab05::kTile || n % lab05::kTile != 0 || odd < 1 || odd % lab05::kTile == 0) {
    std::cerr << "--n must be a positive multiple of " << lab05::kTile
              << " and --odd a positive size that is not\n";
    return 2;
  }
  const cml::DeviceInfo device = cml::bench_device();
  try {
    cml::Harness harness(device.l2_bytes, args.timing);
    cml::BenchReport report(CML_LAB, CML_VARIANT, args, device, harness.flush_bytes());
    report.param("n", n);
    report.param("odd", odd);
    if (only != "multiple") {
      compare_pair(harness, report, "odd", odd, "naive", naive_square, "checked_tiled",
                   lab05::matmul_square);
    }
    if (only != "odd") {
      const auto t = compare_pair(harness, report, "multiple", n, "unchecked_tiled",
                                  lab05::matmul_tiled_unchecked, "checked_tiled",
                                  lab05::matmul_square);
      // Above 1: the checked kernel is slower than lab 04's at a size where no check fires
      // (the median over pairs of the time ratio).
      if (t.speedup.median > 0) report.metric("checked_over_unchecked_time", 1.0 / t.speedup.median);
    }
    return report.write();
  } catch (const std::exception& err) {
    std::cerr << "bench failed: " << err.what() << "\n";
    return 1;
  }
}
