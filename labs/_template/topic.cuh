/// \file
/// Lab NN, topic: the frozen interface. Every array is in device memory; every function
/// enqueues its work on the default stream and returns without waiting. Do not edit this
/// file: the grader builds with its own copy.
#pragma once

namespace labNN {

/// Given: y[i] = a * x[i] for i < n with one block walking the whole array. It is the
/// baseline the bench measures the student's kernel against.
void scale_baseline(const float* d_x, float* d_y, int n, float a);

/// y[i] = a * x[i] for i < n, one thread per element.
void scale(const float* d_x, float* d_y, int n, float a);

/// The prediction half of the lab, graded without a GPU: the bytes scale() moves between
/// the GPU and its memory for n elements, at the least.
long long scale_bytes(int n);

}  // namespace labNN
