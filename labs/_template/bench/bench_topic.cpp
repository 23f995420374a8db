// Lab NN bench: the given baseline against the student's kernel, interleaved per the
// project's timing protocol (common/include/cml/timing.hpp: fresh inputs for every pair,
// every output poisoned before and verified whole on the GPU after every run, each call timed
// by the device's activity records, launches counted). The expected result of the student's
// call is the baseline's output for the same inputs (the baseline runs after the student's
// call). The harness's main (common/src/bench_main.cpp) parses the options declared below,
// makes the harness and the report and writes one JSON document; labs/04_tiled_matmul/bench
// shows more (several comparisons, a yardstick timed alone, options that pick what runs).
//   labNN_bench_<variant> [--n N] [--json PATH] [--seed N] ...
#include <iostream>

#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/gpu_verify.hpp"
#include "topic.cuh"

namespace {

void scale(cml::BenchContext& ctx) {
  const int n = static_cast<int>(ctx.args.get_int("n"));
  const std::size_t count = static_cast<std::size_t>(n);
  cml::DeviceBuffer<float> d_x(count), d_base(count), d_y(count);
  cml::FreshInputs inputs;  // new values of x for every pair
  inputs.uniform(d_x);
  const cml::Work work{static_cast<double>(count), 2.0 * count * sizeof(float)};

  const float* x = d_x.data();
  float* base = d_base.data();
  float* y = d_y.data();
  cml::Measurement m;
  m.baseline = {"baseline", [=](const cml::Sample&) { labNN::scale_baseline(x, base, n, 2.0f); },
                cml::device_array(d_base)};
  m.candidate = {"scale", [=](const cml::Sample&) { labNN::scale(x, y, n, 2.0f); },
                 cml::device_array(d_y)};
  m.inputs = &inputs;
  m.check = cml::Check::exact_match("y");  // one multiply per element: bit for bit
  const auto t = ctx.harness.time_pair(m);
  ctx.report.add_comparison("scale", t, work);
  std::cerr << "scale: " << cml::summary(t) << "\n";
}

}  // namespace

CML_BENCH(scale).param("n", 1 << 26, "N", "elements");
