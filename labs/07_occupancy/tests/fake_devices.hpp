// Device properties of real GPUs, written out so the level-2 calculator can be tested on a
// machine without one. Values as cudaGetDeviceProperties reports them.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace lab07_test {

struct FakeDevice {
  std::string name;
  cudaDeviceProp prop;
};

inline cudaDeviceProp make_prop(int major, int minor, int threads_per_sm, int blocks_per_sm,
                                std::size_t shared_per_sm, std::size_t shared_optin,
                                std::size_t reserved) {
  cudaDeviceProp p{};
  p.major = major;
  p.minor = minor;
  p.multiProcessorCount = 40;
  p.warpSize = 32;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsPerMultiProcessor = threads_per_sm;
  p.maxBlocksPerMultiProcessor = blocks_per_sm;
  p.regsPerBlock = 65536;
  p.regsPerMultiprocessor = 65536;
  p.sharedMemPerBlock = 48 * 1024;
  p.sharedMemPerBlockOptin = shared_optin;
  p.sharedMemPerMultiprocessor = shared_per_sm;
  p.reservedSharedMemPerBlock = reserved;
  return p;
}

/// H100 (CC 9.0): 2048 threads, 32 blocks, 228 KB of shared memory per SM.
inline cudaDeviceProp h100_prop() { return make_prop(9, 0, 2048, 32, 233472, 232448, 1024); }

/// The notes' RTX 3070 (CC 8.6): 1536 threads, 16 blocks, 100 KB per SM.
inline cudaDeviceProp rtx3070_prop() { return make_prop(8, 6, 1536, 16, 102400, 101376, 1024); }

/// A100 (CC 8.0): 2048 threads, 32 blocks, 164 KB per SM.
inline cudaDeviceProp a100_prop() { return make_prop(8, 0, 2048, 32, 167936, 166912, 1024); }

/// T4 (CC 7.5): 1024 threads, 16 blocks, 64 KB per SM, no per-block reserve.
inline cudaDeviceProp t4_prop() { return make_prop(7, 5, 1024, 16, 65536, 65536, 0); }

/// V100 (CC 7.0): 2048 threads, 32 blocks, 96 KB per SM.
inline cudaDeviceProp v100_prop() { return make_prop(7, 0, 2048, 32, 98304, 98304, 0); }

/// RTX 4090 (CC 8.9): 1536 threads, 24 blocks, 100 KB per SM.
inline cudaDeviceProp rtx4090_prop() { return make_prop(8, 9, 1536, 24, 102400, 101376, 1024); }

inline std::vector<FakeDevice> fake_devices() {
  return {{"V100 (CC 7.0)", v100_prop()},        {"T4 (CC 7.5)", t4_prop()},
          {"A100 (CC 8.0)", a100_prop()},        {"RTX 3070 (CC 8.6)", rtx3070_prop()},
          {"RTX 4090 (CC 8.9)", rtx4090_prop()}, {"H100 (CC 9.0)", h100_prop()}};
}

}  // namespace lab07_test
