/// \file
/// Questions about a kernel asked of the process that holds it. A test that reads a kernel's
/// attributes or occupancy through these works the same whether the lab's code is linked into
/// the test (a student's own build) or runs in the grader's runner process (cml/remote.hpp):
/// a kernel identity that came from the runner is asked about there.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace cml {

/// cudaFuncGetAttributes() of `kernel`; throws cml::CudaError on failure.
cudaFuncAttributes func_attributes(const void* kernel);

/// cudaOccupancyMaxActiveBlocksPerMultiprocessor() of `kernel` launched with `block_threads`
/// threads and `dynamic_bytes` bytes of dynamic shared memory; throws cml::CudaError.
int max_active_blocks(const void* kernel, int block_threads, std::size_t dynamic_bytes);

}  // namespace cml
