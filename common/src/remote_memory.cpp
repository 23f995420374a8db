// Device buffers that cross from the checker to the runner (cml/remote.hpp).
//
// The checker's executables are linked with --wrap=cudaMalloc and --wrap=cudaFree
// (cml_share_allocations() in common/CMakeLists.txt): every allocation its tests make is
// created through CUDA's virtual memory management API with a POSIX file-descriptor handle,
// so a buffer passed to the lab's interface can be exported as a descriptor and sent over the
// socket. The runner imports it, maps it for the call and unmaps it after. A descriptor is a
// capability: the runner can map only the buffers it was handed, whatever namespaces or user
// the jail gives it, and nothing it can guess names another.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "cml/check.hpp"
#include "cml/remote.hpp"

namespace {

// The driver API through the runtime's entry-point query: neither side links libcuda, so the
// checker still starts where there is no driver (the host layer).
struct Driver {
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemExportToShareableHandle) export_handle = nullptr;
  decltype(&cuMemImportFromShareableHandle) import_handle = nullptr;
  bool ok = false;
};

template <class F>
bool entry(const char* name, F& out) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return false;
  }
  out = reinterpret_cast<F>(p);
  return true;
}

const Driver& driver() {
  static const Driver d = [] {
    Driver x;
    x.ok = entry("cuMemCreate", x.create) && entry("cuMemRelease", x.release) &&
           entry("cuMemAddressReserve", x.reserve) && entry("cuMemAddressFree", x.address_free) &&
           entry("cuMemMap", x.map) && entry("cuMemUnmap", x.unmap) &&
           entry("cuMemSetAccess", x.set_access) &&
           entry("cuMemGetAllocationGranularity", x.granularity) &&
           entry("cuMemExportToShareableHandle", x.export_handle) &&
           entry("cuMemImportFromShareableHandle", x.import_handle);
    return x;
  }();
  return d;
}

void check(CUresult rc, const char* what) {
  if (rc != CUDA_SUCCESS) {
    throw std::runtime_error(std::string(what) + " failed (CUresult " + std::to_string(rc) + ")");
  }
}

