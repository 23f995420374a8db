// The harness's own kernels: input generation and whole-output comparison (gpu_verify.hpp).
// Their names start with cml_ so that no lab's profiler regex (…_kernel) matches them.
#include "cml/gpu_verify.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "cml/check.hpp"

namespace cml {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;
constexpr unsigned long long kNone = ~0ull;

unsigned blocks_for(std::size_t count) {
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? (blocks > 0 ? blocks : 1) : kMaxBlocks);
}

// SplitMix64's finaliser: key + (i+1)·golden through it is SplitMix64's i-th output, a
// counter-based generator (any element computable on its own).
__host__ __device__ inline unsigned long long mix64(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__global__ void cml_fill_uniform(float* __restrict__ out, unsigned long long count,
                                 unsigned long long key, float lo, float span) {
  for (unsigned long long i =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < count; i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    const unsigned long long z = mix64(key + (i + 1) * 0x9E3779B97F4A7C15ull);
    out[i] = lo + span * (static_cast<float>(z >> 40) * 0x1.0p-24f);
  }
}

__global__ void cml_fill_bits(unsigned* __restrict__ out, unsigned long long count,
                              unsigned long long key) {
  for (unsigned long long i =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < count; i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    out[i] = static_cast<unsigned>(mix64(key + (i + 1) * 0x9E3779B97F4A7C15ull) >> 32);
  }
}

struct CompareArgs {
  const unsigned* got;
  const unsigned* want;
  unsigned long long count;
  unsigned long long stride, rows, cols;
  int map;  // IndexMap::Kind
  int exact;
  int is_float;
  double rel, abs;
};

__device__ inline unsigned long long source_index(const CompareArgs& a, unsigned long long i) {
  if (a.map == static_cast<int>(IndexMap::Kind::Strided)) return i * a.stride;
  if (a.map == static_cast<int>(IndexMap::Kind::Transposed))
    return (i % a.cols) * a.rows + i / a.cols;
  return i;
}

// counts[0]: mismatches, counts[1]: unwritten, counts[2]: lowest wrong index.
__global__ void cml_compare_words(CompareArgs a, unsigned long long* __restrict__ counts) {
  unsigned long long wrong = 0, unwritten = 0, first = kNone;
  for (unsigned long long i =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < a.count; i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    const unsigned g = a.got[i];
    const unsigned w = a.want[source_index(a, i)];
    bool ok;
    if (a.is_float) {
      const float gf = __uint_as_float(g), wf = __uint_as_float(w);
      if (a.exact) {
        ok = g == w && !isnan(wf);
      } else {
        ok = isfinite(gf) && isfinite(wf) &&
             fabs(static_cast<double>(gf) - static_cast<double>(wf)) <=
                 a.abs + a.rel * fabs(static_cast<double>(wf));
      }
    } else {
      ok = g == w;
    }
    if (!ok) {
      ++wrong;
      if (g == 0xFFFFFFFFu) ++unwritten;
      if (i < first) first = i;
    }
  }
  __shared__ unsigned long long s_wrong, s_unwritten, s_first;
  if (threadIdx.x == 0) {
    s_wrong = 0;
    s_unwritten = 0;
    s_first = kNone;
  }
  __syncthreads();
  if (wrong > 0) {
    atomicAdd(&s_wrong, wrong);
    atomicAdd(&s_unwritten, unwritten);
    atomicMin(&s_first, first);
  }
  __syncthreads();
  if (threadIdx.x == 0 && s_wrong > 0) {
    atomicAdd(&counts[0], s_wrong);
    atomicAdd(&counts[1], s_unwritten);
    atomicMin(&counts[2], s_first);
  }
}

std::string format_double(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", x);
  return text;
}

}  // namespace

std::size_t IndexMap::operator()(std::size_t i) const {
  switch (kind) {
    case Kind::Strided:
      return i * stride;
    case Kind::Transposed:
      return (i % cols) * rows + i / cols;
    case Kind::Identity:
      break;
  }
  return i;
}

std::size_t IndexMap::extent(std::size_t count) const {
  if (count == 0) return 0;
  switch (kind) {
    case Kind::Strided:
      return (count - 1) * stride + 1;
    case Kind::Transposed:
      if (rows * cols != count) {
        throw std::invalid_argument("IndexMap::transposed: " + std::to_string(rows) + "x" +
                                    std::to_string(cols) + " does not hold " +
                                    std::to_string(count) + " elements");
      }
      return count;
    case Kind::Identity:
      break;
  }
  return count;
}

std::string IndexMap::describe() const {
  switch (kind) {
    case Kind::Strided:
      return ", every " + std::to_string(stride) + "th element";
    case Kind::Transposed:
      return ", transposed";
    case Kind::Identity:
      break;
  }
  return "";
}

Tolerance sum_tolerance(std::size_t terms, double magnitude) {
  const double rel = 2.0 * static_cast<double>(terms < 1 ? 1 : terms) * std::ldexp(1.0, -24);
  return Tolerance{rel, rel * magnitude};
}

