// Lab 04 bench: the naive baseline against the tiled kernels, interleaved per the project's
// timing protocol (common/include/cml/timing.hpp: fresh inputs for every pair, every output
// poisoned before and verified whole on the GPU after every run, host-time cross-check,
// launches counted), with cuBLAS SGEMM timed alone as a yardstick. The expected result of a
// tiled kernel is the naive kernel's output for the same inputs (given code); cuBLAS is
// checked against a naive run on its inputs. Prints one JSON document.
//   labNN_bench_<variant> [--n 4096] [--tile T] [--json PATH] [--seed N] ...
#include <cublas_v2.h>

#include <iostream>
#include <string>
#include <utility>

#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/gpu_verify.hpp"
#include "tiled_matmul.cuh"

namespace {

using Product = void (*)(const float*, const float*, float*, int);

void naive(const float* a, const float* b, float* c, int n) { lab04::matmul_naive(a, b, c, n); }
void tiled(const float* a, const float* b, float* c, int n) { lab04::matmul_tiled(a, b, c, n); }

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
    cml::DeviceBuffer<float> d_a(count), d_b(count), d_base(count), d_c(count);
    cml::FreshInputs inputs;  // A and B, new values for every pair
    inputs.uniform(d_a);
    inputs.uniform(d_b);
    cml::Harness harness(device.l2_bytes, args.timing);
    cml::BenchReport report(CML_LAB, CML_VARIANT, args, device, harness.flush_bytes());
    report.param("n", n);
    const cml::Work work{2.0 * n * static_cast<double>(n) * n, 3.0 * count * sizeof(float)};

    // Each element is a float sum of n products whose magnitudes |a||b| average 1/4 for
    // inputs uniform in [-1, 1). A fixed-order tiled product is deterministic, but a fair
    // kernel may sum in another order (or split the sum): determinism is reported only.
    const cml::Check check = cml::Check::within(cml::sum_tolerance(n, n / 4.0),
                                                cml::Determinism::Report, "C", n);
    const auto call = [&](std::string name, cml::DeviceBuffer<float>& out, auto fn) {
      const float* a = d_a.data();
      const float* b = d_b.data();
      float* c = out.data();
      return cml::TimedCase{std::move(name), [=](const cml::Sample&) { fn(a, b, c); },
                            cml::device_array(out)};
    };
    const auto product = [n](Product fn) {
      return [n, fn](const float* a, const float* b, float* c) { fn(a, b, c, n); };
    };
    const cml::TimedCase baseline = call("naive", d_base, product(naive));

    double tiled_ms = 0;
    {
      cml::Measurement m;
      m.baseline = baseline;
      m.candidate = call("tiled", d_c, product(tiled));
      m.inputs = &inputs;
      m.check = check;
      const auto t = harness.time_pair(m);
      tiled_ms = t.candidate.ms.median;
      report.add_comparison("tiled", t, work);
      std::cerr << "tiled: " << cml::summary(t) << "\n";
    }

    const int tile = static_cast<int>(
        args.get_int("tile", lab04::choose_tile(device.max_threads_per_block,
                                                device.shared_per_block)));
    report.param("dynamic_tile", tile);
    if (tile >= 1 && tile <= lab04::kMaxTile && n % tile == 0) {
      cml::Measurement m;
      m.baseline = baseline;
      m.candidate = call("tiled_dynamic", d_c, [n, tile](const float* a, const float* b, float* c) {
        lab04::matmul_tiled_dynamic(a, b, c, n, tile);
      });
      m.inputs = &inputs;
      m.check = check;
      const auto t = harness.time_pair(m);
      report.add_comparison("tiled_dynamic", t, work);
      std::cerr << "tiled_dynamic: " << cml::summary(t) << "\n";
    } else {
      std::cerr << "tiled_dynamic not timed: choose_tile gave " << tile << "\n";
    }

    // cuBLAS SGEMM, FP32 without TF32, as a yardstick, checked against the naive kernel run
    // (untimed) on the same inputs. Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ, so the
    // operands swap. Its kernels are launched by the library, past the launch counter.
    cublasHandle_t handle = nullptr;
    if (cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS) {
      cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
      cml::Measurement m;
      m.candidate = call("cublas_sgemm", d_c, [n, handle](const float* a, const float* b, float* c) {
        const float one = 1.0f, zero = 0.0f;
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n);
      });
      m.reference = baseline;
      m.inputs = &inputs;
      m.check = cml::Check::within(check.tolerance, cml::Determinism::Off, "C", n);
      const auto t = harness.time_single(m);
      report.add_case("cublas_sgemm", t, work);
      if (tiled_ms > 0) report.metric("tiled_fraction_of_cublas", t.result.ms.median / tiled_ms);
      std::cerr << "cublas_sgemm: " << cml::summary(t) << "\n";
      cublasDestroy(handle);
    }
    return report.write();
  } catch (const std::exception& err) {
    std::cerr << "bench failed: " << err.what() << "\n";
    return 1;
  }
}
