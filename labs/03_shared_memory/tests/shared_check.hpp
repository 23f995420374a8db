// Lab 03 test helpers: run a reverse, the three-array reverse or a blur on fresh random data
// from the run's seed, in buffers with guard zones, and compare with what the CPU computes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/compare.hpp"
#include "cml/guard_check.hpp"
#include "cml/parallel.hpp"
#include "cml/random.hpp"
#include "shared_memory.cuh"

namespace lab03_test {

inline constexpr std::size_t kGuardBytes = 4096;

inline const char* kReverseHint =
    "every thread copies its elements into shared memory, then __syncthreads(), then writes "
    "element i from position n-1-i; a thread must not read what another thread has not yet "
    "stored.";

inline const char* kCarveHint =
    "all three arrays live in one extern buffer at once: the floats start at the first multiple "
    "of 4 at or after the bytes' end, the doubles at the first multiple of 8 after the floats' "
    "end, and the launch asks for plan_shared_layout(...).total_bytes.";

inline const char* kBlurHint =
    "block b owns outputs b*tile .. b*tile+tile-1 and stages inputs from b*tile-radius to "
    "b*tile+tile+radius-1, clamped to 0..n-1; output i reads window[i-start .. "
    "i-start+2*radius]. Check the last (partial) block and the __syncthreads() between staging "
    "and reading.";

/// An exact element-by-element comparison for any copyable type, reported like cml::compare.
template <class T>
cml::CompareResult exact_match(const std::vector<T>& got, const std::vector<T>& want,
                               const std::string& name, const std::string& size, std::uint64_t seed,
                               const std::string& hint) {
  cml::CompareResult result;
  result.checked = got.size();
  std::ostringstream lines;
  lines << std::setprecision(sizeof(T) >= 8 ? 17 : 9);
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) == 0) continue;
    if (++result.mismatches <= 5) {
      lines << "  " << name << "[" << i << "] = " << +got[i] << ", expected " << +want[i] << "\n";
    }
  }
  if (got.size() != want.size()) ++result.mismatches;
  result.ok = result.mismatches == 0;
  if (!result.ok) {
    std::ostringstream out;
    out << result.mismatches << " of " << got.size() << " elements of " << name
        << " are wrong (size " << size << ", seed " << seed << "):\n"
        << lines.str();
    if (result.mismatches > 5) out << "  ... and " << result.mismatches - 5 << " more\n";
    out << "Hint: " << hint << "\n";
    result.message = out.str();
  }
  return result;
}

/// A failed result carrying `message`.
inline cml::CompareResult failure(const std::string& message) {
  cml::CompareResult bad;
  bad.ok = false;
  bad.message = message;
  return bad;
}

/// An out-of-bounds write reported by a buffer's guard zones, or success.
template <class T>
cml::CompareResult guards_ok(const cml::DeviceBuffer<T>& buffer, const std::string& name,
                             const std::string& size, std::uint64_t seed) {
  return cml::check_guards(buffer, name, size, seed,
                           "a thread wrote past the array; loop bounds must stop at n.");
}

/// Reverses n random ints in place with `reverse` and checks the result.
inline cml::CompareResult check_reverse(const std::function<void(int*, int)>& reverse, int n,
                                        std::uint64_t seed) {
  const auto input = cml::random_ints(static_cast<std::size_t>(n), cml::derive_seed(seed, n),
                                      -1'000'000, 1'000'000);
  cml::DeviceBuffer<int> d_data(input.size(), kGuardBytes);
  d_data.upload(input);
  const cml::LaunchCounter launches;
  reverse(d_data.data(), n);
  if (auto k = cml::require_kernel(launches, "the reverse call"); n > 0 && !k.ok) return k;
  const auto got = d_data.download();
  const std::string size = "n=" + std::to_string(n);
  if (auto g = guards_ok(d_data, "data", size, seed); !g.ok) return g;
  std::vector<int> want(input.rbegin(), input.rend());
  cml::CompareContext ctx;
  ctx.name = "data";
  ctx.size = size;
  ctx.seed = seed;
  ctx.hint = kReverseHint;
  return cml::compare_exact(got, want, ctx);
}

/// Random doubles whose low bits matter (not representable as floats).
inline std::vector<double> random_doubles(std::size_t count, std::uint64_t seed) {
  const auto hi = cml::random_floats(count, cml::derive_seed(seed, 1));
  const auto lo = cml::random_floats(count, cml::derive_seed(seed, 2));
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = hi[i] + 1e-9 * lo[i];
  return out;
}

