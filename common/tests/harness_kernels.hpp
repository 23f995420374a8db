// Small kernels for the harness's own tests (test_harness.cpp): each host function enqueues
// one kernel and returns without waiting.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace cml_test {

/// out[i] = in[i] for i < n, on `stream`.
void copy_floats(const float* in, float* out, std::size_t n, cudaStream_t stream = 0);

/// One thread spins until at least `cycles` SM clock cycles have passed, on `stream`.
void spin(long long cycles, cudaStream_t stream);

}  // namespace cml_test
