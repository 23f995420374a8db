// Device facts from the CUDA runtime; live clocks from NVML, loaded at run time so that
// binaries still start on machines without a driver.
#include "cml/device_info.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <sstream>
#include <string>

#ifndef CML_NVCC_VERSION
#define CML_NVCC_VERSION "unknown"
#endif

namespace cml {
namespace {

int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) return 0;
  return value;
}

// The few NVML entry points we use, declared here so no NVML header is needed to build.
struct Nvml {
  using Device = void*;
  int (*init)() = nullptr;
  int (*by_bus_id)(const char*, Device*) = nullptr;
  int (*clock)(Device, int, unsigned*) = nullptr;
  int (*temperature)(Device, int, unsigned*) = nullptr;
  bool ok = false;

  Nvml() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return;
    init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    by_bus_id = reinterpret_cast<int (*)(const char*, Device*)>(
        dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    clock = reinterpret_cast<int (*)(Device, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    temperature =
        reinterpret_cast<int (*)(Device, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetTemperature"));
    ok = init && by_bus_id && clock && temperature && init() == 0;
  }
};

// Why there is no usable GPU, in the words a student needs. The runtime says "CUDA driver
// version is insufficient" both where the driver is too old and where there is no driver at
// all (no libcuda to load), which reads as "update your driver" on a machine without a GPU.
std::string no_gpu_reason(cudaError_t status, int count, int index) {
  if (status == cudaErrorInsufficientDriver) {
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver == nullptr) return "no NVIDIA driver";
    dlclose(driver);
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    return "the NVIDIA driver is older than CUDA " + std::to_string(runtime / 1000) + "." +
           std::to_string(runtime % 1000 / 10) + ", which this program was built with";
  }
  if (status == cudaErrorNoDevice || (status == cudaSuccess && count == 0)) {
    return "the NVIDIA driver sees no GPU";
  }
  if (status == cudaSuccess) {
    return "GPU " + std::to_string(index) + " asked for; there are " + std::to_string(count);
  }
  return cudaGetErrorString(status);
}

}  // namespace

std::optional<DeviceInfo> query_device(int index, std::string* why_not) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count <= index) {
    if (why_not != nullptr) *why_not = no_gpu_reason(status, count, index);
    cudaGetLastError();  // clear the error so later calls do not report it
    return std::nullopt;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
    if (why_not != nullptr) *why_not = "cudaGetDeviceProperties failed";
    cudaGetLastError();
    return std::nullopt;
  }
  DeviceInfo d;
  d.index = index;
  d.name = prop.name;
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, index) == cudaSuccess) d.pci_bus_id = bus;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.warp_size = prop.warpSize;
  d.max_threads_per_block = prop.maxThreadsPerBlock;
  d.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  d.max_blocks_per_sm = prop.maxBlocksPerMultiProcessor;
  d.regs_per_sm = prop.regsPerMultiprocessor;
  d.regs_per_block = prop.regsPerBlock;
  d.shared_per_block = prop.sharedMemPerBlock;
  d.shared_per_block_optin = prop.sharedMemPerBlockOptin;
  d.shared_per_sm = prop.sharedMemPerMultiprocessor;
  d.reserved_shared_per_block = prop.reservedSharedMemPerBlock;
  d.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  d.global_bytes = prop.totalGlobalMem;
  d.max_sm_clock_mhz = attribute(cudaDevAttrClockRate, index) / 1000;
  d.max_mem_clock_mhz = attribute(cudaDevAttrMemoryClockRate, index) / 1000;
  d.mem_bus_bits = prop.memoryBusWidth;
  cudaDriverGetVersion(&d.driver_version);
  cudaRuntimeGetVersion(&d.runtime_version);
  return d;
}

bool has_cuda_device() { return query_device().has_value(); }

ClockSample sample_clocks(const DeviceInfo& device) {
  static Nvml nvml;
  ClockSample s;
  if (!nvml.ok || device.pci_bus_id.empty()) return s;
  Nvml::Device handle = nullptr;
  if (nvml.by_bus_id(device.pci_bus_id.c_str(), &handle) != 0) return s;
  unsigned value = 0;
  constexpr int kClockSm = 1, kClockMem = 2, kTemperatureGpu = 0;
  if (nvml.clock(handle, kClockSm, &value) == 0) s.sm_mhz = static_cast<int>(value);
  if (nvml.clock(handle, kClockMem, &value) == 0) s.mem_mhz = static_cast<int>(value);
  if (nvml.temperature(handle, kTemperatureGpu, &value) == 0) {
    s.temperature_c = static_cast<int>(value);
  }
  s.available = s.sm_mhz >= 0;
  return s;
}

std::string version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string nvcc_version() { return CML_NVCC_VERSION; }

int fp32_lanes_per_sm(int major, int minor) {
  switch (major) {
    case 5:  // Maxwell
      return 128;
    case 6:  // Pascal: GP100 (6.0) 64, the others 128
      return minor == 0 ? 64 : 128;
    case 7:  // Volta, Turing
      return 64;
    case 8:  // Ampere A100 (8.0) 64; GA10x (8.6, 8.7), Ada (8.9) 128
      return minor == 0 ? 64 : 128;
    default:  // Hopper (9.0), Blackwell (10.x, 12.x) and later: 128
      return major >= 9 ? 128 : 0;
  }
}

std::string describe(const DeviceInfo& d) {
  std::ostringstream out;
  out << d.name << " (CC " << d.cc_major << "." << d.cc_minor << ", " << d.sm_count << " SMs, "
      << d.l2_bytes / (1024 * 1024) << " MB L2, driver " << version_string(d.driver_version)
      << ", runtime " << version_string(d.runtime_version) << ")";
  return out.str();
}

}  // namespace cml
