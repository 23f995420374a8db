/// \file
/// RAII device memory with optional guard zones and output poisoning.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cml/check.hpp"

namespace cml {

/// Byte written over every element of a poisoned buffer. 0xFF.. is a NaN for float and double
/// and -1 for signed integers, so an element nothing wrote is recognisable after the launch.
inline constexpr unsigned char kPoisonByte = 0xFF;
/// Byte pattern of the guard zones before and after a buffer's elements.
inline constexpr unsigned char kGuardByte = 0xA5;

/// True when every byte of `value` is the poison byte: the element was never written.
template <class T>
bool is_poison(const T& value) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&value);
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    if (bytes[i] != kPoisonByte) return false;
  }
  return true;
}

/// An array of `T` in device memory, freed when it goes out of scope. With guard bytes, the
/// elements sit between two zones of a known pattern so an out-of-bounds write that does not
/// fault is still detected by guards_intact().
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;

  /// Allocates `count` elements; `guard_bytes` (rounded up to 256) on each side.
  explicit DeviceBuffer(std::size_t count, std::size_t guard_bytes = 0)
      : count_(count), guard_bytes_((guard_bytes + 255) / 256 * 256) {
    CUDA_CHECK(cudaMalloc(&base_, total_bytes()));
    if (guard_bytes_ > 0) {
      CUDA_CHECK(cudaMemset(base_, kGuardByte, total_bytes()));
    }
  }

  ~DeviceBuffer() {
    if (base_ != nullptr) cudaFree(base_);
  }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    swap(other);
    return *this;
  }

  /// Device pointer to the first element.
  T* data() { return reinterpret_cast<T*>(static_cast<unsigned char*>(base_) + guard_bytes_); }
  const T* data() const {
    return reinterpret_cast<const T*>(static_cast<const unsigned char*>(base_) + guard_bytes_);
  }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  /// Copies `host` (exactly size() elements) to the device.
  void upload(const std::vector<T>& host) {
    if (host.size() != count_) {
      throw std::invalid_argument("DeviceBuffer::upload: host vector has " +
                                  std::to_string(host.size()) + " elements, buffer has " +
                                  std::to_string(count_));
    }
    CUDA_CHECK(cudaMemcpy(data(), host.data(), bytes(), cudaMemcpyHostToDevice));
  }

  /// Copies the elements back to the host (synchronises the device first).
  std::vector<T> download() const {
    std::vector<T> host(count_);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(host.data(), data(), bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

  /// Fills every element with the poison pattern (see is_poison()).
  void poison() { CUDA_CHECK(cudaMemset(data(), kPoisonByte, bytes())); }

  /// Sets every byte of the elements to `byte`.
  void fill_bytes(unsigned char byte) { CUDA_CHECK(cudaMemset(data(), byte, bytes())); }

  /// True when both guard zones still hold their pattern. Empty string means intact;
  /// otherwise a sentence saying which side was overwritten and how far from the array.
  std::string guard_report() const {
    if (guard_bytes_ == 0) return {};
    std::vector<unsigned char> host(total_bytes());
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(host.data(), base_, total_bytes(), cudaMemcpyDeviceToHost));
    for (std::size_t i = guard_bytes_; i-- > 0;) {
      if (host[i] != kGuardByte) {
        return "a write landed " + std::to_string(guard_bytes_ - i) +
               " byte(s) before the start of the array (element index " +
               std::to_string(
                   -static_cast<long long>((guard_bytes_ - i + sizeof(T) - 1) / sizeof(T))) +
               ")";
      }
    }
    const std::size_t tail = guard_bytes_ + bytes();
    for (std::size_t i = tail; i < host.size(); ++i) {
      if (host[i] != kGuardByte) {
        return "a write landed " + std::to_string(i - tail + 1) +
               " byte(s) past the end of the array (element index " +
               std::to_string(count_ + (i - tail) / sizeof(T)) + ")";
      }
    }
    return {};
  }
  bool guards_intact() const { return guard_report().empty(); }

 private:
  std::size_t total_bytes() const { return bytes() + 2 * guard_bytes_; }
  void swap(DeviceBuffer& other) noexcept {
    std::swap(base_, other.base_);
    std::swap(count_, other.count_);
    std::swap(guard_bytes_, other.guard_bytes_);
  }

  void* base_ = nullptr;
  std::size_t count_ = 0;
  std::size_t guard_bytes_ = 0;
};

}  // namespace cml
