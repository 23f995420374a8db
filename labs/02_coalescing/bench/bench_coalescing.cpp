// Lab 02 bench: the uncoalesced baseline against the student's fixed mapping (interleaved,
// scored), then effective bandwidth of a read at strides 1-32 floats beside a plain copy of
// the same size. Prints one JSON document.
//   lab02_bench_<variant> [--rows R --cols C (default 8192)] [--count N (default 2^24)]
//                         [--stride S (only this stride; default: 1 2 4 8 16 32)] [--json PATH] ...
#include <cuda_runtime.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/check.hpp"
#include "cml/compare.hpp"
#include "cml/random.hpp"
#include "coalescing.cuh"

namespace {

constexpr int kInputSets = 2;  // inputs rotate between samples
constexpr float kFactor = 3.0f;
constexpr int kMaxStride = 32;

// Checks a scale output against factor·input of the set the last sample used.
cml::Verification verify_scale(const std::vector<std::vector<float>>& inputs, int sample,
                               const cml::DeviceBuffer<float>& d_out, int rows, int cols,
                               std::uint64_t seed) {
  const auto& in = inputs[sample % kInputSets];
  std::vector<double> expected(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) expected[i] = static_cast<double>(kFactor) * in[i];
  cml::CompareContext ctx;
  ctx.name = "out";
  ctx.cols = static_cast<std::size_t>(cols);
  ctx.size = std::to_string(rows) + "x" + std::to_string(cols);
  ctx.seed = seed;
  const auto result = cml::compare(d_out.download(), expected, cml::Tolerance{1e-6, 0.0}, ctx);
  return {true, result.ok, result.ok ? "every element matches" : result.message};
}

// The sweep's input holds value(j) at index j: distinct for 2^24 consecutive indices and
// exact in a float, so a read from the wrong index shows.
float pattern_value(std::size_t j) { return static_cast<float>(j & 0xFFFFFFu); }

cml::Verification verify_strided(const cml::DeviceBuffer<float>& d_out, int stride) {
  const auto out = d_out.download();
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float want = pattern_value(i * static_cast<std::size_t>(stride));
    if (out[i] != want) {
      return {true, false,
              "out[" + std::to_string(i) + "] = " + std::to_string(out[i]) + ", expected " +
                  std::to_string(want) + " (stride " + std::to_string(stride) + ")"};
    }
  }
  return {true, true, "every element matches"};
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = cml::parse_bench_args(
      argc, argv, {"rows", "cols", "count", "stride"},
      "usage: lab02 bench [--rows R] [--cols C] (scale comparison, default 8192x8192) "
      "[--count N] (sweep outputs, default 16777216) [--stride S] (one stride, 1..32)");
  const int rows = static_cast<int>(args.get_int("rows", 8192));
  const int cols = static_cast<int>(args.get_int("cols", 8192));
  const auto count = static_cast<std::size_t>(args.get_int("count", 1 << 24));
  const int only_stride = static_cast<int>(args.get_int("stride", 0));
  if (rows < 1 || cols < 1 || count < 1 || only_stride < 0 || only_stride > kMaxStride) {
    std::cerr << "bad sizes: rows, cols and count must be positive, stride 1.." << kMaxStride
              << "\n";
    return 2;
  }
  const cml::DeviceInfo device = cml::bench_device();
  try {
    cml::Harness harness(device.l2_bytes, args.timing);
    cml::BenchReport report(CML_LAB, CML_VARIANT, args, device, harness.flush_bytes());
    report.param("rows", rows);
    report.param("cols", cols);
    report.param("count", static_cast<double>(count));
    const auto last = [](const cml::SampleStats& s) {
      return static_cast<int>(s.samples.size()) - 1;
    };

    // The scored comparison: same operation, same launch shape, only the mapping differs.
    {
      const std::size_t elements = static_cast<std::size_t>(rows) * cols;
      std::vector<std::vector<float>> h_in;
      std::vector<cml::DeviceBuffer<float>> d_in;
      for (int s = 0; s < kInputSets; ++s) {
        h_in.push_back(cml::random_floats(elements, cml::derive_seed(args.seed, s)));
        d_in.emplace_back(elements);
        d_in.back().upload(h_in.back());
      }
      // Separate outputs, poisoned once: each one's last timed run is what gets checked.
      cml::DeviceBuffer<float> d_base(elements), d_cand(elements);
      d_base.poison();
      d_cand.poison();
      const auto timed = [&](const std::string& name, float* out, auto scale) {
        return cml::TimedCase{name, [&d_in, out, scale, rows, cols](int sample) {
                                scale(d_in[sample % kInputSets].data(), out, rows, cols, kFactor);
                              }};
      };
      const auto t = harness.time_pair(
          timed("uncoalesced", d_base.data(), lab02::scale_uncoalesced),
          timed("coalesced", d_cand.data(), lab02::scale_coalesced));
      const cml::Work work{static_cast<double>(elements), 2.0 * elements * sizeof(float)};
      report.add_comparison("coalesced", t, work,
                            verify_scale(h_in, last(t.baseline_ms), d_base, rows, cols, args.seed),
                            verify_scale(h_in, last(t.candidate_ms), d_cand, rows, cols, args.seed));
      std::cerr << "uncoalesced " << t.baseline_ms.median << " ms, coalesced "
                << t.candidate_ms.median << " ms, speedup " << t.speedup.median << "x\n";
    }

    // Bandwidth against stride: `count` floats read `stride` apart and written contiguously,
    // beside a plain device-to-device copy of `count` floats. Effective bandwidth counts only
    // the bytes the kernel needs (count floats in, count out), so the fraction of the copy's
    // bandwidth is the copy's time over the strided read's.
    {
      const int max_stride = only_stride > 0 ? only_stride : kMaxStride;
      const std::size_t span = (count - 1) * max_stride + 1;
      cml::DeviceBuffer<float> d_in(span), d_out(count);
      const std::size_t chunk = std::size_t{1} << 24;
      std::vector<float> h_chunk(chunk);
      for (std::size_t j = 0; j < chunk; ++j) h_chunk[j] = pattern_value(j);
      for (std::size_t at = 0; at < span; at += chunk) {
        const std::size_t n = std::min(chunk, span - at);
        CUDA_CHECK(cudaMemcpy(d_in.data() + at, h_chunk.data(), n * sizeof(float),
                              cudaMemcpyHostToDevice));
      }
      const cml::Work work{0.0, 2.0 * count * sizeof(float)};

      d_out.poison();
      bool converged = false;
      const auto copy_ms = harness.time_single(
          cml::TimedCase{"copy", [&](int) {
                           CUDA_CHECK(cudaMemcpyAsync(d_out.data(), d_in.data(),
                                                      count * sizeof(float),
                                                      cudaMemcpyDeviceToDevice, 0));
                         }},
          &converged);
      report.add_case("copy", copy_ms, converged, work, verify_strided(d_out, 1));

      std::vector<int> strides = {1, 2, 4, 8, 16, 32};
      if (only_stride > 0) strides = {only_stride};
      for (const int stride : strides) {
        const std::string name = "stride_" + std::to_string(stride);
        d_out.poison();
        const auto ms = harness.time_single(
            cml::TimedCase{name, [&, stride](int) {
                             lab02::strided_read(d_in.data(), d_out.data(), count, stride);
                           }},
            &converged);
        report.add_case(name, ms, converged, work, verify_strided(d_out, stride));
        report.metric(name + "_fraction_of_copy", copy_ms.median / ms.median);
        std::cerr << name << ": " << 2.0 * count * sizeof(float) / ms.median * 1e-6
                  << " GB/s effective, " << copy_ms.median / ms.median << " of a plain copy\n";
      }
    }
    return report.write();
  } catch (const std::exception& err) {
    std::cerr << "bench failed: " << err.what() << "\n";
    return 1;
  }
}
