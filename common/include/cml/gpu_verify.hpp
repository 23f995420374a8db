/// \file
/// What the timing harness uses to trust a timed output without copying it to the host:
/// inputs regenerated on the GPU for every pair (FreshInputs), and a comparison kernel that
/// checks every element of an output against the expected result (GpuComparer).
///
/// Element types are 4-byte words: float (compared exactly or within a tolerance), and
/// 32-bit integers (compared exactly). NaN never passes; an element still holding the
/// poison pattern (0xFFFFFFFF) is counted as "never written".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/compare.hpp"

namespace cml {

/// The element type of a device array the harness poisons, fills or compares.
enum class Elem : std::uint8_t { F32, U32, I32 };

template <class T>
constexpr Elem elem_of() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, std::uint32_t> ||
                    std::is_same_v<T, std::int32_t>,
                "the harness handles float, uint32_t and int32_t arrays");
  if constexpr (std::is_same_v<T, float>) return Elem::F32;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return Elem::U32;
  else return Elem::I32;
}

/// A device array seen by the harness: where, how many elements, of what type.
struct DeviceArray {
  const void* data = nullptr;
  std::size_t count = 0;
  Elem elem = Elem::F32;
  std::size_t bytes() const { return count * 4; }
  explicit operator bool() const { return data != nullptr; }
};

template <class T>
DeviceArray device_array(const DeviceBuffer<T>& buffer) {
  return DeviceArray{buffer.data(), buffer.size(), elem_of<T>()};
}

/// Where the expected value of output element i sits in the expected array.
struct IndexMap {
  enum class Kind : std::uint8_t { Identity, Strided, Transposed };
  Kind kind = Kind::Identity;
  std::size_t stride = 1;          ///< Strided: expected[i * stride]
  std::size_t rows = 0, cols = 0;  ///< Transposed: the output is rows×cols, out[r][c] = in[c][r]

  static IndexMap identity() { return {}; }
  static IndexMap strided(std::size_t stride) { return {Kind::Strided, stride, 0, 0}; }
  static IndexMap transposed(std::size_t out_rows, std::size_t out_cols) {
    return {Kind::Transposed, 1, out_rows, out_cols};
  }
  /// The index in the expected array of output element i.
  std::size_t operator()(std::size_t i) const;
  /// Elements the expected array needs for an output of `count` elements.
  std::size_t extent(std::size_t count) const;
  /// "" for identity, ", transposed", ", every 8th element"
  std::string describe() const;
};

/// Tolerance of a float32 sum of `terms` terms whose magnitudes add up to about `magnitude`
/// (the sum of |term|): 2·terms·2⁻²⁴ relative, and the same times `magnitude` absolute. It
/// is the bound every correct accumulation order meets (common/src/compare.cpp's
/// float_sum_tolerance), with the per-element magnitude replaced by its expected value.
Tolerance sum_tolerance(std::size_t terms, double magnitude);

/// Whether the harness runs the candidate twice on the same inputs and requires identical bits.
enum class Determinism : std::uint8_t {
  Off,      ///< not checked
  Report,   ///< checked and reported, not required (arithmetic whose order may fairly vary)
  Require,  ///< checked; a difference fails the measurement like a wrong output
};

/// How an output is compared with the expected result.
struct Check {
  bool exact = true;              ///< bit-for-bit (and never NaN); else within `tolerance`
  Tolerance tolerance{0.0, 0.0};  ///< |got - expected| <= abs + rel·|expected|
  /// Only consulted for tolerance checks: an exact check against a deterministic trusted
  /// result is itself the determinism check.
  Determinism determinism = Determinism::Off;
  std::string output_name = "out";  ///< the array's name in messages
  std::size_t cols = 0;             ///< row length for out[row][col] in messages; 0: out[i]

  static Check exact_match(std::string name = "out", std::size_t cols = 0) {
    Check c;
    c.output_name = std::move(name);
    c.cols = cols;
    return c;
  }
  static Check within(Tolerance tol, Determinism determinism, std::string name = "out",
                      std::size_t cols = 0) {
    Check c;
    c.exact = false;
    c.tolerance = tol;
    c.determinism = determinism;
    c.output_name = std::move(name);
    c.cols = cols;
    return c;
  }
  /// "exact" or "|got - expected| <= 0.5 + 0.000488·|expected|"
  std::string describe() const;
  /// "C[17][4000]" or "out[12]"
  std::string where(std::size_t index) const;
};

/// The outcome of one comparison on the GPU.
struct GpuMismatch {
  std::uint64_t elements = 0;     ///< elements compared
  std::uint64_t mismatches = 0;   ///< wrong, NaN or never written
  std::uint64_t unwritten = 0;    ///< of those, still holding the poison pattern
  std::uint64_t first_index = 0;  ///< lowest wrong index (valid when mismatches > 0)
  std::uint32_t got_bits = 0;     ///< the output's word there
  std::uint32_t expected_bits = 0;
  bool ok() const { return mismatches == 0; }
};

/// A word's value as text: "21.5312", "nan (0xffffffff: never written)", "7 (0x00000007)".
std::string describe_word(Elem elem, std::uint32_t bits);

/// Compares on the device. Owns a few bytes of device memory for the counts.
class GpuComparer {
 public:
  GpuComparer();
  /// Compares every element of `got` with `expected[map(i)]` on the legacy default stream,
  /// waits for the result and fetches the first wrong pair of words. `exact` forces a
  /// bit-for-bit comparison whatever `check` says (the determinism check).
  GpuMismatch compare(const DeviceArray& got, const DeviceArray& expected, const IndexMap& map,
                      const Check& check, bool exact = false);

 private:
  DeviceBuffer<unsigned long long> counts_;
};

/// Input arrays regenerated on the GPU, from a counter-based hash of (key, array, element),
/// before every pair of timed runs: nothing a kernel could remember matches the next inputs.
class FreshInputs {
 public:
  /// Uniform floats in [lo, hi) (24 random bits each).
  void uniform(DeviceBuffer<float>& buffer, float lo = -1.0f, float hi = 1.0f);
  /// Random 32-bit words.
  void bits(DeviceBuffer<std::uint32_t>& buffer);
  /// Regenerates every array from `key` (enqueued on the legacy default stream).
  void fill(std::uint64_t key) const;
  bool empty() const { return arrays_.empty(); }
  /// Whether `data` is where one of the arrays starts (and the array holds `count` or more).
  bool holds(const void* data, std::size_t count) const;

 private:
  struct Array {
    void* data;
    std::size_t count;
    Elem elem;
    float lo, hi;
  };
  std::vector<Array> arrays_;
};

/// Poisons an output (every byte kPoisonByte) on the legacy default stream.
void poison(const DeviceArray& array);

}  // namespace cml
