// Lab NN bench: see labs/04_tiled_matmul/bench for a complete one (baseline vs the
// student's kernel with cml::Harness::time_pair, written with cml::BenchReport).
#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "topic.cuh"

int main(int argc, char** argv) {
  const auto args = cml::parse_bench_args(argc, argv, {"n"}, "usage: labNN bench [--n N]");
  const cml::DeviceInfo device = cml::bench_device();
  const int n = static_cast<int>(args.get_int("n", 1 << 26));
  cml::DeviceBuffer<float> x(n), y(n);
  x.fill_bytes(0);
  cml::Harness harness(device.l2_bytes, args.timing);
  cml::BenchReport report(CML_LAB, CML_VARIANT, args, device, harness.flush_bytes());
  const auto run = [&](int) { labNN::scale(x.data(), y.data(), n, 2.0f); };
  bool converged = false;
  const auto ms = harness.time_single({"scale", run}, &converged);
  report.add_case("scale", ms, converged, {0, 8.0 * n}, {});
  return report.write();
}
