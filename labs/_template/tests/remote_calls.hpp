// The functions of topic.cu, for the grader's checker and runner (cml/remote.hpp): each call a
// test makes runs in the process that holds the student's code. List every function the
// student's file defines: its return type, name, parameters and arguments.
#pragma once

#include "topic.cuh"

// clang-format off
#define CML_REMOTE_CALLS(X)                                                                   \
  X(void, labNN::scale, (const float* d_x, float* d_y, int n, float a), (d_x, d_y, n, a))     \
  X(long long, labNN::scale_bytes, (int n), (n))
// clang-format on
