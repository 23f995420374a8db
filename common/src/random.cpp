// SplitMix64-based generators: small, fast and identical across compilers.
#include "cml/random.hpp"

namespace cml {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t state = seed ^ (0xD1B54A32D192ED03ull * (stream + 1));
  return splitmix64(state);
}

std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float lo, float hi) {
  std::vector<float> out(count);
  std::uint64_t state = seed;
  const double span = static_cast<double>(hi) - lo;
  for (auto& x : out) {
    // 24 random bits give every float in [0, 1) spaced 2^-24 apart.
    const double unit = static_cast<double>(splitmix64(state) >> 40) * 0x1.0p-24;
    x = static_cast<float>(lo + span * unit);
  }
  return out;
}

std::vector<int> random_ints(std::size_t count, std::uint64_t seed, int lo, int hi) {
  std::vector<int> out(count);
  std::uint64_t state = seed;
  const std::uint64_t span = static_cast<std::uint64_t>(static_cast<long long>(hi) - lo) + 1;
  for (auto& x : out) {
    x = static_cast<int>(lo + static_cast<long long>(splitmix64(state) % span));
  }
  return out;
}

}  // namespace cml
