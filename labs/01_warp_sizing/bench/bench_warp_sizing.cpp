// Lab 01 bench: the given memory-bound scale kernel at the bad block size (kBadBlockSize
// threads) against the block size choose_block_size() picks for this GPU, interleaved per the
// project's timing protocol; a sweep of throughput against block size; and the divergent
// warps of a 200x150 image in 16x16 blocks, counted on the GPU with warp votes.
//   labNN_bench_<variant> [--n N] [--sweep 0|1] [--json PATH] [--seed N] [--quick] ...
#include <iostream>
#include <string>
#include <vector>

#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/check.hpp"
#include "cml/random.hpp"
#include "warp_sizing.cuh"

namespace {

constexpr int kInputSets = 2;  // inputs rotate between samples
constexpr float kFactor = 2.5f;

// Checks every element of the output of the last timed run (set `sample`): a single float
// multiply, so the GPU's result must equal the CPU's bit for bit.
cml::Verification verify(const std::vector<std::vector<float>>& h_x, int sample,
                         const cml::DeviceBuffer<float>& d_y) {
  const auto& x = h_x[sample % kInputSets];
  const auto y = d_y.download();
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (y[i] != kFactor * x[i]) {
      if (wrong++ == 0) first = i;
    }
  }
  if (wrong == 0) return {true, true, "every element equals a * x"};
  return {true, false, std::to_string(wrong) + " of " + std::to_string(y.size()) +
                           " elements are wrong, the first at index " + std::to_string(first)};
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = cml::parse_bench_args(
      argc, argv, {"n", "sweep"},
      "usage: lab01 bench [--n N (elements, default 67108864)] [--sweep 0|1 (default 1)]");
  const int n = static_cast<int>(args.get_int("n", 1 << 26));
  const cml::DeviceInfo device = cml::bench_device();
  try {
    const std::size_t count = static_cast<std::size_t>(n);
    std::vector<std::vector<float>> h_x;
    std::vector<cml::DeviceBuffer<float>> d_x;
    for (int s = 0; s < kInputSets; ++s) {
      h_x.push_back(cml::random_floats(count, cml::derive_seed(args.seed, s)));
      d_x.emplace_back(count);
      d_x.back().upload(h_x.back());
    }
    cml::Harness harness(device.l2_bytes, args.timing);
    cml::BenchReport report(CML_LAB, CML_VARIANT, args, device, harness.flush_bytes());
    report.param("n", n);
    report.param("bad_block_size", lab01::kBadBlockSize);
    const cml::Work work{static_cast<double>(count), 2.0 * count * sizeof(float)};

    // Baseline and candidate write separate outputs, poisoned once, so the output of the
    // last timed run of each is what gets checked.
    cml::DeviceBuffer<float> d_base(count), d_cand(count);
    auto timed = [&d_x, n](const std::string& name, cml::DeviceBuffer<float>& out,
                           int threads) {
      float* y = out.data();
      return cml::TimedCase{name, [&d_x, y, n, threads](int sample) {
                              lab01::scale(d_x[sample % kInputSets].data(), y, n, kFactor,
                                           threads);
                            }};
    };
    const auto last = [](const cml::SampleStats& s) {
      return static_cast<int>(s.samples.size()) - 1;
    };

    const int chosen = lab01::choose_block_size(
        device.max_threads_per_block, device.max_threads_per_sm, device.max_blocks_per_sm);
    report.param("chosen_block_size", chosen);
    report.metric("chosen_block_size", chosen);
    if (chosen >= 1 && chosen <= device.max_threads_per_block) {
      const std::string name = "block_" + std::to_string(chosen);
      for (int bad : {lab01::kBadBlockSize, 36}) {
        d_base.poison();
        d_cand.poison();
        const auto t = harness.time_pair(timed("block_" + std::to_string(bad), d_base, bad),
                                         timed(name, d_cand, chosen));
        const std::string comparison =
            bad == lab01::kBadBlockSize ? "chosen_block" : "chosen_vs_36";
        report.add_comparison(comparison, t, work, verify(h_x, last(t.baseline_ms), d_base),
                              verify(h_x, last(t.candidate_ms), d_cand));
        std::cerr << comparison << ": " << bad << "-thread blocks " << t.baseline_ms.median
                  << " ms, " << chosen << "-thread blocks " << t.candidate_ms.median
                  << " ms, speedup " << t.speedup.median << "x\n";
      }
    } else {
      std::cerr << "no comparison: choose_block_size returned " << chosen << "\n";
    }

    if (args.get_int("sweep", 1) != 0) {
      for (int threads : {14, 32, 36, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024}) {
        if (threads > device.max_threads_per_block) break;
        d_cand.poison();
        bool converged = false;
        const auto ms = harness.time_single(
            timed("block_" + std::to_string(threads), d_cand, threads), &converged);
        report.add_case("sweep_block_" + std::to_string(threads), ms, converged, work,
                        verify(h_x, last(ms), d_cand));
        std::cerr << "sweep " << threads << " threads: " << ms.median << " ms, "
                  << work.bytes / ms.median * 1e-6 << " GB/s\n";
      }
    }

    // Divergence: the student's warp-vote count against their prediction and the truth.
    const int width = 200, height = 150;
    const dim3 block(16, 16);
    cml::DeviceBuffer<unsigned long long> d_counts(2);
    lab01::measure_divergence(width, height, block, d_counts.data());
    const auto counts = d_counts.download();
    const lab01::WarpCount predicted = lab01::predict_divergence(width, height, block);
    report.metric("warps_200x150_16x16_measured", static_cast<double>(counts[lab01::kWarpsSeen]));
    report.metric("divergent_warps_200x150_16x16_measured",
                  static_cast<double>(counts[lab01::kDivergentSeen]));
    report.metric("divergent_warps_200x150_16x16_predicted",
                  static_cast<double>(predicted.divergent));
    std::cerr << "200x150 image, 16x16 blocks: measured " << counts[lab01::kWarpsSeen]
              << " warps, " << counts[lab01::kDivergentSeen] << " divergent; predicted "
              << predicted.warps << " warps, " << predicted.divergent << " divergent\n";
    return report.write();
  } catch (const std::exception& err) {
    std::cerr << "bench failed: " << err.what() << "\n";
    return 1;
  }
}
