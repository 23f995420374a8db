// Lab 04 bench: the naive baseline against the tiled kernels, interleaved per the project's
// timing protocol, with cuBLAS SGEMM timed alone as a yardstick. Prints one JSON document.
//   labNN_bench_<variant> [--n 4096] [--tile T] [--json PATH] [--seed N] ...
#include <cublas_v2.h>

#include <iostream>
#include <string>
#include <vector>

#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/check.hpp"
#include "cml/compare.hpp"
#include "cml/matmul_ref.hpp"
#include "cml/random.hpp"
#include "tiled_matmul.cuh"

namespace {

constexpr int kInputSets = 2;  // inputs rotate between samples

struct Inputs {
  std::vector<std::vector<float>> h_a, h_b;
  std::vector<cml::DeviceBuffer<float>> d_a, d_b;
};

// Checks sampled rows of the output of the last timed run (set `sample`).
cml::Verification verify(const Inputs& in, int sample, const cml::DeviceBuffer<float>& d_c, int n,
                         std::uint64_t seed) {
  const int set = sample % kInputSets;
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

}  // namespace

int main(int argc, char** argv) {
  const auto args = cml::parse_bench_args(
      argc, argv, {"n", "tile"},
      "usage: lab04 bench [--n N (multiple of 32, default 4096)] [--tile T (default: "
      "choose_tile for this GPU)]");
  const int n = static_cast<int>(args.get_int("n", 4096));
  const cml::DeviceInfo device = cml::bench_device();
  try {
    const std::size_t count = static_cast<std::size_t>(n) * n;
    Inputs in;
    for (int s = 0; s < kInputSets; ++s) {
      in.h_a.push_back(cml::random_floats(count, cml::derive_seed(args.seed, 2 * s)));
      in.h_b.push_back(cml::random_floats(count, cml::derive_seed(args.seed, 2 * s + 1)));
      in.d_a.emplace_back(count);
      in.d_b.emplace_back(count);
      in.d_a.back().upload(in.h_a.back());
      in.d_b.back().upload(in.h_b.back());
    }
    cml::DeviceBuffer<float> d_c(count);
    cml::Harness harness(device.l2_bytes, args.timing);
    cml::BenchReport report(CML_LAB, CML_VARIANT, args, device, harness.flush_bytes());
    report.param("n", n);
    const cml::Work work{2.0 * n * static_cast<double>(n) * n, 3.0 * count * sizeof(float)};

    // Baseline and candidate write separate outputs, poisoned once, so the output of the
    // last timed run of each is what gets checked.
    cml::DeviceBuffer<float> d_base(count);
    d_base.poison();
    d_c.poison();
    auto timed = [&in](const std::string& name, cml::DeviceBuffer<float>& out, auto fn) {
      float* c = out.data();
      return cml::TimedCase{name, [&in, c, fn](int sample) {
                              const int set = sample % kInputSets;
                              fn(in.d_a[set].data(), in.d_b[set].data(), c);
                            }};
    };
    const auto last = [](const cml::SampleStats& s) {
      return static_cast<int>(s.samples.size()) - 1;
    };

    const auto naive = [n](const float* a, const float* b, float* c) {
      lab04::matmul_naive(a, b, c, n);
    };
    const auto tiled = [n](const float* a, const float* b, float* c) {
      lab04::matmul_tiled(a, b, c, n);
    };
    double tiled_ms = 0;
    {
      const auto t = harness.time_pair(timed("naive", d_base, naive), timed("tiled", d_c, tiled));
      tiled_ms = t.candidate_ms.median;
      report.add_comparison("tiled", t, work,
                            verify(in, last(t.baseline_ms), d_base, n, args.seed),
                            verify(in, last(t.candidate_ms), d_c, n, args.seed));
      std::cerr << "naive " << t.baseline_ms.median << " ms, tiled " << t.candidate_ms.median
                << " ms, speedup " << t.speedup.median << "x\n";
    }

    const int tile = static_cast<int>(
        args.get_int("tile", lab04::choose_tile(device.max_threads_per_block,
                                                device.shared_per_block)));
    report.param("dynamic_tile", tile);
    if (tile >= 1 && tile <= lab04::kMaxTile && n % tile == 0) {
      const auto dynamic = [n, tile](const float* a, const float* b, float* c) {
        lab04::matmul_tiled_dynamic(a, b, c, n, tile);
      };
      d_c.poison();
      const auto t = harness.time_pair(timed("naive", d_base, naive),
                                       timed("tiled_dynamic", d_c, dynamic));
      report.add_comparison("tiled_dynamic", t, work,
                            verify(in, last(t.baseline_ms), d_base, n, args.seed),
                            verify(in, last(t.candidate_ms), d_c, n, args.seed));
    } else {
      std::cerr << "tiled_dynamic not timed: choose_tile gave " << tile << "\n";
    }

    // cuBLAS SGEMM, FP32 without TF32, as a yardstick. Row-major C = A·B is column-major
    // Cᵀ = Bᵀ·Aᵀ, so the operands swap.
    cublasHandle_t handle = nullptr;
    if (cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS) {
      cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
      const auto sgemm = [n, handle](const float* a, const float* b, float* c) {
        const float one = 1.0f, zero = 0.0f;
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n);
      };
      d_c.poison();
      bool converged = false;
      const auto ms = harness.time_single(timed("cublas_sgemm", d_c, sgemm), &converged);
      report.add_case("cublas_sgemm", ms, converged, work,
                      verify(in, last(ms), d_c, n, args.seed));
      if (tiled_ms > 0) report.metric("tiled_fraction_of_cublas", ms.median / tiled_ms);
      cublasDestroy(handle);
    }
    return report.write();
  } catch (const std::exception& err) {
    std::cerr << "bench failed: " << err.what() << "\n";
    return 1;
  }
}
