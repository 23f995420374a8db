// Lab 05 bench: what the boundary checks cost and what they buy, interleaved per the project's
// timing protocol. Prints one JSON document with two comparisons:
//   "odd"      naive (given) vs the checked tiled kernel at a size off the tile (scored);
//   "multiple" lab 04's unchecked tiled kernel (given) vs the checked one at a multiple of
//              the tile, where the checks are pure overhead.
//   labNN_bench_<variant> [--n 4096] [--odd 4097] [--only odd|multiple] [--json PATH] ...
// (--only runs one comparison, so a profiler sees the same number of launches of each side.)
#include <iostream>
#include <string>
#include <vector>

#include "boundary_checks.cuh"
#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/check.hpp"
#include "cml/compare.hpp"
#include "cml/matmul_ref.hpp"
#include "cml/random.hpp"

namespace {

constexpr int kInputSets = 2;  // inputs rotate between samples

// Device inputs of one size, with host copies for checking.
struct Inputs {
  int n = 0;
  std::vector<std::vector<float>> h_a, h_b;
  std::vector<cml::DeviceBuffer<float>> d_a, d_b;

  Inputs(int size, std::uint64_t seed) : n(size) {
    const std::size_t count = static_cast<std::size_t>(n) * n;
    for (int s = 0; s < kInputSets; ++s) {
      const std::uint64_t tag = 4 * static_cast<std::uint64_t>(n) + 2 * s;
      h_a.push_back(cml::random_floats(count, cml::derive_seed(seed, tag)));
      h_b.push_back(cml::random_floats(count, cml::derive_seed(seed, tag + 1)));
      d_a.emplace_back(count);
      d_b.emplace_back(count);
      d_a.back().upload(h_a.back());
      d_b.back().upload(h_b.back());
    }
  }
};

// Checks sampled rows (the last one included: that is where the edge tiles are) of the
// output of the last timed run, number `sample`.
cml::Verification verify(const Inputs& in, int sample, const cml::DeviceBuffer<float>& d_c,
                         std::uint64_t seed) {
  const int set = sample % kInputSets;
  const int n = in.n;
  const auto rows = cml::sample_rows(n, 8);
  const auto ref = cml::matmul_reference(in.h_a[set], in.h_b[set], n, n, n, rows);
  cml::CompareContext ctx;
  ctx.cols = n;
  ctx.size = "n=" + std::to_string(n);
  ctx.seed = seed;
  ctx.row_labels = rows;
  const auto got = cml::gather_rows(d_c.download(), n, rows);
  const auto result = cml::compare(got, ref.value, cml::float_sum_tolerance(n), ctx, ref.magnitude);
  return {true, result.ok, result.ok ? "output matches the reference on sampled rows"
                                     : result.message};
}

using SquareFn = void (*)(const float*, const float*, float*, int);

// Times baseline against candidate at the inputs' size, each writing its own output buffer
// (poisoned once), and records the comparison.
cml::PairTiming compare_pair(cml::Harness& harness, cml::BenchReport& report,
                             const std::string& name, const Inputs& in, std::uint64_t seed,
                             const std::string& baseline_name, SquareFn baseline,
                             const std::string& candidate_name, SquareFn candidate) {
  const int n = in.n;
  const std::size_t count = static_cast<std::size_t>(n) * n;
  cml::DeviceBuffer<float> d_base(count), d_cand(count);
  d_base.poison();
  d_cand.poison();
  const auto timed = [&in, n](const std::string& label, float* c, SquareFn fn) {
    return cml::TimedCase{label, [&in, n, c, fn](int sample) {
                            const int set = sample % kInputSets;
                            fn(in.d_a[set].data(), in.d_b[set].data(), c, n);
                          }};
  };
  const auto t = harness.time_pair(timed(baseline_name, d_base.data(), baseline),
                                   timed(candidate_name, d_cand.data(), candidate));
  const auto last = [](const cml::SampleStats& s) { return static_cast<int>(s.samples.size()) - 1; };
  const cml::Work work{2.0 * n * static_cast<double>(n) * n, 3.0 * count * sizeof(float)};
  report.add_comparison(name, t, work, verify(in, last(t.baseline_ms), d_base, seed),
                        verify(in, last(t.candidate_ms), d_cand, seed));
  std::cerr << name << " (n=" << n << "): " << baseline_name << " " << t.baseline_ms.median
            << " ms, " << candidate_name << " " << t.candidate_ms.median << " ms, speedup "
            << t.speedup.median << "x\n";
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
      const Inputs in(odd, args.seed);
      compare_pair(harness, report, "odd", in, args.seed, "naive", naive_square, "checked_tiled",
                   lab05::matmul_square);
    }
    if (only != "odd") {
      const Inputs in(n, args.seed);
      const auto t = compare_pair(harness, report, "multiple", in, args.seed, "unchecked_tiled",
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
