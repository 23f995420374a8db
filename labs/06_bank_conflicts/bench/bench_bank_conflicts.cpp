// Lab 06 bench: the naive transpose against the conflicted and the padded tile transposes,
// interleaved per the project's timing protocol (common/include/cml/timing.hpp: fresh inputs
// for every pair, every output verified whole on the GPU, activity-record timing, launches
// counted); a plain copy and cudaMemcpy timed alone as yardsticks; and the clock64() cycles
// per shared-memory access at strides 1..32, the broadcast and the padded struct, beside the
// conflict degree the student's model predicts. Prints one JSON document.
//   labNN_bench_<variant> [--n 8192] [--probe-iterations 4096]
//                         [--only conflicted|padded|padded_vs_conflicted] [--json PATH] ...
// (--only runs that one comparison and nothing else, so a profiler's candidate range holds
// exactly the calls of that one kernel.)
#include <cuda_runtime.h>

#include <iostream>
#include <string>
#include <vector>

#include "bank_conflicts.cuh"
#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/check.hpp"
#include "cml/gpu_verify.hpp"

namespace {

void bank_conflicts(cml::BenchContext& ctx) {
  cml::Harness& harness = ctx.harness;
  cml::BenchReport& report = ctx.report;
  const int n = static_cast<int>(ctx.args.get_int("n"));
  const std::string only = ctx.args.get("only", "");
  const int probe_iterations = static_cast<int>(ctx.args.get_int("probe-iterations"));
  const std::size_t count = static_cast<std::size_t>(n) * n;
  cml::DeviceBuffer<float> d_in(count), d_base(count), d_cand(count);
  cml::FreshInputs inputs;
  inputs.uniform(d_in);

  report.param("block", "32x8 threads, 4 elements per thread");
  const cml::Work work{0.0, 2.0 * count * sizeof(float)};  // read once, write once
  const auto un = static_cast<std::size_t>(n);

  // Every output is checked, bit for bit, against the input itself (transposed, or as it is
  // for the copies), regenerated for every pair: both sides of every comparison are checked.
  using Fn = void (*)(const float*, float*, int, int);
  const auto call = [&](const std::string& name, cml::DeviceBuffer<float>& out, Fn fn) {
    const float* in = d_in.data();
    float* o = out.data();
    return cml::TimedCase{name, [in, o, fn, n](const cml::Sample&) { fn(in, o, n, n); },
                          cml::device_array(out)};
  };
  const auto measurement = [&](cml::IndexMap map) {
    cml::Measurement m;
    m.inputs = &inputs;
    m.expected = cml::device_array(d_in);
    m.map = map;
    m.check = cml::Check::exact_match("out", un);
    return m;
  };
  const auto compare = [&](const std::string& name, const std::string& base_name, Fn base,
                           const std::string& cand_name, Fn cand) {
    cml::Measurement m = measurement(cml::IndexMap::transposed(un, un));
    m.baseline = call(base_name, d_base, base);
    m.candidate = call(cand_name, d_cand, cand);
    const auto t = harness.time_pair(m);
    report.add_comparison(name, t, work);
    std::cerr << name << ": " << cml::summary(t) << "\n";
    return t;
  };
  if (only == "conflicted") {
    compare("conflicted", "naive", lab06::transpose_naive, "tiled_conflicted",
            lab06::transpose_tiled_conflicted);
    return;
  }
  if (only == "padded") {
    compare("padded", "naive", lab06::transpose_naive, "tiled_padded",
            lab06::transpose_tiled_padded);
    return;
  }
  if (only == "padded_vs_conflicted") {
    compare("padded_vs_conflicted", "tiled_conflicted", lab06::transpose_tiled_conflicted,
            "tiled_padded", lab06::transpose_tiled_padded);
    return;
  }
  const auto t_conflicted = compare("conflicted", "naive", lab06::transpose_naive,
                                    "tiled_conflicted", lab06::transpose_tiled_conflicted);
  const auto t_padded = compare("padded", "naive", lab06::transpose_naive, "tiled_padded",
                                lab06::transpose_tiled_padded);  // scored
  compare("padded_vs_conflicted", "tiled_conflicted", lab06::transpose_tiled_conflicted,
          "tiled_padded", lab06::transpose_tiled_padded);

  // Yardsticks: the same bytes moved with every access coalesced, by a kernel and by the
  // driver's device-to-device copy.
  cml::Measurement copy = measurement(cml::IndexMap::identity());
  copy.candidate = call("copy", d_cand, lab06::copy_matrix);
  const auto copy_t = harness.time_single(copy);
  report.add_case("copy", copy_t, work);
  std::cerr << "copy: " << cml::summary(copy_t) << "\n";
  cml::Measurement memcpy_m = measurement(cml::IndexMap::identity());
  memcpy_m.candidate =
      cml::TimedCase{"memcpy_d2d",
                     [in = d_in.data(), o = d_cand.data(), count](const cml::Sample&) {
                       CUDA_CHECK(cudaMemcpyAsync(o, in, count * sizeof(float),
                                                  cudaMemcpyDeviceToDevice, 0));
                     },
                     cml::device_array(d_cand)};
  const auto memcpy_t = harness.time_single(memcpy_m);
  report.add_case("memcpy_d2d", memcpy_t, work);
  std::cerr << "memcpy_d2d: " << cml::summary(memcpy_t) << "\n";
  const double copy_ms = copy_t.result.ms.median;
  report.metric("naive_fraction_of_copy", copy_ms / t_padded.baseline.ms.median);
  report.metric("conflicted_fraction_of_copy", copy_ms / t_conflicted.candidate.ms.median);
  report.metric("padded_fraction_of_copy", copy_ms / t_padded.candidate.ms.median);
  report.metric("padded_fraction_of_memcpy",
                memcpy_t.result.ms.median / t_padded.candidate.ms.median);

  // Cycles per warp-wide shared load against the stride between lanes, with the conflict
  // degree the (student's) model predicts for the same addresses.
  report.param("probe_iterations", probe_iterations);
  struct Probe {
    const char* name;
    int stride;
  };
  cml::Plot& plot = report.plot("cycles_vs_stride", "cycles per shared access vs stride",
                                "stride (words)", "cycles per access");
  plot.log2_x = true;
  plot.caption =
      "Each doubling of the conflict degree (labels: predicted n-way conflict) "
      "adds replays to every access.";
  for (const Probe p : {Probe{"broadcast", 0}, Probe{"stride_1", 1}, Probe{"stride_2", 2},
                        Probe{"stride_4", 4}, Probe{"stride_8", 8}, Probe{"stride_16", 16},
                        Probe{"stride_32", 32}, Probe{"padded_struct", 33}}) {
    std::vector<std::uint32_t> addresses;
    for (int lane = 0; lane < lab06::kWarpSize; ++lane) {
      addresses.push_back(static_cast<std::uint32_t>(lane * p.stride * lab06::kBankWordBytes));
    }
    double cycles = 0;
    {
      cml::NvtxRange range(cml::kNvtxCase);  // given code, untimed by the harness
      cycles = lab06::measure_cycles_per_access(p.stride, probe_iterations);
    }
    const int ways = lab06::conflict_degree(addresses);
    report.metric(std::string("cycles_per_access_") + p.name, cycles);
    report.metric(std::string("predicted_degree_") + p.name, ways);
    if (std::string(p.name).rfind("stride_", 0) == 0) {  // the power-of-two sweep
      plot.metric_point(p.stride, std::string("cycles_per_access_") + p.name,
                        std::to_string(ways) + "-way");
    }
    std::cerr << p.name << ": " << cycles << " cycles per access\n";
  }
}

}  // namespace

// probe-iterations is recorded (as probe_iterations) where the probes run, not as a param of
// every run: a run with --only times no probe.
CML_BENCH(bank_conflicts)
    .param("n", 8192, "N", "the matrices' size")
    .option("probe-iterations", 4096, "I", "shared loads per lane in each stride probe")
    .choice("only", {"conflicted", "padded", "padded_vs_conflicted"},
            "time that one comparison and nothing else (default: all, the yardsticks and the "
            "probes)");
