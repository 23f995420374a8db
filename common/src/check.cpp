// Builds readable messages for failed CUDA calls.
#include "cml/check.hpp"

#include <sstream>

namespace cml {

CudaError::CudaError(cudaError_t code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

void throw_cuda_error(cudaError_t code, const char* expression, const char* file, int line) {
  std::ostringstream out;
  out << "CUDA error " << cudaGetErrorName(code) << " (" << cudaGetErrorString(code) << ") from "
      << expression << " at " << file << ":" << line;
  switch (code) {
    case cudaErrorIllegalAddress:
    case cudaErrorMisalignedAddress:
      out << ". A kernel read or wrote outside its buffers: check the bounds of every global "
             "index. The GPU context is now unusable, so later GPU checks in this process fail "
             "too";
      break;
    case cudaErrorLaunchTimeout:
      out << ". A kernel ran too long: look for a loop that never ends or a barrier not all "
             "threads reach";
      break;
    case cudaErrorInvalidConfiguration:
      out << ". The launch configuration is invalid: block size, grid size or dynamic shared "
             "memory exceeds what the device allows";
      break;
    default:
      break;
  }
  throw CudaError(code, out.str());
}

}  // namespace cml
