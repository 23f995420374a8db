/// \file
/// Facts about the CUDA device: what the tests print, the benches record and the handouts
/// tell students to look up on their own GPU.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace cml {

/// Static properties of one device, from cudaGetDeviceProperties and device attributes.
struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string pci_bus_id;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int warp_size = 32;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int regs_per_sm = 0;
  int regs_per_block = 0;
  std::size_t shared_per_block = 0;        ///< default per-block limit (48 KB)
  std::size_t shared_per_block_optin = 0;  ///< with cudaFuncAttributeMaxDynamicSharedMemorySize
  std::size_t shared_per_sm = 0;
  std::size_t reserved_shared_per_block = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_bytes = 0;
  int max_sm_clock_mhz = 0;
  int max_mem_clock_mhz = 0;
  int mem_bus_bits = 0;
  int driver_version = 0;  ///< e.g. 13000 for 13.0
  int runtime_version = 0;
};

/// Current clocks and temperature, read through NVML when the driver provides it.
struct ClockSample {
  bool available = false;  ///< false when NVML could not be loaded or queried
  int sm_mhz = -1;
  int mem_mhz = -1;
  int temperature_c = -1;
};

/// The device `index`, or nothing when there is no usable CUDA device; `why_not` then says
/// why (no driver, no device, ...). Any error from cudaGetDeviceCount counts as "no GPU".
std::optional<DeviceInfo> query_device(int index = 0, std::string* why_not = nullptr);

/// True when at least one CUDA device can be used.
bool has_cuda_device();

/// Reads the device's current SM and memory clocks and its temperature.
ClockSample sample_clocks(const DeviceInfo& device);

/// FP32 lanes per SM: results of a 32-bit floating-point add, multiply or fused multiply-add
/// per clock per SM, from the CUDA C++ Programming Guide's arithmetic-throughput table (the
/// project's one copy of it); 0 for an architecture it does not know.
int fp32_lanes_per_sm(int cc_major, int cc_minor);

/// One line: "NVIDIA H100 80GB HBM3 (CC 9.0, 132 SMs, 50 MB L2, driver 13.0, runtime 13.0)".
std::string describe(const DeviceInfo& device);

/// Formats a CUDA version number (13000 -> "13.0").
std::string version_string(int cuda_version);

/// The nvcc version this code was compiled with.
std::string nvcc_version();

}  // namespace cml
