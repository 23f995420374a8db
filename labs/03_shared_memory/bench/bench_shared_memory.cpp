// Lab 03 bench: the global-only blur against the shared-memory blur, interleaved per the
// project's timing protocol (common/include/cml/timing.hpp: fresh inputs for every pair,
// every output verified whole on the GPU, activity-record timing, launches counted); first
// with the tile chosen for full thread occupancy, then with the largest tile the opt-in
// limit allows (one block per SM). Prints one JSON document.
//   labNN_bench_<variant> [--n 67108864] [--radius 8] [--tile T] [--json PATH] [--seed N] ...
#include <cuda_runtime.h>

#include <algorithm>
#include <iostream>
#include <string>

#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/gpu_verify.hpp"
#include "shared_memory.cuh"

namespace {

void shared_memory(cml::BenchContext& ctx) {
  const cml::DeviceInfo& device = ctx.device;
  cml::BenchReport& report = ctx.report;
  const int n = static_cast<int>(ctx.args.get_int("n"));
  const int radius = static_cast<int>(ctx.args.get_int("radius"));
  const std::size_t count = static_cast<std::size_t>(n);
  cml::DeviceBuffer<float> d_in(count), d_base(count), d_out(count);
  cml::FreshInputs inputs;
  inputs.uniform(d_in);
  // Each output is 2·radius+1 additions and a multiply; DRAM must at least read the input
  // once and write the output once.
  const cml::Work work{(2.0 * radius + 1.0) * n, 2.0 * count * sizeof(float)};

  // Expected: the global-only blur's output for the same inputs. A sum of 2·radius+1
  // inputs in [-1, 1) and a multiply, whose order a fair kernel may change: compared
  // within the float-sum bound (the mean of |input| is at most 1). Each output's sum is
  // fixed once the kernel is written, so a second run must give the same bits.
  const cml::Check check =
      cml::Check::within(cml::sum_tolerance(static_cast<std::size_t>(2 * radius + 2), 1.0),
                         cml::Determinism::Require, "out");
  const float* in = d_in.data();
  const cml::TimedCase global_only{"blur_global",
                                   [in, out = d_base.data(), n, radius](const cml::Sample&) {
                                     lab03::blur_global(in, out, n, radius);
                                   },
                                   cml::device_array(d_base)};

  const auto limits = lab03::limits_of(device);
  const int full_occupancy = std::max(1, device.max_threads_per_sm / lab03::kBlurThreads);
  const auto compare_tile = [&](const std::string& name, int tile, int blocks_per_sm) {
    report.param(name + "_tile", tile);
    report.param(name + "_shared_bytes",
                 static_cast<double>((static_cast<std::size_t>(tile) + 2 * radius) *
                                     sizeof(float)));
    report.param(name + "_blocks_per_sm_planned", blocks_per_sm);
    if (tile < 1) {
      std::cerr << name << " not timed: the tile chooser gave " << tile << "\n";
      return;
    }
    cml::Measurement m;
    m.baseline = global_only;
    m.candidate = cml::TimedCase{name,
                                 [in, out = d_out.data(), n, radius, tile](const cml::Sample&) {
                                   lab03::blur_shared(in, out, n, radius, tile);
                                 },
                                 cml::device_array(d_out)};
    m.inputs = &inputs;
    m.check = check;
    const auto t = ctx.harness.time_pair(m);
    report.add_comparison(name, t, work);
    std::cerr << name << " (tile " << tile << "): " << cml::summary(t) << "\n";
  };

  // The scored comparison: the tile that leaves room for a full SM of 256-thread blocks.
  const auto plan = lab03::plan_blur_tile(limits, radius, full_occupancy);
  compare_tile("blur_shared", static_cast<int>(ctx.args.get_int("tile", plan.tile)),
               full_occupancy);
  // The largest tile: one block per SM, opting in to the whole per-block limit. Fewer
  // resident threads and less overlap of loading with computing: measure what it costs.
  const auto big = lab03::plan_blur_tile(limits, radius, 1);
  compare_tile("blur_shared_one_block_per_sm", big.tile, 1);
}

}  // namespace

CML_BENCH(shared_memory)
    .param("n", 1 << 26, "N", "elements blurred")
    .param("radius", 8, "R", "the blur's radius")
    .option("tile", "T",
            "the scored comparison's tile (default: plan_blur_tile for full "
            "occupancy on this GPU)");
