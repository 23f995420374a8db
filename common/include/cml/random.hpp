/// \file
/// Seeded, platform-independent random data for tests and benches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cml {

/// Derives an independent seed for stream `stream` of a run seeded with `seed` (SplitMix64),
/// so each input of a test gets its own sequence from the one printed seed.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream);

/// `count` floats uniform in [lo, hi), the same on every platform for a given seed.
std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float lo = -1.0f,
                                 float hi = 1.0f);

/// `count` integers uniform in [lo, hi].
std::vector<int> random_ints(std::size_t count, std::uint64_t seed, int lo, int hi);

}  // namespace cml
