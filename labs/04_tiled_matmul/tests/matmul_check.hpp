// Lab 04's n×n products through the shared matrix-product check (cml/matmul_check.hpp):
// fresh random inputs from the run's seed, a poisoned output with guard zones, a
// double-precision reference, and a report that names the element, the size and the seed.
// The bonus's products are checked for a kernel of their own as well (check_register).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/launch_count.hpp"
#include "cml/matmul_check.hpp"
#include "tiled_matmul.cuh"

namespace lab04_test {

/// Computes C = A·B for n×n device matrices.
using Matmul = std::function<void(const float* a, const float* b, float* c, int n)>;

/// C = A·B for n×n matrices, as the shared check (cml/matmul_check.hpp) takes it.
inline cml::MatmulProblem problem(int n, std::uint64_t seed, const std::string& hint,
                                  std::size_t check_rows = 0) {
  cml::MatmulProblem p;
  p.rows = p.inner = p.cols = n;
  p.size = "n=" + std::to_string(n);
  p.seed = seed;
  p.hint = hint;
  p.guard_hint = "every store must land inside the n×n output.";
  p.check_rows = check_rows;
  return p;
}

/// A and B for an n×n product, derived from `seed` (different for every n).
inline std::pair<std::vector<float>, std::vector<float>> make_inputs(int n, std::uint64_t seed) {
  return cml::matmul_inputs(problem(n, seed, ""), seed, static_cast<std::uint64_t>(n));
}

/// Runs `matmul` on A, B and checks C. `check_rows` > 0 checks only that many rows
/// (first, last and spread between) so large sizes stay quick on the CPU.
inline cml::CompareResult check_matmul(const Matmul& matmul, const std::vector<float>& a,
                                       const std::vector<float>& b, int n, std::uint64_t seed,
                                       const std::string& hint, std::size_t check_rows = 0) {
  const auto product = [&](const float* d_a, const float* d_b, float* d_c) {
    matmul(d_a, d_b, d_c, n);
  };
  return cml::check_matmul(product, a, b, problem(n, seed, hint, check_rows)).result;
}

/// make_inputs() then check_matmul().
inline cml::CompareResult check_random(const Matmul& matmul, int n, std::uint64_t seed,
                                       const std::string& hint, std::size_t check_rows = 0) {
  const auto [a, b] = make_inputs(n, seed);
  return check_matmul(matmul, a, b, n, seed, hint, check_rows);
}

/// The kernels the required products (matmul_tiled, matmul_tiled_dynamic with kMaxTile,
/// the given matmul_naive) launch for an n×n product, found once per n with their launches
/// logged but not made (cml::DryLaunches: nothing runs, so a sanitizer run of a bonus case
/// sees only the bonus's kernels). A call that throws adds what it launched before.
inline const std::set<const void*>& required_kernels(int n) {
  static std::map<int, std::set<const void*>> found;
  const auto known = found.find(n);
  if (known != found.end()) return known->second;
  std::set<const void*> kernels;
  const std::size_t count = static_cast<std::size_t>(n) * n;
  cml::DeviceBuffer<float> d_a(count), d_b(count), d_c(count);
  const auto note = [&](const std::function<void()>& call) {
    const cml::DryLaunches dry;
    const cml::LaunchLog log;
    try {
      call();
    } catch (const std::exception&) {
      // a required part not done yet launches nothing of its own
    }
    for (const void* k : log.kernels()) {
      if (k != nullptr) kernels.insert(k);
    }
  };
  note([&] { lab04::matmul_tiled(d_a.data(), d_b.data(), d_c.data(), n); });
  note(
      [&] { lab04::matmul_tiled_dynamic(d_a.data(), d_b.data(), d_c.data(), n, lab04::kMaxTile); });
  note([&] { lab04::matmul_naive(d_a.data(), d_b.data(), d_c.data(), n); });
  return found.emplace(n, std::move(kernels)).first->second;
}

/// Fails unless `launched`, the kernels matmul_register_tiled launched for an n×n product,
/// holds one that no required product launches at n. Only where the block tile divides n
/// (elsewhere the documented fallback runs matmul_tiled) and where this executable logs
/// launches.
inline cml::CompareResult require_own_kernel(const std::vector<const void*>& launched, int n) {
  cml::CompareResult r;
  if (n % lab04::kRegisterBlock != 0 || !cml::launch_counting_active()) return r;
  const std::set<const void*>& required = required_kernels(n);
  for (const void* k : launched) {
    if (k != nullptr && required.count(k) == 0) return r;
  }
  r.ok = false;
  r.message = "matmul_register_tiled (n=" + std::to_string(n) + ") launched " +
              (launched.empty() ? std::string("no kernel")
                                : "only kernels that matmul_tiled, matmul_tiled_dynamic or "
                                  "matmul_naive launch too") +
              ": the bonus must use its own register-tiled kernel wherever n is a multiple of "
              "kRegisterBlock (the fallback to matmul_tiled is for the other sizes only).";
  return r;
}

/// check_matmul() of matmul_register_tiled, then require_own_kernel() on the kernels that
/// call launched: the bonus's points need a right C made by the bonus's own kernel.
inline cml::CompareResult check_register(const std::vector<float>& a, const std::vector<float>& b,
                                         int n, std::uint64_t seed, const std::string& hint,
                                         std::size_t check_rows = 0) {
  std::vector<const void*> launched;
  const auto call = [&launched](const float* d_a, const float* d_b, float* d_c, int size) {
    const cml::LaunchLog log;
    lab04::matmul_register_tiled(d_a, d_b, d_c, size);
    launched = log.kernels();
  };
  const cml::CompareResult result = check_matmul(call, a, b, n, seed, hint, check_rows);
  if (!result.ok) return result;
  return require_own_kernel(launched, n);
}

/// make_inputs() then check_register().
inline cml::CompareResult check_register_random(int n, std::uint64_t seed, const std::string& hint,
                                                std::size_t check_rows = 0) {
  const auto [a, b] = make_inputs(n, seed);
  return check_register(a, b, n, seed, hint, check_rows);
}

inline const char* kTiledHint =
    "each block computes one tile of C; check the row/column of the element each thread "
    "loads in every phase, and that there is a __syncthreads() after loading the tiles and "
    "another after using them.";

}  // namespace lab04_test