std::string Check::describe() const {
  if (exact) return "exact (bit for bit)";
  std::ostringstream out;
  out << "|got - expected| <= " << tolerance.abs << " + " << tolerance.rel << "·|expected|";
  return out.str();
}

std::string Check::where(std::size_t index) const {
  if (cols > 0) {
    return output_name + "[" + std::to_string(index / cols) + "][" + std::to_string(index % cols) +
           "]";
  }
  return output_name + "[" + std::to_string(index) + "]";
}

std::string describe_word(Elem elem, std::uint32_t bits) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08x", bits);
  if (elem == Elem::F32) {
    float f = 0;
    static_assert(sizeof f == sizeof bits);
    std::memcpy(&f, &bits, sizeof f);
    if (bits == 0xFFFFFFFFu) return std::string("nan (") + hex + ": never written)";
    if (std::isnan(f)) return std::string("nan (") + hex + ")";
    return format_double(f);
  }
  if (elem == Elem::I32) {
    std::int32_t v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return std::to_string(v) + " (" + hex + (bits == 0xFFFFFFFFu ? ": never written?)" : ")");
  }
  return std::to_string(bits) + " (" + hex + (bits == 0xFFFFFFFFu ? ": never written?)" : ")");
}

GpuComparer::GpuComparer() : counts_(3) {}

GpuMismatch GpuComparer::compare(const DeviceArray& got, const DeviceArray& expected,
                                 const IndexMap& map, const Check& check, bool exact) {
  if (!got || !expected) throw std::invalid_argument("GpuComparer::compare: no array");
  if (got.elem != expected.elem) {
    throw std::invalid_argument("GpuComparer::compare: output and expected types differ");
  }
  if (map.extent(got.count) > expected.count) {
    throw std::invalid_argument("GpuComparer::compare: the expected array holds " +
                                std::to_string(expected.count) + " elements, the map needs " +
                                std::to_string(map.extent(got.count)));
  }
  GpuMismatch result;
  result.elements = got.count;
  if (got.count == 0) return result;
  const unsigned long long init[3] = {0, 0, kNone};
  CUDA_CHECK(cudaMemcpyAsync(counts_.data(), init, sizeof init, cudaMemcpyHostToDevice, 0));
  CompareArgs a{};
  a.got = static_cast<const unsigned*>(got.data);
  a.want = static_cast<const unsigned*>(expected.data);
  a.count = got.count;
  a.stride = map.stride;
  a.rows = map.rows;
  a.cols = map.cols;
  a.map = static_cast<int>(map.kind);
  a.exact = (exact || check.exact) ? 1 : 0;
  a.is_float = got.elem == Elem::F32 ? 1 : 0;
  a.rel = check.tolerance.rel;
  a.abs = check.tolerance.abs;
  cml_compare_words<<<blocks_for(got.count), kThreads>>>(a, counts_.data());
  CUDA_CHECK_LAUNCH();
  unsigned long long counts[3] = {0, 0, 0};
  CUDA_CHECK(cudaMemcpy(counts, counts_.data(), sizeof counts, cudaMemcpyDeviceToHost));
  result.mismatches = counts[0];
  result.unwritten = counts[1];
  if (result.mismatches > 0 && counts[2] < got.count) {
    result.first_index = counts[2];
    const auto* g = static_cast<const std::uint32_t*>(got.data) + counts[2];
    const auto* w = static_cast<const std::uint32_t*>(expected.data) + map(counts[2]);
    CUDA_CHECK(cudaMemcpy(&result.got_bits, g, 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&result.expected_bits, w, 4, cudaMemcpyDeviceToHost));
  }
  return result;
}

void FreshInputs::uniform(DeviceBuffer<float>& buffer, float lo, float hi) {
  arrays_.push_back(Array{buffer.data(), buffer.size(), Elem::F32, lo, hi});
}

void FreshInputs::bits(DeviceBuffer<std::uint32_t>& buffer) {
  arrays_.push_back(Array{buffer.data(), buffer.size(), Elem::U32, 0.0f, 0.0f});
}

void FreshInputs::fill(std::uint64_t key) const {
  for (std::size_t k = 0; k < arrays_.size(); ++k) {
    const Array& a = arrays_[k];
    if (a.count == 0) continue;
    const unsigned long long array_key = mix64(key ^ (0xA24BAED4963EE407ull * (k + 1)));
    if (a.elem == Elem::F32) {
      cml_fill_uniform<<<blocks_for(a.count), kThreads>>>(static_cast<float*>(a.data), a.count,
                                                          array_key, a.lo, a.hi - a.lo);
    } else {
      cml_fill_bits<<<blocks_for(a.count), kThreads>>>(static_cast<unsigned*>(a.data), a.count,
                                                       array_key);
    }
    CUDA_CHECK_LAUNCH();
  }
}

bool FreshInputs::holds(const void* data, std::size_t count) const {
  for (const Array& a : arrays_) {
    if (a.data == data && a.count >= count) return true;
  }
  return false;
}

void poison(const DeviceArray& array) {
  if (!array || array.count == 0) return;
  CUDA_CHECK(cudaMemsetAsync(const_cast<void*>(array.data), kPoisonByte, array.bytes(), 0));
}

}  // namespace cml
