// Lab 03 bench: the global-only blur against the shared-memory blur, interleaved per the
// project's timing protocol; first with the tile chosen for full thread occupancy, then with
// the largest tile the opt-in limit allows (one block per SM). Prints one JSON document.
//   labNN_bench_<variant> [--n 67108864] [--radius 8] [--tile T] [--json PATH] [--seed N] ...
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/compare.hpp"
#include "cml/random.hpp"
#include "shared_memory.cuh"

namespace {

constexpr int kInputSets = 2;  // inputs rotate between samples

// Checks the output of the last timed run (which used input set `sample % kInputSets`) at
// the first and last 256 positions and at 4096 spread between.
cml::Verification verify(const std::vector<std::vector<float>>& inputs, int sample,
                         const cml::DeviceBuffer<float>& d_out, int n, int radius,
                         std::uint64_t seed) {
  const auto& in = inputs[static_cast<std::size_t>(sample % kInputSets)];
  const auto out = d_out.download();
  std::vector<std::size_t> at;
  for (int i = 0; i < std::min(n, 256); ++i) {
    at.push_back(static_cast<std::size_t>(i));
    at.push_back(static_cast<std::size_t>(n - 1 - i));
  }
  for (int j = 0; j < 4096; ++j) at.push_back(static_cast<std::size_t>(n) * j / 4096);
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  std::vector<float> got;
  std::vector<double> want, magnitude;
  for (std::size_t i : at) {
    double sum = 0, mag = 0;
    for (int k = -radius; k <= radius; ++k) {
      const long long src = std::clamp<long long>(static_cast<long long>(i) + k, 0, n - 1);
      sum += in[static_cast<std::size_t>(src)];
      mag += std::fabs(in[static_cast<std::size_t>(src)]);
    }
    got.push_back(out[i]);
    want.push_back(sum / (2 * radius + 1));
    magnitude.push_back(mag / (2 * radius + 1));
  }
  cml::CompareContext ctx;
  ctx.name = "out(sampled)";
  ctx.size = "n=" + std::to_string(n) + ", radius=" + std::to_string(radius);
  ctx.seed = seed;
  const auto result =
      cml::compare(got, want, cml::float_sum_tolerance(2 * radius + 2), ctx, magnitude);
  return {true, result.ok,
          result.ok ? "output matches the reference at sampled positions" : result.message};
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = cml::parse_bench_args(
      argc, argv, {"n", "radius", "tile"},
      "usage: lab03 bench [--n N (default 67108864)] [--radius R (default 8)] [--tile T "
      "(default: plan_blur_tile for full occupancy on this GPU)]");
  const int n = static_cast<int>(args.get_int("n", 1 << 26));
  const int radius = static_cast<int>(args.get_int("radius", 8));
  const cml::DeviceInfo device = cml::bench_device();
  try {
    const std::size_t count = static_cast<std::size_t>(n);
    std::vector<std::vector<float>> h_in;
    std::vector<cml::DeviceBuffer<float>> d_in;
    for (int s = 0; s < kInputSets; ++s) {
      h_in.push_back(cml::random_floats(count, cml::derive_seed(args.seed, s)));
      d_in.emplace_back(count);
      d_in.back().upload(h_in.back());
    }
    cml::Harness harness(device.l2_bytes, args.timing);
    cml::BenchReport report(CML_LAB, CML_VARIANT, args, device, harness.flush_bytes());
    report.param("n", n);
    report.param("radius", radius);
    // Each output is 2·radius+1 additions and a multiply; DRAM must at least read the input
    // once and write the output once.
    const cml::Work work{(2.0 * radius + 1.0) * n, 2.0 * count * sizeof(float)};

    // Baseline and candidate write separate outputs, poisoned once, so the output of the last
    // timed run of each is what gets checked.
    cml::DeviceBuffer<float> d_base(count), d_out(count);
    auto timed = [&d_in](const std::string& name, cml::DeviceBuffer<float>& out, auto fn) {
      float* o = out.data();
      return cml::TimedCase{name, [&d_in, o, fn](int sample) {
                              fn(d_in[static_cast<std::size_t>(sample % kInputSets)].data(), o);
                            }};
    };
    const auto last = [](const cml::SampleStats& s) {
      return static_cast<int>(s.samples.size()) - 1;
    };
    const auto global_only = [n, radius](const float* in, float* out) {
      lab03::blur_global(in, out, n, radius);
    };

    const auto limits = lab03::limits_of(device);
    const int full_occupancy = std::max(1, device.max_threads_per_sm / lab03::kBlurThreads);
    const auto compare_tile = [&](const std::string& name, int tile, int blocks_per_sm) {
      report.param(name + "_tile", tile);
      report.param(name + "_shared_bytes",
                   static_cast<double>((static_cast<std::size_t>(tile) + 2 * radius) * sizeof(float)));
      report.param(name + "_blocks_per_sm_planned", blocks_per_sm);
      if (tile < 1) {
        std::cerr << name << " not timed: the tile chooser gave " << tile << "\n";
        return;
      }
      const auto shared = [n, radius, tile](const float* in, float* out) {
        lab03::blur_shared(in, out, n, radius, tile);
      };
      d_base.poison();
      d_out.poison();
      const auto t = harness.time_pair(timed("blur_global", d_base, global_only),
                                       timed(name, d_out, shared));
      report.add_comparison(name, t, work,
                            verify(h_in, last(t.baseline_ms), d_base, n, radius, args.seed),
                            verify(h_in, last(t.candidate_ms), d_out, n, radius, args.seed));
      std::cerr << name << " (tile " << tile << "): global-only " << t.baseline_ms.median
                << " ms, shared " << t.candidate_ms.median << " ms, speedup "
                << t.speedup.median << "x\n";
    };

    // The scored comparison: the tile that leaves room for a full SM of 256-thread blocks.
    const auto plan = lab03::plan_blur_tile(limits, radius, full_occupancy);
    compare_tile("blur_shared", static_cast<int>(args.get_int("tile", plan.tile)),
                 full_occupancy);
    // The largest tile: one block per SM, opting in to the whole per-block limit. Fewer
    // resident threads and less overlap of loading with computing: measure what it costs.
    const auto big = lab03::plan_blur_tile(limits, radius, 1);
    compare_tile("blur_shared_one_block_per_sm", big.tile, 1);
    return report.write();
  } catch (const std::exception& err) {
    std::cerr << "bench failed: " << err.what() << "\n";
    return 1;
  }
}
