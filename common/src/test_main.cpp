// The test main every lab's test executable shares. It prints the device (or "no CUDA GPU
// found" and why) and the seed, takes the seed from --rng-seed, and keeps test cases tagged
// [gpu] from running on a machine with no usable GPU: a run that asks only for [gpu] cases exits
// with status 77, which CTest reports as skipped; any other run excludes them and says so.
#define CATCH_CONFIG_RUNNER
#include <cstring>
#include <iostream>
#include <random>
#include <string>

#include "cml/catch.hpp"
#include "cml/device_info.hpp"

namespace {

constexpr int kSkipExitCode = 77;

bool mentions_gpu_tag(const std::string& spec) {
  for (std::size_t at = spec.find("[gpu]"); at != std::string::npos;
       at = spec.find("[gpu]", at + 1)) {
    if (at == 0 || spec[at - 1] != '~') return true;
  }
  return false;
}

}  // namespace

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  auto& config = session.configData();
  if (config.showHelp || config.listTests || config.listTags || config.listReporters) {
    return session.run();
  }

  bool seed_given = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--rng-seed", 10) == 0) seed_given = true;
  }
  if (!seed_given) config.rngSeed = std::random_device{}() & 0x7fffffffu;

  std::string why;
  const auto device = cml::query_device(0, &why);
  if (device) {
    std::cout << "device: " << cml::describe(*device) << "\n";
  } else {
    std::cout << "device: no CUDA GPU found (" << why << ")\n";
  }
  std::cout << "seed: " << config.rngSeed << "  (rerun with --rng-seed " << config.rngSeed << ")\n"
            << std::flush;

  if (!device) {
    for (const auto& spec : config.testsOrTags) {
      if (mentions_gpu_tag(spec)) {
        std::cout << "SKIPPED: GPU test cases need a CUDA device; none is usable here (" << why
                  << ")\n";
        return kSkipExitCode;
      }
    }
    // Every remaining filter term gets "and not [gpu]"; an empty filter becomes just that.
    config.testsOrTags.push_back("~[gpu]");
    std::cout << "note: test cases tagged [gpu] are skipped: no CUDA device\n";
  }
  return session.run();
}
