// Lab 07 bench: the pointer chase launched with the baseline's configuration against the
// student's, interleaved per the project's timing protocol (common/include/cml/timing.hpp:
// fresh table and seed for every pair, every output verified whole on the GPU, host-time
// cross-check, launches counted); then the same chase over a sweep of block sizes and launch
// bounds, each timed alone (checked against the baseline's output for the same inputs),
// with the occupancy the runtime predicts for it: the throughput-against-occupancy curve.
// Prints one JSON document.
//   lab07_bench_<variant> [--lines-log2 21] [--warps 65536] [--rounds 2] [--sweep 0|1]
//                         [--json PATH] ...
#include <cuda_runtime.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "chase.cuh"
#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/check.hpp"
#include "cml/gpu_verify.hpp"
#include "cml/kernel_query.hpp"
#include "occupancy.cuh"

namespace {

using lab07::ChaseParams;
using Kernel = void (*)(const std::uint32_t*, std::uint32_t*, ChaseParams);

__global__ void sweep_unbounded(const std::uint32_t* __restrict__ table,
                                std::uint32_t* __restrict__ out, ChaseParams p) {
  lab07::chase_warp(table, out, p);
}

template <int kThreads, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, lab07::arch_min_blocks(kThreads, kMinBlocks))
    sweep_bounded(const std::uint32_t* __restrict__ table, std::uint32_t* __restrict__ out,
                  ChaseParams p) {
  lab07::chase_warp(table, out, p);
}

struct SweepPoint {
  std::string name;
  Kernel kernel;
  int block;
};

std::vector<SweepPoint> sweep_points() {
  return {{"unbounded_b32", sweep_unbounded, 32},
          {"unbounded_b128", sweep_unbounded, 128},
          {"unbounded_b256", sweep_unbounded, 256},
          {"unbounded_b512", sweep_unbounded, 512},
          {"bounds32x32_b32", sweep_bounded<32, 32>, 32},
          {"bounds256x4_b256", sweep_bounded<256, 4>, 256},
          {"bounds256x5_b256", sweep_bounded<256, 5>, 256},
          {"bounds256x6_b256", sweep_bounded<256, 6>, 256},
          {"bounds256x8_b256", sweep_bounded<256, 8>, 256},
          {"bounds128x16_b128", sweep_bounded<128, 16>, 128},
          {"bounds64x32_b64", sweep_bounded<64, 32>, 64},
          {"bounds512x4_b512", sweep_bounded<512, 4>, 512},
          {"bounds1024x2_b1024", sweep_bounded<1024, 2>, 1024}};
}

// Occupancy the runtime predicts for `kernel` launched with `block` threads. The kernel may be
// the runner's (the grader's bench): cml/kernel_query.hpp asks the process that holds it.
double predicted_occupancy(const void* kernel, int block, const cml::DeviceInfo& device) {
  const int blocks = cml::max_active_blocks(kernel, block, 0);
  const int warps = blocks * ((block + device.warp_size - 1) / device.warp_size);
  return static_cast<double>(warps) / (device.max_threads_per_sm / device.warp_size);
}

int registers_of(const void* kernel) { return cml::func_attributes(kernel).numRegs; }

