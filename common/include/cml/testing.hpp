/// \file
/// Helpers for the labs' Catch2 tests: the run's seed, and turning a CompareResult into a
/// readable test failure.
#pragma once

#include <cstdint>
#include <string>

#include "cml/catch.hpp"
#include "cml/compare.hpp"

namespace cml {

/// The run's seed: from --rng-seed, or chosen and printed by the test main.
inline std::uint64_t test_seed() {
#if CML_CATCH_MAJOR == 3
  return Catch::getSeed();
#else
  return Catch::rngSeed();
#endif
}

}  // namespace cml

/// Passes when the comparison passed; otherwise fails the test with its report.
#define CML_REQUIRE_MATCH(result)                  \
  do {                                             \
    const ::cml::CompareResult& cml_r_ = (result); \
    if (!cml_r_.ok) FAIL(cml_r_.message);          \
    SUCCEED();                                     \
  } while (false)
