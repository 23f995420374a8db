/// \file
/// Counts the kernels a process launches from the host, so a bench (or a test) can say how
/// many kernels one call of an interface function launched, and logs which kernels the
/// latest launches were, so a test can tell one call's kernels from another's.
///
/// How: every lab test and bench executable is linked with `-Wl,--wrap=SYMBOL` for each
/// runtime entry point through which host code can launch a kernel (cml_count_launches() in
/// common/CMakeLists.txt, applied by cmake/CmlLab.cmake). The linker then sends every call
/// of SYMBOL made by any object of the executable (the student's included) to
/// `__wrap_SYMBOL` in common/src/launch_count.cpp, which counts and forwards to the runtime.
/// The entry points are those an object compiled by nvcc 13 can reference:
///   __cudaLaunchKernel, __cudaLaunchKernel_ptsz     (what `kernel<<<...>>>` calls)
///   cudaLaunchKernel[_ptsz], cudaLaunchKernelExC[_ptsz] (cudaLaunchKernelEx's C entry),
///   cudaLaunchCooperativeKernel[_ptsz], cudaGraphLaunch[_ptsz] (one launch per graph).
/// Kernels a shared library launches internally (cuBLAS) go to the driver directly and are
/// not counted; neither are copies and memsets, which are not kernels.
///
/// Which kernel: each wrapped entry point receives the launched kernel's host-side identity,
/// and the last kLaunchLogSize of them are kept (launched_kernels(), LaunchLog). A
/// `kernel<<<...>>>` launch passes the kernel's cudaKernel_t handle (one per kernel, taken
/// once by nvcc's stub), the runtime API calls the kernel's host function pointer, a graph
/// launch its cudaGraphExec_t. So every launch of one kernel through `<<<...>>>` logs the
/// same value, and two different kernels (two instantiations of a template included) log
/// different ones; the same kernel launched once by `<<<...>>>` and once by
/// cudaLaunchKernel logs two values.
///
/// Usage:
/// \code
///   cml::LaunchCounter launches;            // counts from here
///   lab04::matmul_tiled(a, b, c, n);
///   REQUIRE(launches.count() == 1);         // one kernel per call
///   cml::LaunchLog log;                     // logs from here
///   lab04::matmul_tiled(a, b, c, n);
///   const auto kernels = log.kernels();     // which kernels, in launch order
///   {
///     cml::DryLaunches dry;                 // which kernels, without running them
///     lab04::matmul_tiled(a, b, c, n);
///   }
///   // or, if the binary might not be linked with the wrap options:
///   if (cml::launch_counting_active()) { ... }
/// \endcode
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cml {

/// Kernel launches made through the wrapped entry points since the process started (all
/// threads together).
std::uint64_t launch_count();

/// True when this executable was linked with the wrap options for every entry point above,
/// so launch_count() sees every launch. Checked by comparing addresses: needs no GPU.
bool launch_counting_active();

/// Launches made since construction (or since the last reset()).
class LaunchCounter {
 public:
  LaunchCounter() : start_(launch_count()) {}
  std::uint64_t count() const { return launch_count() - start_; }
  void reset() { start_ = launch_count(); }

 private:
  std::uint64_t start_;
};

/// How many of the latest launches the log keeps (all threads together).
inline constexpr std::size_t kLaunchLogSize = 1024;

/// The identity of each kernel launched since launch number `first` (a launch_count()
/// value), oldest first; only the latest kLaunchLogSize launches are kept, so after more
/// than that since `first` the oldest are missing (compare the size with launch_count() -
/// first). An entry of a launch still being logged by another thread reads nullptr.
std::vector<const void*> launched_kernels(std::uint64_t first = 0);

/// The kernels launched since construction (or since the last reset()): which ones, not
/// only how many (see the file comment for what identifies a kernel).
class LaunchLog {
 public:
  LaunchLog() : start_(launch_count()) {}
  std::uint64_t count() const { return launch_count() - start_; }
  /// Every launch's kernel since the start, in launch order, when complete().
  std::vector<const void*> kernels() const { return launched_kernels(start_); }
  /// True while the log still holds every launch made since the start.
  bool complete() const { return count() <= kLaunchLogSize; }
  void reset() { start_ = launch_count(); }

 private:
  std::uint64_t start_;
};

/// While one lives, the launches this thread makes through the wrapped entry points are
/// counted and logged but not made: the entry point returns cudaSuccess and nothing runs on
/// the GPU. A test learns which kernels a call launches this way without running them (no
/// GPU time, nothing for a sanitizer to report against the call under test). Nests.
class DryLaunches {
 public:
  DryLaunches();
  ~DryLaunches();
  DryLaunches(const DryLaunches&) = delete;
  DryLaunches& operator=(const DryLaunches&) = delete;
};

namespace detail {

/// True while a DryLaunches lives on this thread (the grader's checker sends it with a call).
bool dry_launches();

/// Counts `count` launches made by another process for this one and logs `kernels`, the last
/// of them (the checker's record of what a call in its runner launched: cml/remote.hpp).
void log_launches(std::uint64_t count, const std::vector<const void*>& kernels);

}  // namespace detail
}  // namespace cml
