// CPU loops split over the usable cores (cml/parallel.hpp).
#include "cml/parallel.hpp"

#include <sched.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace cml {

std::size_t usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    return std::max(1, CPU_COUNT(&set));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

void parallel_for(std::size_t count, std::size_t grain,
                  const std::function<void(std::size_t, std::size_t)>& body) {
  if (count == 0) return;
  grain = std::max<std::size_t>(grain, 1);
  const std::size_t workers = std::min(usable_cpus(), (count + grain - 1) / grain);
  if (workers <= 1) {
    body(0, count);
    return;
  }
  std::exception_ptr first;
  std::mutex lock;
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  const auto run = [&](std::size_t w) {
    const std::size_t begin = count * w / workers, end = count * (w + 1) / workers;
    try {
      body(begin, end);
    } catch (...) {
      const std::lock_guard<std::mutex> guard(lock);
      if (!first) first = std::current_exception();
    }
  };
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(run, w);
  run(0);
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace cml
