// Lab 06 bench: the naive transpose against the conflicted and the padded tile transposes,
// interleaved per the project's timing protocol; a plain copy and cudaMemcpy timed alone as
// yardsticks; and the clock64() cycles per shared-memory access at strides 1..32, the
// broadcast and the padded struct, beside the conflict degree the student's model predicts.
// Prints one JSON document.
//   labNN_bench_<variant> [--n 8192] [--probe-iterations 4096] [--json PATH] [--seed N] ...
#include <cuda_runtime.h>

#include <iostream>
#include <string>
#include <vector>

#include "bank_conflicts.cuh"
#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/check.hpp"
#include "cml/matmul_ref.hpp"
#include "cml/random.hpp"

namespace {

constexpr int kInputSets = 2;  // inputs rotate between samples

// Checks sampled rows of `d_out` against the input the last timed run (`sample`) used: for a
// transpose, row r of the output is column r of the input; for a copy, row r itself.
cml::Verification verify(const std::vector<std::vector<float>>& h_in, int sample,
                         const cml::DeviceBuffer<float>& d_out, int n, bool transposed) {
  const std::vector<float>& in = h_in[sample % kInputSets];
  const std::vector<float> out = d_out.download();
  for (const std::size_t r : cml::sample_rows(n, 16)) {
    for (int c = 0; c < n; ++c) {
      const std::size_t at = r * n + c;
      const float want = transposed ? in[static_cast<std::size_t>(c) * n + r] : in[at];
      if (out[at] != want) {
        return {true, false,
                "out[" + std::to_string(r) + "][" + std::to_string(c) + "] = " +
                    std::to_string(out[at]) + ", expected " + std::to_string(want) +
                    " (n=" + std::to_string(n) + ")"};
      }
    }
  }
  return {true, true, "output matches on sampled rows"};
}

int last(const cml::SampleStats& s) { return static_cast<int>(s.samples.size()) - 1; }

}  // namespace

