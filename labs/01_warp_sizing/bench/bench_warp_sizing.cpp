// Lab 01 bench: the given memory-bound scale kernel at the bad block size (kBadBlockSize
// threads) against the block size choose_block_size() picks for this GPU, interleaved per the
// project's timing protocol (common/include/cml/timing.hpp: fresh inputs for every pair,
// every output verified whole on the GPU, activity-record timing, launches counted); a sweep
// of throughput against block size; and the divergent warps of a 200x150 image in 16x16
// blocks, counted on the GPU with warp votes.
//   labNN_bench_<variant> [--n N] [--sweep 0|1] [--json PATH] [--seed N] [--quick] ...
#include <iostream>
#include <string>
#include <vector>

#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/gpu_verify.hpp"
#include "warp_sizing.cuh"

namespace {

constexpr float kFactor = 2.5f;
constexpr int kReferenceBlock = 256;  // the sweep's expected output: scale() at 256 threads

void warp_sizing(cml::BenchContext& ctx) {
  const cml::DeviceInfo& device = ctx.device;
  cml::BenchReport& report = ctx.report;
  const int n = static_cast<int>(ctx.args.get_int("n"));
  const std::size_t count = static_cast<std::size_t>(n);
  cml::DeviceBuffer<float> d_x(count), d_base(count), d_cand(count);
  cml::FreshInputs inputs;
  inputs.uniform(d_x);
  report.param("bad_block_size", lab01::kBadBlockSize);
  const cml::Work work{static_cast<double>(count), 2.0 * count * sizeof(float)};

  // One float multiply per element: every block size gives the same bits.
  const cml::Check check = cml::Check::exact_match("y");
  const auto scale_with = [&](int threads, cml::DeviceBuffer<float>& out) {
    const float* x = d_x.data();
    float* y = out.data();
    return cml::TimedCase{"block_" + std::to_string(threads),
                          [x, y, n, threads](const cml::Sample&) {
                            lab01::scale(x, y, n, kFactor, threads);
                          },
                          cml::device_array(out)};
  };

  const int chosen = lab01::choose_block_size(device.max_threads_per_block,
                                              device.max_threads_per_sm, device.max_blocks_per_sm);
  report.param("chosen_block_size", chosen);
  report.metric("chosen_block_size", chosen);
  if (chosen >= 1 && chosen <= device.max_threads_per_block) {
    for (int bad : {lab01::kBadBlockSize, 36}) {
      cml::Measurement m;
      m.baseline = scale_with(bad, d_base);
      m.candidate = scale_with(chosen, d_cand);
      m.inputs = &inputs;
      m.check = check;
      const auto t = ctx.harness.time_pair(m);
      const std::string comparison = bad == lab01::kBadBlockSize ? "chosen_block" : "chosen_vs_36";
      report.add_comparison(comparison, t, work);
      std::cerr << comparison << ": " << cml::summary(t) << "\n";
    }
  } else {
    std::cerr << "no comparison: choose_block_size returned " << chosen << "\n";
  }

  if (ctx.args.get_int("sweep") != 0) {
    cml::Plot& plot =
        report.plot("throughput_vs_block", "throughput vs block size", "threads per block", "GB/s");
    plot.log2_x = true;
    plot.caption =
        "Block sizes that are not a multiple of 32 leave lanes idle; very small "
        "blocks are limited by how fast blocks start.";
    for (int threads : {14, 32, 36, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024}) {
      if (threads > device.max_threads_per_block) break;
      cml::Measurement m;
      m.candidate = scale_with(threads, d_cand);
      m.reference = scale_with(kReferenceBlock, d_base);
      m.inputs = &inputs;
      m.check = check;
      const auto t = ctx.harness.time_single(m);
      report.add_case("sweep_block_" + std::to_string(threads), t, work);
      plot.case_point(threads, "sweep_block_" + std::to_string(threads));
      std::cerr << "sweep " << threads << " threads: " << cml::summary(t) << ", "
                << work.bytes / t.result.ms.median * 1e-6 << " GB/s\n";
    }
  }

  // Divergence: the student's warp-vote count against their prediction and the truth.
  // Untimed; marked as the student's call for a profiler.
  const int width = 200, height = 150;
  const dim3 block(16, 16);
  cml::DeviceBuffer<unsigned long long> d_counts(2);
  {
    cml::NvtxRange range(cml::kNvtxCandidate);
    lab01::measure_divergence(width, height, block, d_counts.data());
  }
  const auto counts = d_counts.download();
  const lab01::WarpCount predicted = lab01::predict_divergence(width, height, block);
  report.metric("warps_200x150_16x16_measured", static_cast<double>(counts[lab01::kWarpsSeen]));
  report.metric("divergent_warps_200x150_16x16_measured",
                static_cast<double>(counts[lab01::kDivergentSeen]));
  report.metric("divergent_warps_200x150_16x16_predicted",
                static_cast<double>(predicted.divergent));
  std::cerr << "200x150 image, 16x16 blocks: measured " << counts[lab01::kWarpsSeen] << " warps, "
            << counts[lab01::kDivergentSeen] << " divergent; predicted " << predicted.warps
            << " warps, " << predicted.divergent << " divergent\n";
}

}  // namespace

CML_BENCH(warp_sizing)
    .param("n", 1 << 26, "N", "elements scaled")
    .option("sweep", 1, "0|1", "the sweep of throughput against block size");