void occupancy(cml::BenchContext& ctx) {
  const cml::DeviceInfo& device = ctx.device;
  cml::BenchReport& report = ctx.report;
  cml::Harness& harness = ctx.harness;
  const int lines_log2 = static_cast<int>(ctx.args.get_int("lines-log2"));
  ChaseParams p;
  p.line_mask = static_cast<std::uint32_t>((std::size_t{1} << lines_log2) - 1);
  p.warps = static_cast<int>(ctx.args.get_int("warps"));
  p.rounds = static_cast<int>(ctx.args.get_int("rounds"));
  // The table (random words) and the key schedule's seed are new for every pair: the table
  // is regenerated on the GPU, the seed derived from the pair's key.
  cml::DeviceBuffer<std::uint32_t> d_table((std::size_t{1} << lines_log2) * lab07::kWarpSize);
  cml::FreshInputs inputs;
  inputs.bits(d_table);
  const auto params = [p](const cml::Sample& s) {
    ChaseParams q = p;
    q.seed = static_cast<std::uint32_t>(s.key >> 32);
    return q;
  };
  const std::size_t words = static_cast<std::size_t>(p.warps) * lab07::kWarpSize;
  cml::DeviceBuffer<std::uint32_t> d_base(words), d_out(words);

  report.param("lines", static_cast<double>(std::size_t{1} << lines_log2));
  // Every step moves one 128-byte line; the rate says how many lines per second the SMs
  // keep coming, which is what more resident warps raise.
  const cml::Work work{0.0, static_cast<double>(p.warps) * p.rounds * lab07::kChaseKeys * 128.0};

  const auto base_cfg = lab07::chase_baseline_config();
  const auto tuned_cfg = lab07::chase_tuned_config();
  const double base_occ = predicted_occupancy(base_cfg.kernel, base_cfg.block_threads, device);
  const double tuned_occ = predicted_occupancy(tuned_cfg.kernel, tuned_cfg.block_threads, device);
  report.metric("baseline_block_threads", base_cfg.block_threads);
  report.metric("baseline_registers", registers_of(base_cfg.kernel));
  report.metric("baseline_predicted_occupancy", base_occ);
  report.metric("tuned_block_threads", tuned_cfg.block_threads);
  report.metric("tuned_registers", registers_of(tuned_cfg.kernel));
  report.metric("tuned_predicted_occupancy", tuned_occ);

  // Integer arithmetic: every launch configuration gives the same words, so every output is
  // compared bit for bit with the baseline's (given code) for the same table and seed.
  const std::uint32_t* table = d_table.data();
  const cml::TimedCase baseline{"baseline",
                                [=, out = d_base.data()](const cml::Sample& s) {
                                  lab07::chase_baseline(table, out, params(s));
                                },
                                cml::device_array(d_base)};
  {
    cml::Measurement m;
    m.baseline = baseline;
    m.candidate = cml::TimedCase{"tuned",
                                 [=, out = d_out.data()](const cml::Sample& s) {
                                   lab07::chase_tuned(table, out, params(s));
                                 },
                                 cml::device_array(d_out)};
    m.inputs = &inputs;
    m.check = cml::Check::exact_match("out", lab07::kWarpSize);
    const auto t = harness.time_pair(m);
    report.add_comparison("tuned", t, work);
    std::cerr << "tuned (predicted occupancy " << base_occ * 100 << " % -> " << tuned_occ * 100
              << " %): " << cml::summary(t) << "\n";
  }

  // --sweep 0: the tuned comparison alone (what the profiler's run needs).
  if (ctx.args.get_int("sweep") == 0) return;
  cml::Plot& plot = report.plot("throughput_vs_occupancy", "throughput vs occupancy",
                                "predicted occupancy (resident warps / maximum)", "GB/s");
  plot.lines = false;
  plot.x_min = 0.0;
  plot.x_max = 1.0;
  plot.caption = "Each dot is one block size / register bound (hover for its name).";
  for (const auto& point : sweep_points()) {
    const void* fn = reinterpret_cast<const void*>(point.kernel);
    const double occ = predicted_occupancy(fn, point.block, device);
    const int regs = registers_of(fn);
    if (occ <= 0) {
      std::cerr << point.name << ": does not fit on this GPU, skipped\n";
      continue;
    }
    const unsigned grid = static_cast<unsigned>(
        (static_cast<long long>(p.warps) * lab07::kWarpSize + point.block - 1) / point.block);
    const Kernel kernel = point.kernel;
    const int block = point.block;
    cml::Measurement m;
    m.candidate = cml::TimedCase{point.name,
                                 [=, out = d_out.data()](const cml::Sample& s) {
                                   kernel<<<grid, block>>>(table, out, params(s));
                                   CUDA_CHECK_LAUNCH();
                                 },
                                 cml::device_array(d_out)};
    m.reference = baseline;
    m.inputs = &inputs;
    m.check = cml::Check::exact_match("out", lab07::kWarpSize);
    const auto t = harness.time_single(m);
    report.add_case(point.name, t, work);
    report.metric(point.name + ".predicted_occupancy", occ);
    report.metric(point.name + ".registers", regs);
    plot.case_point(occ, point.name, "gbytes_per_s",
                    point.name + ", " + std::to_string(regs) + " registers");
    std::cerr << point.name << ": " << regs << " registers, predicted occupancy " << occ * 100
              << " %; " << cml::summary(t) << "\n";
  }
}

}  // namespace

CML_BENCH(occupancy)
    .option("lines-log2", 21, "L", "the table holds 2^L 128-byte lines; recorded as lines")
    .param("warps", 65536, "W", "chains chased, one per warp")
    .param("rounds", 2, "R", "rounds of 64 steps per chain")
    .option("sweep", 1, "0|1", "the sweep of block sizes and launch bounds after the comparison");
