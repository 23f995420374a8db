/// \file
/// Splitting a CPU loop over the cores this process may use: the tests' double-precision
/// references of large products run while the test holds the GPU, so they should not take
/// one core's time.
#pragma once

#include <cstddef>
#include <functional>

namespace cml {

/// The CPUs this process may run on (its affinity mask: a container, taskset or a Slurm
/// allocation), at least 1.
std::size_t usable_cpus();

/// Calls body(begin, end) on contiguous ranges that cover [0, count) once, one range per
/// worker thread (at most usable_cpus(), each with at least `grain` items; a small count runs
/// on the calling thread). Returns when every range is done; the first exception a range
/// throws is rethrown here.
void parallel_for(std::size_t count, std::size_t grain,
                  const std::function<void(std::size_t begin, std::size_t end)>& body);

}  // namespace cml