/// Runs carve_reverse on three random arrays and checks each one.
inline cml::CompareResult check_carve(int n_bytes, int n_floats, int n_doubles,
                                      std::uint64_t seed) {
  const std::uint64_t s =
      cml::derive_seed(seed, 1'000'003ull * n_bytes + 1009ull * n_floats + n_doubles);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n_bytes));
  const auto ints = cml::random_ints(bytes.size(), cml::derive_seed(s, 0), 0, 255);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(ints[i]);
  const auto floats =
      cml::random_floats(static_cast<std::size_t>(n_floats), cml::derive_seed(s, 1));
  const auto doubles = random_doubles(static_cast<std::size_t>(n_doubles), cml::derive_seed(s, 2));

  // Empty buffers still get a guard zone, so a write to a zero-length array is caught too.
  cml::DeviceBuffer<std::uint8_t> d_bytes(bytes.size(), kGuardBytes);
  cml::DeviceBuffer<float> d_floats(floats.size(), kGuardBytes);
  cml::DeviceBuffer<double> d_doubles(doubles.size(), kGuardBytes);
  d_bytes.upload(bytes);
  d_floats.upload(floats);
  d_doubles.upload(doubles);
  const cml::LaunchCounter launches;
  lab03::carve_reverse(d_bytes.data(), n_bytes, d_floats.data(), n_floats, d_doubles.data(),
                       n_doubles);
  if (auto k = cml::require_kernel(launches, "carve_reverse"); !k.ok) return k;
  const std::string size = "bytes=" + std::to_string(n_bytes) +
                           ", floats=" + std::to_string(n_floats) +
                           ", doubles=" + std::to_string(n_doubles);
  const auto got_bytes = d_bytes.download();
  const auto got_floats = d_floats.download();
  const auto got_doubles = d_doubles.download();
  if (auto g = guards_ok(d_bytes, "bytes", size, seed); !g.ok) return g;
  if (auto g = guards_ok(d_floats, "floats", size, seed); !g.ok) return g;
  if (auto g = guards_ok(d_doubles, "doubles", size, seed); !g.ok) return g;
  if (auto r =
          exact_match(got_bytes, {bytes.rbegin(), bytes.rend()}, "bytes", size, seed, kCarveHint);
      !r.ok) {
    return r;
  }
  if (auto r = exact_match(got_floats, {floats.rbegin(), floats.rend()}, "floats", size, seed,
                           kCarveHint);
      !r.ok) {
    return r;
  }
  return exact_match(got_doubles, {doubles.rbegin(), doubles.rend()}, "doubles", size, seed,
                     kCarveHint);
}

/// Computes the blur of `input` on the GPU with `blur` (into a poisoned, guarded output) and
/// compares it with a double-precision CPU blur.
inline cml::CompareResult check_blur(
    const std::function<void(const float*, float*, int, int)>& blur,
    const std::vector<float>& input, int radius, std::uint64_t seed, const std::string& hint,
    const std::string& extra = "") {
  const int n = static_cast<int>(input.size());
  cml::DeviceBuffer<float> d_in(input.size()), d_out(input.size(), kGuardBytes);
  d_in.upload(input);
  d_out.poison();
  const cml::LaunchCounter launches;
  blur(d_in.data(), d_out.data(), n, radius);
  if (auto k = cml::require_kernel(launches, "the blur"); n > 0 && !k.ok) return k;
  const auto got = d_out.download();
  const std::string size = "n=" + std::to_string(n) + ", radius=" + std::to_string(radius) + extra;
  if (auto g = guards_ok(d_out, "out", size, seed); !g.ok) return g;

  std::vector<double> want(input.size()), magnitude(input.size());
  const double width = 2.0 * radius + 1.0;
  cml::parallel_for(static_cast<std::size_t>(n), std::size_t{1} << 18,
                    [&](std::size_t begin, std::size_t end) {
                      for (int i = static_cast<int>(begin); i < static_cast<int>(end); ++i) {
                        double sum = 0.0, mag = 0.0;
                        for (int k = -radius; k <= radius; ++k) {
                          const double v =
                              input[static_cast<std::size_t>(std::clamp(i + k, 0, n - 1))];
                          sum += v;
                          mag += v < 0 ? -v : v;
                        }
                        want[static_cast<std::size_t>(i)] = sum / width;
                        magnitude[static_cast<std::size_t>(i)] = mag / width;
                      }
                    });
  cml::CompareContext ctx;
  ctx.name = "out";
  ctx.size = size;
  ctx.seed = seed;
  ctx.hint = hint;
  return cml::compare(got, want, cml::float_sum_tolerance(2 * radius + 2), ctx, magnitude);
}

/// check_blur() on n fresh random inputs.
inline cml::CompareResult check_blur_random(
    const std::function<void(const float*, float*, int, int)>& blur, int n, int radius,
    std::uint64_t seed, const std::string& hint, const std::string& extra = "") {
  const auto input =
      cml::random_floats(static_cast<std::size_t>(n), cml::derive_seed(seed, 7919ull * n + radius));
  return check_blur(blur, input, radius, seed, hint, extra);
}

/// blur_shared with a fixed tile, as a function of (in, out, n, radius).
inline std::function<void(const float*, float*, int, int)> shared_blur_with_tile(int tile) {
  return [tile](const float* in, float* out, int n, int radius) {
    lab03::blur_shared(in, out, n, radius, tile);
  };
}

}  // namespace lab03_test
