// Kernel-launch counting through the linker's --wrap (see launch_count.hpp). Each
// __wrap_NAME counts, logs the kernel it was given and forwards to __real_NAME, which the
// linker binds to the runtime's NAME. The __real_ declarations are weak so that an
// executable linked without the wrap options (where nothing calls a __wrap_ function)
// still links.
#include "cml/launch_count.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>

namespace {

// Launch number i (from 0) is logged in slot i % kLaunchLogSize: the kernel, then the
// number i + 1, so a reader can tell a slot already written for launch i from one that
// still holds an older launch (or is being written).
struct Slot {
  std::atomic<std::uint64_t> number{0};
  std::atomic<const void*> kernel{nullptr};
};

std::atomic<std::uint64_t> g_launches{0};
std::array<Slot, cml::kLaunchLogSize> g_log;
thread_local int t_dry = 0;  // DryLaunches alive on this thread

inline void count_one(const void* kernel) {
  const std::uint64_t i = g_launches.fetch_add(1, std::memory_order_relaxed);
  Slot& slot = g_log[i % cml::kLaunchLogSize];
  slot.kernel.store(kernel, std::memory_order_relaxed);
  slot.number.store(i + 1, std::memory_order_release);
}

}  // namespace

// Argument lists of the entry points, as the CUDA 13 headers declare them.
#define CML_KERNEL_ARGS dim3 grid, dim3 block, void **args, std::size_t shared, cudaStream_t stream
#define CML_KERNEL_PASS grid, block, args, shared, stream

// Declares NAME (for the address check), the weak __real_NAME and defines __wrap_NAME,
// which logs KERNEL (the launched kernel's identity among its arguments).
#define CML_WRAP(NAME, PARAMS, PASS, KERNEL)                    \
  cudaError_t NAME PARAMS;                                      \
  cudaError_t __real_##NAME PARAMS __attribute__((weak));       \
  cudaError_t __wrap_##NAME PARAMS {                            \
    count_one(KERNEL);                                          \
    if (t_dry > 0) return cudaSuccess;                          \
    if (__real_##NAME == nullptr) return cudaErrorNotSupported; \
    return __real_##NAME PASS;                                  \
  }

extern "C" {
CML_WRAP(__cudaLaunchKernel, (cudaKernel_t kernel, CML_KERNEL_ARGS), (kernel, CML_KERNEL_PASS),
         kernel)
CML_WRAP(__cudaLaunchKernel_ptsz, (cudaKernel_t kernel, CML_KERNEL_ARGS), (kernel, CML_KERNEL_PASS),
         kernel)
CML_WRAP(cudaLaunchKernel, (const void* func, CML_KERNEL_ARGS), (func, CML_KERNEL_PASS), func)
CML_WRAP(cudaLaunchKernel_ptsz, (const void* func, CML_KERNEL_ARGS), (func, CML_KERNEL_PASS), func)
CML_WRAP(cudaLaunchCooperativeKernel, (const void* func, CML_KERNEL_ARGS), (func, CML_KERNEL_PASS),
         func)
CML_WRAP(cudaLaunchCooperativeKernel_ptsz, (const void* func, CML_KERNEL_ARGS),
         (func, CML_KERNEL_PASS), func)
CML_WRAP(cudaLaunchKernelExC, (const cudaLaunchConfig_t* config, const void* func, void** args),
         (config, func, args), func)
CML_WRAP(cudaLaunchKernelExC_ptsz,
         (const cudaLaunchConfig_t* config, const void* func, void** args), (config, func, args),
         func)
CML_WRAP(cudaGraphLaunch, (cudaGraphExec_t exec, cudaStream_t stream), (exec, stream), exec)
CML_WRAP(cudaGraphLaunch_ptsz, (cudaGraphExec_t exec, cudaStream_t stream), (exec, stream), exec)
}  // extern "C"

namespace cml {
namespace {

// True when the linker sent this object's reference to `original` to `wrapper`. Read
// through volatile so the compiler cannot decide the comparison itself.
template <class F>
bool wrapped(F* original, F* wrapper) {
  F* volatile seen = original;
  F* volatile own = wrapper;
  return seen == own;
}

}  // namespace

std::uint64_t launch_count() { return g_launches.load(std::memory_order_relaxed); }

namespace detail {

bool dry_launches() { return t_dry > 0; }

void log_launches(std::uint64_t count, const std::vector<const void*>& kernels) {
  // The first count - kernels.size() launches fell out of the runner's log: counted, logged
  // as unknown (nullptr), as a launch still being written reads here.
  for (std::uint64_t i = kernels.size(); i < count; ++i) count_one(nullptr);
  for (const void* kernel : kernels) count_one(kernel);
}

}  // namespace detail

DryLaunches::DryLaunches() { ++t_dry; }
DryLaunches::~DryLaunches() { --t_dry; }

std::vector<const void*> launched_kernels(std::uint64_t first) {
  const std::uint64_t end = launch_count();
  const std::uint64_t kept = end > kLaunchLogSize ? end - kLaunchLogSize : 0;
  std::vector<const void*> out;
  for (std::uint64_t i = std::max(first, kept); i < end; ++i) {
    const Slot& slot = g_log[i % kLaunchLogSize];
    const bool written = slot.number.load(std::memory_order_acquire) == i + 1;
    out.push_back(written ? slot.kernel.load(std::memory_order_relaxed) : nullptr);
  }
  return out;
}

bool launch_counting_active() {
  return wrapped(&__cudaLaunchKernel, &__wrap___cudaLaunchKernel) &&
         wrapped(&__cudaLaunchKernel_ptsz, &__wrap___cudaLaunchKernel_ptsz) &&
         wrapped(&cudaLaunchKernel, &__wrap_cudaLaunchKernel) &&
         wrapped(&cudaLaunchKernel_ptsz, &__wrap_cudaLaunchKernel_ptsz) &&
         wrapped(&cudaLaunchCooperativeKernel, &__wrap_cudaLaunchCooperativeKernel) &&
         wrapped(&cudaLaunchCooperativeKernel_ptsz, &__wrap_cudaLaunchCooperativeKernel_ptsz) &&
         wrapped(&cudaLaunchKernelExC, &__wrap_cudaLaunchKernelExC) &&
         wrapped(&cudaLaunchKernelExC_ptsz, &__wrap_cudaLaunchKernelExC_ptsz) &&
         wrapped(&cudaGraphLaunch, &__wrap_cudaGraphLaunch) &&
         wrapped(&cudaGraphLaunch_ptsz, &__wrap_cudaGraphLaunch_ptsz);
}

}  // namespace cml
