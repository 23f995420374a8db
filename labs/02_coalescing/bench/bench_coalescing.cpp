// Lab 02 bench: the uncoalesced baseline against the student's fixed mapping (interleaved,
// scored), then effective bandwidth of a read at strides 1-32 floats beside a plain copy of
// the same size. Timing protocol: common/include/cml/timing.hpp (fresh inputs for every
// pair, every output verified whole on the GPU, activity-record timing, launches counted).
// Prints one JSON document.
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
#include "cml/gpu_verify.hpp"
#include "coalescing.cuh"

namespace {

constexpr float kFactor = 3.0f;
constexpr int kMaxStride = 32;

// The scored comparison: same operation, same launch shape, only the mapping differs.
// out = factor·in is one multiply per element, so the candidate's output must equal the
// baseline's bit for bit.
void compare_mappings(cml::BenchContext& ctx, int rows, int cols) {
  const std::size_t elements = static_cast<std::size_t>(rows) * cols;
  cml::DeviceBuffer<float> d_in(elements), d_base(elements), d_cand(elements);
  cml::FreshInputs inputs;
  inputs.uniform(d_in);
  using Scale = void (*)(const float*, float*, int, int, float);
  const auto call = [&](const std::string& name, cml::DeviceBuffer<float>& out, Scale scale) {
    const float* in = d_in.data();
    float* o = out.data();
    return cml::TimedCase{name,
                          [in, o, scale, rows, cols](const cml::Sample&) {
                            scale(in, o, rows, cols, kFactor);
                          },
                          cml::device_array(out)};
  };
  cml::Measurement m;
  m.baseline = call("uncoalesced", d_base, lab02::scale_uncoalesced);
  m.candidate = call("coalesced", d_cand, lab02::scale_coalesced);
  m.inputs = &inputs;
  m.check = cml::Check::exact_match("out", static_cast<std::size_t>(cols));
  const auto t = ctx.harness.time_pair(m);
  const cml::Work work{static_cast<double>(elements), 2.0 * elements * sizeof(float)};
  ctx.report.add_comparison("coalesced", t, work);
  std::cerr << "coalesced: " << cml::summary(t) << "\n";
}

// Bandwidth against stride: `count` floats read `stride` apart and written contiguously,
// beside a plain device-to-device copy of `count` floats. Effective bandwidth counts only
// the bytes the kernel needs (count floats in, count out), so the fraction of the copy's
// bandwidth is the copy's time over the strided read's. Each output is checked against
// the input itself (every stride-th element), regenerated for every sample.
void bandwidth_vs_stride(cml::BenchContext& ctx, std::size_t count, int only_stride) {
  cml::BenchReport& report = ctx.report;
  const int max_stride = only_stride > 0 ? only_stride : kMaxStride;
  const std::size_t span = (count - 1) * max_stride + 1;
  cml::DeviceBuffer<float> d_in(span), d_out(count);
  cml::FreshInputs inputs;
  inputs.uniform(d_in);
  const cml::Work work{0.0, 2.0 * count * sizeof(float)};
  const auto measure = [&](const std::string& name, const cml::Launch& launch, int stride) {
    cml::Measurement m;
    m.candidate = cml::TimedCase{name, launch, cml::device_array(d_out)};
    m.expected = cml::device_array(d_in);
    m.map = cml::IndexMap::strided(static_cast<std::size_t>(stride));
    m.inputs = &inputs;
    m.check = cml::Check::exact_match("out");
    return ctx.harness.time_single(m);
  };

  float* out = d_out.data();
  const float* in = d_in.data();
  const auto copy = measure(
      "copy",
      [=](const cml::Sample&) {
        CUDA_CHECK(cudaMemcpyAsync(out, in, count * sizeof(float), cudaMemcpyDeviceToDevice, 0));
      },
      1);
  report.add_case("copy", copy, work);
  std::cerr << "copy: " << cml::summary(copy) << "\n";

  std::vector<int> strides = {1, 2, 4, 8, 16, 32};
  if (only_stride > 0) strides = {only_stride};
  cml::Plot& plot =
      report.plot("bandwidth_vs_stride", "bandwidth vs stride", "stride (elements)", "GB/s");
  plot.log2_x = true;
  plot.caption =
      "Bandwidth falls as the stride spreads a warp's accesses over more "
      "sectors; the dashed line is a plain copy.";
  plot.ceiling("copy", "copy kernel");
  for (const int stride : strides) {
    const std::string name = "stride_" + std::to_string(stride);
    const auto t = measure(
        name, [=](const cml::Sample&) { lab02::strided_read(in, out, count, stride); }, stride);
    report.add_case(name, t, work);
    plot.case_point(stride, name);
    report.metric(name + "_fraction_of_copy", copy.result.ms.median / t.result.ms.median);
    std::cerr << name << ": " << 2.0 * count * sizeof(float) / t.result.ms.median * 1e-6
              << " GB/s effective, " << copy.result.ms.median / t.result.ms.median
              << " of a plain copy; " << cml::summary(t) << "\n";
  }
}

void coalescing(cml::BenchContext& ctx) {
  compare_mappings(ctx, static_cast<int>(ctx.args.get_int("rows")),
                   static_cast<int>(ctx.args.get_int("cols")));
  bandwidth_vs_stride(ctx, static_cast<std::size_t>(ctx.args.get_int("count")),
                      static_cast<int>(ctx.args.get_int("stride")));
}

}  // namespace

CML_BENCH(coalescing)
    .param("rows", 8192, "R", "rows of the matrix the scored comparison scales")
    .param("cols", 8192, "C", "its columns")
    .param("count", 1 << 24, "N", "outputs of each strided read")
    .option("stride", 0, "S", "read at this stride only, 1..32; 0: at 1 2 4 8 16 and 32")
    .check([](const cml::BenchArgs& args) -> std::string {
      const long long stride = args.get_int("stride");
      if (args.get_int("rows") < 1 || args.get_int("cols") < 1 || args.get_int("count") < 1 ||
          stride < 0 || stride > kMaxStride) {
        return "bad sizes: rows, cols and count must be positive, stride 1.." +
               std::to_string(kMaxStride);
      }
      return "";
    });
