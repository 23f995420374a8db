// Lab NN bench: see labs/04_tiled_matmul/bench for a complete one (baseline vs the
// student's kernel with cml::Harness::time_pair, written with cml::BenchReport). The harness
// regenerates the inputs for every pair (cml::FreshInputs), poisons and verifies every output
// on the GPU against the expected result for the same inputs, cross-checks the events with
// host time and counts the launches of each call (common/include/cml/timing.hpp).
#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/gpu_verify.hpp"
#include "topic.cuh"

int main(int argc, char** argv) {
  const auto args = cml::parse_bench_args(argc, argv, {"n"}, "usage: labNN bench [--n N]");
  const cml::DeviceInfo device = cml::bench_device();
  const int n = static_cast<int>(args.get_int("n", 1 << 26));
  cml::DeviceBuffer<float> x(n), y_base(n), y(n);
  cml::FreshInputs inputs;  // new values for every pair
  inputs.uniform(x);
  cml::Harness harness(device.l2_bytes, args.timing);
  cml::BenchReport report(CML_LAB, CML_VARIANT, args, device, harness.flush_bytes());
  cml::Measurement m;
  // TODO(new lab): the baseline is the lab's given, trusted code (baseline.cu, declared in the
  // .cuh): its output for the same inputs is what the candidate's is compared with.
  m.baseline = {"baseline",
                [&](const cml::Sample&) { labNN::scale(x.data(), y_base.data(), n, 2.0f); },
                cml::device_array(y_base)};
  m.candidate = {"scale", [&](const cml::Sample&) { labNN::scale(x.data(), y.data(), n, 2.0f); },
                 cml::device_array(y)};
  m.inputs = &inputs;
  m.check = cml::Check::exact_match("y");  // or Check::within(sum_tolerance(...), ...)
  report.add_comparison("scale", harness.time_pair(m), {0, 8.0 * n});
  return report.write();
}