int main(int argc, char** argv) {
  const auto args = cml::parse_bench_args(
      argc, argv, {"n", "probe-iterations"},
      "usage: lab06 bench [--n N (default 8192)] [--probe-iterations I (default 4096)]");
  const int n = static_cast<int>(args.get_int("n", 8192));
  const int probe_iterations = static_cast<int>(args.get_int("probe-iterations", 4096));
  const cml::DeviceInfo device = cml::bench_device();
  try {
    const std::size_t count = static_cast<std::size_t>(n) * n;
    std::vector<std::vector<float>> h_in;
    std::vector<cml::DeviceBuffer<float>> d_in;
    for (int s = 0; s < kInputSets; ++s) {
      h_in.push_back(cml::random_floats(count, cml::derive_seed(args.seed, s)));
      d_in.emplace_back(count);
      d_in.back().upload(h_in.back());
    }
    // One output per case, poisoned once, so each verification sees its own last timed run.
    cml::DeviceBuffer<float> d_naive(count), d_conflicted(count), d_padded(count), d_copy(count);
    for (auto* b : {&d_naive, &d_conflicted, &d_padded, &d_copy}) b->poison();

    cml::Harness harness(device.l2_bytes, args.timing);
    cml::BenchReport report(CML_LAB, CML_VARIANT, args, device, harness.flush_bytes());
    report.param("n", n);
    report.param("block", "32x8 threads, 4 elements per thread");
    const cml::Work work{0.0, 2.0 * count * sizeof(float)};  // read once, write once

    using Fn = void (*)(const float*, float*, int, int);
    auto timed = [&](const std::string& name, cml::DeviceBuffer<float>& out, Fn fn) {
      float* o = out.data();
      return cml::TimedCase{name, [&d_in, o, fn, n](int sample) {
                              fn(d_in[sample % kInputSets].data(), o, n, n);
                            }};
    };
    const auto naive = timed("naive", d_naive, lab06::transpose_naive);
    const auto conflicted = timed("tiled_conflicted", d_conflicted, lab06::transpose_tiled_conflicted);
    const auto padded = timed("tiled_padded", d_padded, lab06::transpose_tiled_padded);

    const auto compare = [&](const std::string& name, const cml::TimedCase& base,
                             cml::DeviceBuffer<float>& base_out, const cml::TimedCase& cand,
                             cml::DeviceBuffer<float>& cand_out) {
      const auto t = harness.time_pair(base, cand);
      report.add_comparison(name, t, work, verify(h_in, last(t.baseline_ms), base_out, n, true),
                            verify(h_in, last(t.candidate_ms), cand_out, n, true));
      std::cerr << name << ": " << base.name << " " << t.baseline_ms.median << " ms, "
                << cand.name << " " << t.candidate_ms.median << " ms, speedup "
                << t.speedup.median << "x\n";
      return t;
    };
    const auto t_conflicted = compare("conflicted", naive, d_naive, conflicted, d_conflicted);
    const auto t_padded = compare("padded", naive, d_naive, padded, d_padded);  // scored
    compare("padded_vs_conflicted", conflicted, d_conflicted, padded, d_padded);

    // Yardsticks: the same bytes moved with every access coalesced, by a kernel and by the
    // driver's device-to-device copy.
    bool converged = false;
    const auto copy = timed("copy", d_copy, lab06::copy_matrix);
    const auto copy_ms = harness.time_single(copy, &converged);
    report.add_case("copy", copy_ms, converged, work,
                    verify(h_in, last(copy_ms), d_copy, n, false));
    const cml::TimedCase memcpy_case{"memcpy_d2d", [&](int sample) {
      CUDA_CHECK(cudaMemcpyAsync(d_copy.data(), d_in[sample % kInputSets].data(),
                                 count * sizeof(float), cudaMemcpyDeviceToDevice, 0));
    }};
    d_copy.poison();
    const auto memcpy_ms = harness.time_single(memcpy_case, &converged);
    report.add_case("memcpy_d2d", memcpy_ms, converged, work,
                    verify(h_in, last(memcpy_ms), d_copy, n, false));
    report.metric("naive_fraction_of_copy", copy_ms.median / t_padded.baseline_ms.median);
    report.metric("conflicted_fraction_of_copy", copy_ms.median / t_conflicted.candidate_ms.median);
    report.metric("padded_fraction_of_copy", copy_ms.median / t_padded.candidate_ms.median);
    report.metric("padded_fraction_of_memcpy", memcpy_ms.median / t_padded.candidate_ms.median);

    // Cycles per warp-wide shared load against the stride between lanes, with the conflict
    // degree the (student's) model predicts for the same addresses.
    report.param("probe_iterations", probe_iterations);
    struct Probe {
      const char* name;
      int stride;
    };
    for (const Probe p : {Probe{"broadcast", 0}, Probe{"stride_1", 1}, Probe{"stride_2", 2},
                          Probe{"stride_4", 4}, Probe{"stride_8", 8}, Probe{"stride_16", 16},
                          Probe{"stride_32", 32}, Probe{"padded_struct", 33}}) {
      std::vector<std::uint32_t> addresses;
      for (int lane = 0; lane < lab06::kWarpSize; ++lane) {
        addresses.push_back(static_cast<std::uint32_t>(lane * p.stride * lab06::kBankWordBytes));
      }
      const double cycles = lab06::measure_cycles_per_access(p.stride, probe_iterations);
      report.metric(std::string("cycles_per_access_") + p.name, cycles);
      report.metric(std::string("predicted_degree_") + p.name, lab06::conflict_degree(addresses));
      std::cerr << p.name << ": " << cycles << " cycles per access\n";
    }
    return report.write();
  } catch (const std::exception& err) {
    std::cerr << "bench failed: " << err.what() << "\n";
    return 1;
  }
}
