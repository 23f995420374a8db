// The main every lab's bench shares. The bench's own file declares one function with
// CML_BENCH and the options it reads; this parses the command line against that declaration
// (--help prints the usage made from it; a refused command line exits with status 2), finds
// the device (none usable: status 77, "skipped"), makes the harness (then, given
// --start-fd, waits at the start gate: status 3 when it is closed) and the report before
// any code under test runs, records the declared params, calls the function and writes the
// document. An exception it lets out ends the run with "bench failed: ..." and status 1.
#include <exception>
#include <iostream>

#include "cml/bench.hpp"

int main(int argc, char** argv) {
  const auto& benches = cml::declared_benches();
  if (benches.size() != 1) {
    std::cerr << "a bench executable declares exactly one bench with CML_BENCH; this one "
                 "declares "
              << benches.size() << "\n";
    return 2;
  }
  const cml::BenchDeclaration& bench = benches.front();
  cml::BenchArgs args;
  try {
    args = bench.parse(argc, argv);
  } catch (const cml::BenchExit& exit) {
    (exit.status() == 0 ? std::cout : std::cerr) << exit.what() << "\n";
    return exit.status();
  }
  const cml::DeviceInfo device = cml::bench_device();
  try {
    cml::Harness harness(device.l2_bytes, args.timing);
    if (args.start_fd >= 0 && !cml::wait_at_start_gate(args.start_fd, device)) {
      std::cerr << "bench not started: its start gate was closed\n";
      return 3;
    }
    // The report samples the clocks and measures the device's limits as it is made: before
    // the bench's function, so before any code under test runs.
    cml::BenchReport report(bench.lab(), bench.variant(), args, device, harness.flush_bytes());
    bench.record_params(args, report);
    cml::BenchContext context{args, device, harness, report};
    bench.run(context);
    return report.write();
  } catch (const std::exception& err) {
    std::cerr << "bench failed: " << err.what() << "\n";
    return 1;
  }
}
