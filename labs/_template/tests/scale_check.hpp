// Runs one scale call on the GPU and checks it against the CPU: random inputs from the
// run's seed, a poisoned output inside guard zones, the launch counted, and a report that
// names the element, the size, the seed and where to look.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/compare.hpp"
#include "cml/guard_check.hpp"
#include "cml/random.hpp"

namespace labNN_test {

/// y = a·x on n device floats (scale or the given baseline).
using Scale = std::function<void(const float* x, float* y, int n, float a)>;

inline const char* kScaleHint =
    "one thread per element: i = blockIdx.x * blockDim.x + threadIdx.x, and only threads "
    "with i < n load and store (the last block is partly past the end).";

/// Runs `scale` on n random floats and checks every element of y against a·x.
inline cml::CompareResult check_scale(const Scale& scale, int n, float a, std::uint64_t seed,
                                      const std::string& hint) {
  const auto x = cml::random_floats(static_cast<std::size_t>(n), cml::derive_seed(seed, n));
  cml::DeviceBuffer<float> d_x(x.size()), d_y(x.size(), 1024);
  d_x.upload(x);
  d_y.poison();
  const cml::LaunchCounter launches;
  scale(d_x.data(), d_y.data(), n, a);
  if (auto k = cml::require_kernel(launches, "scale"); !k.ok) return k;
  std::vector<double> expected(x.begin(), x.end());
  for (double& e : expected) e *= a;

  cml::CompareContext ctx;
  ctx.name = "y";
  ctx.size = "n=" + std::to_string(n);
  ctx.seed = seed;
  ctx.hint = hint;
  if (auto bad = cml::check_guards(d_y, ctx, hint); !bad.ok) return bad;
  return cml::compare(d_y.download(), expected, cml::Tolerance{1e-6, 0.0}, ctx);
}

}  // namespace labNN_test
