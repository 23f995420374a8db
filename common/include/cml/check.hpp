/// \file
/// Error checks for CUDA runtime calls and kernel launches: a failure throws cml::CudaError
/// whose message names the call, the file and line, and the CUDA error.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace cml {

/// A failed CUDA runtime call. Tests let it propagate so Catch2 reports the message.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& message);
  /// The CUDA error code that caused the failure.
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

/// Builds the message for a failed call and throws CudaError.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* expression, const char* file,
                                   int line);

}  // namespace cml

/// Checks a CUDA runtime call; on failure throws cml::CudaError naming the call and place.
#define CUDA_CHECK(call)                                               \
  do {                                                                 \
    const cudaError_t cml_status_ = (call);                            \
    if (cml_status_ != cudaSuccess) {                                  \
      ::cml::throw_cuda_error(cml_status_, #call, __FILE__, __LINE__); \
    }                                                                  \
  } while (false)

/// Checks that the kernel launch just made was accepted (bad configuration, too much shared
/// memory, ...). Errors inside the kernel surface at the next synchronising call.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
