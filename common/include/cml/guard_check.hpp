/// \file
/// The one failure report for a store that landed outside an array: a DeviceBuffer's guard
/// zones (cml/buffer.hpp) checked after the call under test, as a CompareResult.
#pragma once

#include <cstdint>
#include <string>

#include "cml/buffer.hpp"
#include "cml/compare.hpp"

namespace cml {

/// The failure for an out-of-bounds write into `name` that `report` (DeviceBuffer's
/// guard_report()) describes; success when `report` is empty. The message names the array,
/// where the write landed, the size (`size`, e.g. "n=129"; left out when empty) and the seed,
/// then the lab's `hint` on a "Hint:" line. (Defined in compare.cpp, beside the comparison's
/// report of the same facts.)
CompareResult guard_failure(const std::string& name, const std::string& report,
                            const std::string& size, std::uint64_t seed, const std::string& hint);

/// guard_failure() for `buffer`: success when both its guard zones are intact.
template <class T>
CompareResult check_guards(const DeviceBuffer<T>& buffer, const std::string& name,
                           const std::string& size, std::uint64_t seed, const std::string& hint) {
  return guard_failure(name, buffer.guard_report(), size, seed, hint);
}

/// check_guards() with the array's name, the size and the seed of a comparison's context.
template <class T>
CompareResult check_guards(const DeviceBuffer<T>& buffer, const CompareContext& ctx,
                           const std::string& hint) {
  return check_guards(buffer, ctx.name, ctx.size, ctx.seed, hint);
}

}  // namespace cml
