/// \file
/// Counts the kernels a process launches from the host, so a bench (or a test) can say how
/// many kernels one call of an interface function launched.
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
/// Usage:
/// \code
///   cml::LaunchCounter launches;            // counts from here
///   lab04::matmul_tiled(a, b, c, n);
///   REQUIRE(launches.count() == 1);         // one kernel per call
///   // or, if the binary might not be linked with the wrap options:
///   if (cml::launch_counting_active()) { ... }
/// \endcode
#pragma once

#include <cstdint>

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

}  // namespace cml