CUmemAllocationProp shareable_on(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// Maps `handle` at a new address, readable and writable by `device`.
CUdeviceptr map_handle(const Driver& d, CUmemGenericAllocationHandle handle, std::size_t bytes,
                       int device) {
  CUdeviceptr address = 0;
  check(d.reserve(&address, bytes, 0, 0, 0), "cuMemAddressReserve");
  if (d.map(address, bytes, 0, handle, 0) != CUDA_SUCCESS) {
    d.address_free(address, bytes);
    throw std::runtime_error("cuMemMap failed");
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (d.set_access(address, bytes, &access, 1) != CUDA_SUCCESS) {
    d.unmap(address, bytes);
    d.address_free(address, bytes);
    throw std::runtime_error("cuMemSetAccess failed");
  }
  return address;
}

// The checker's shareable allocations, by address.
struct Allocation {
  CUmemGenericAllocationHandle handle;
  std::size_t bytes;  // as mapped: a multiple of the granularity
  std::size_t size;   // as asked for
};
std::mutex g_mutex;
std::map<std::uintptr_t, Allocation> g_allocations;

}  // namespace

// ---- The checker's cudaMalloc and cudaFree ----------------------------------------------

extern "C" {
cudaError_t __real_cudaMalloc(void** pointer, std::size_t size) __attribute__((weak));
cudaError_t __real_cudaFree(void* pointer) __attribute__((weak));

cudaError_t __wrap_cudaMalloc(void** pointer, std::size_t size) {
  const Driver& d = driver();
  int device = 0;
  // The runtime's own path where the driver has no VMM (or no GPU): such a buffer stays the
  // checker's, and passing it to the lab's interface is refused with a message.
  cudaError_t rc = cudaGetDevice(&device);
  if (rc == cudaSuccess) rc = cudaFree(nullptr);  // the primary context, current
  if (rc != cudaSuccess || !d.ok) return __real_cudaMalloc(pointer, size);
  const CUmemAllocationProp prop = shareable_on(device);
  std::size_t grain = 0;
  if (d.granularity(&grain, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
      grain == 0) {
    return __real_cudaMalloc(pointer, size);
  }
  const std::size_t bytes = (size == 0 ? grain : (size + grain - 1) / grain * grain);
  CUmemGenericAllocationHandle handle{};
  if (d.create(&handle, bytes, &prop, 0) != CUDA_SUCCESS) return cudaErrorMemoryAllocation;
  CUdeviceptr address = 0;
  try {
    address = map_handle(d, handle, bytes, device);
  } catch (const std::exception&) {
    d.release(handle);
    return cudaErrorMemoryAllocation;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_allocations[static_cast<std::uintptr_t>(address)] = {handle, bytes, size};
  *pointer = reinterpret_cast<void*>(address);
  return cudaSuccess;
}

cudaError_t __wrap_cudaFree(void* pointer) {
  Allocation a{};
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = g_allocations.find(reinterpret_cast<std::uintptr_t>(pointer));
    if (it == g_allocations.end()) return __real_cudaFree(pointer);
    a = it->second;
    g_allocations.erase(it);
  }
  // cudaFree waits for the device: so does this.
  const cudaError_t rc = cudaDeviceSynchronize();
  const Driver& d = driver();
  const auto address = reinterpret_cast<CUdeviceptr>(pointer);
  d.unmap(address, a.bytes);
  d.address_free(address, a.bytes);
  d.release(a.handle);
  return rc;
}
}  // extern "C"

namespace cml::remote {

void put_device_pointer(Writer& w, const void* pointer) {
  if (pointer == nullptr) {
    w.pod<std::uint8_t>(0);
    return;
  }
  const auto at = reinterpret_cast<std::uintptr_t>(pointer);
  std::uintptr_t base = 0;
  Allocation a{};
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_allocations.upper_bound(at);
    if (it == g_allocations.begin() || (--it, at >= it->first + it->second.size)) {
      throw std::invalid_argument(
          "a pointer passed to the lab's interface is not a device buffer of the test's own "
          "(from cudaMalloc)");
    }
    base = it->first;
    a = it->second;
  }
  int fd = -1;
  check(driver().export_handle(&fd, a.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemExportToShareableHandle");
  w.pod<std::uint8_t>(1);
  w.pod<std::uint64_t>(base);
  w.pod<std::uint32_t>(w.attach(fd));
  w.pod<std::uint64_t>(a.bytes);
  w.pod<std::uint64_t>(a.size);
  w.pod<std::uint64_t>(at - base);
}

void* get_device_pointer(Reader& r, Mappings& maps) {
  if (r.pod<std::uint8_t>() == 0) return nullptr;
  const auto origin = r.pod<std::uint64_t>();
  const int fd = r.take_fd(r.pod<std::uint32_t>());
  const auto bytes = r.pod<std::uint64_t>();
  const auto size = r.pod<std::uint64_t>();
  const auto offset = r.pod<std::uint64_t>();
  return maps.open(origin, fd, bytes, size, offset);
}

void* Mappings::open(std::uint64_t origin, int fd, std::uint64_t bytes, std::uint64_t size,
                     std::uint64_t offset) {
  for (const Mapped& m : open_) {
    if (m.origin == origin) {
      ::close(fd);
      if (offset >= m.size) throw ProtocolError("a device pointer lies past its buffer");
      return (m.copy != nullptr ? static_cast<char*>(m.copy)
                                : reinterpret_cast<char*>(static_cast<std::uintptr_t>(m.address))) +
             offset;
    }
  }
  if (offset >= size || size > bytes) {
    ::close(fd);
    throw ProtocolError("a device pointer lies past its buffer");
  }
  const Driver& d = driver();
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaFree(nullptr));  // the primary context, current
  if (!d.ok) {
    ::close(fd);
    throw std::runtime_error("the driver offers no virtual memory management");
  }
  CUmemGenericAllocationHandle handle{};
  const CUresult imported =
      d.import_handle(&handle, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  ::close(fd);
  check(imported, "cuMemImportFromShareableHandle");
  CUdeviceptr address = 0;
  try {
    address = map_handle(d, handle, bytes, device);
  } catch (...) {
    d.release(handle);
    throw;
  }
  open_.push_back({origin, handle, address, bytes, nullptr, size});
  Mapped& m = open_.back();
  if (direct_) return reinterpret_cast<char*>(static_cast<std::uintptr_t>(address)) + offset;
  CUDA_CHECK(cudaMalloc(&m.copy, size));
  CUDA_CHECK(cudaMemcpy(m.copy, reinterpret_cast<void*>(address), size, cudaMemcpyDeviceToDevice));
  return static_cast<char*>(m.copy) + offset;
}

void Mappings::keep() {
  for (const Mapped& m : open_) {
    if (m.copy == nullptr) continue;  // direct: the call wrote the mapping itself
    CUDA_CHECK(
        cudaMemcpy(reinterpret_cast<void*>(m.address), m.copy, m.size, cudaMemcpyDeviceToDevice));
  }
}

Mappings::~Mappings() {
  const Driver& d = driver();
  for (const Mapped& m : open_) {
    if (m.copy != nullptr) cudaFree(m.copy);
    d.unmap(m.address, m.bytes);
    d.address_free(m.address, m.bytes);
    d.release(m.handle);
  }
}

}  // namespace cml::remote
