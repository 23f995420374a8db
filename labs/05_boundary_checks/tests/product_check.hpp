// Runs one I×J×K matrix product through the shared matrix-product check
// (cml/matmul_check.hpp): fresh random inputs from the run's seed, a poisoned output, a
// double-precision reference; then a report that says which tiles hold the wrong elements,
// so a kernel that only works for multiples of the tile is told to look at its edge tiles.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "boundary_checks.cuh"
#include "cml/buffer.hpp"
#include "cml/compare.hpp"
#include "cml/matmul_check.hpp"
#include "cml/matmul_ref.hpp"

namespace lab05_test {

/// C (rows×cols) = A (rows×inner) · B (inner×cols): I, J and K in the handout.
struct Shape {
  int rows = 1;
  int inner = 1;
  int cols = 1;

  std::string text() const {
    return "I=" + std::to_string(rows) + ", J=" + std::to_string(inner) +
           ", K=" + std::to_string(cols);
  }
  std::size_t a_count() const { return static_cast<std::size_t>(rows) * inner; }
  std::size_t b_count() const { return static_cast<std::size_t>(inner) * cols; }
  std::size_t c_count() const { return static_cast<std::size_t>(rows) * cols; }
};

inline Shape square(int n) { return {n, n, n}; }

/// Computes C = A·B for device matrices of the given shape.
using Matmul = std::function<void(const float* a, const float* b, float* c, const Shape& s)>;

/// matmul_general (or any rows/inner/cols function) as a Matmul.
inline Matmul general(void (*fn)(const float*, const float*, float*, int, int, int)) {
  return [fn](const float* a, const float* b, float* c, const Shape& s) {
    fn(a, b, c, s.rows, s.inner, s.cols);
  };
}

/// matmul_square (or any n×n function) as a Matmul; only for square shapes.
inline Matmul square_only(void (*fn)(const float*, const float*, float*, int)) {
  return [fn](const float* a, const float* b, float* c, const Shape& s) {
    if (s.rows != s.inner || s.inner != s.cols) {
      throw std::logic_error("test bug: an n×n function was given the shape " + s.text());
    }
    fn(a, b, c, s.rows);
  };
}

/// How the device buffers are laid out around the matrices.
enum class Padding {
  /// A and B are followed by NaN and C by a guard zone, each large enough for every index a
  /// kernel without boundary tests can form: such a kernel cannot fault, its unmasked loads
  /// past an array's end turn into NaN results and its stray stores are found in the guard.
  generous,
  /// Nothing around the arrays: for the cases run under compute-sanitizer, which reports any
  /// access outside them (memcheck's --padding keeps neighbouring allocations away).
  none,
};

/// Elements a kernel with tiles up to 64 wide can reach past the end of a matrix whose rows
/// are `row_length` long, when it tests no index at all.
inline std::size_t reach_past_end(int row_length) {
  return 64 * (static_cast<std::size_t>(row_length) + 1);
}

/// The shape as the shared check (cml/matmul_check.hpp) takes it.
inline cml::MatmulProblem problem(const Shape& s) {
  cml::MatmulProblem p;
  p.rows = s.rows;
  p.inner = s.inner;
  p.cols = s.cols;
  p.size = s.text();
  return p;
}

/// A and B for one shape, derived from `seed` (different for every shape).
inline std::pair<std::vector<float>, std::vector<float>> make_inputs(const Shape& s,
                                                                     std::uint64_t seed) {
  const std::uint64_t tag = (static_cast<std::uint64_t>(s.rows) * 100'003u + s.inner) * 100'019u +
                            static_cast<std::uint64_t>(s.cols);
  return cml::matmul_inputs(problem(s), seed, tag);
}

/// Says where the wrong elements of `got` lie relative to the tiles of C, A and B, and what
/// that points at. `rows` lists the row numbers of C that `got` holds (all rows when empty);
/// `nan_after_inputs` says A and B were followed by NaN (Padding::generous).
inline std::string edge_report(const Shape& s, int tile, const std::vector<float>& got,
                               const cml::MatmulReference& ref,
                               const std::vector<std::size_t>& rows, const cml::Tolerance& tol,
                               bool nan_after_inputs = false) {
  const int full_rows = s.rows / tile * tile;  // rows of C in full (interior) block rows
  const int full_cols = s.cols / tile * tile;
  const int padded_cols = (s.cols + tile - 1) / tile * tile;
  const bool ragged_i = s.rows % tile != 0;
  const bool ragged_j = s.inner % tile != 0;
  const bool ragged_k = s.cols % tile != 0;
  std::ostringstream out;
  if (!ragged_i && !ragged_j && !ragged_k) {
    out << "I, J and K are all multiples of the " << tile
        << "-wide tile, so there are no edge tiles here: look at the index arithmetic and "
           "the barriers.\n";
    return out.str();
  }

  // Three groups of C's elements: those in edge tiles; interior ones where a store for
  // col >= K from the row above lands if the store is not tested (the first K_pad-K columns);
  // the rest of the interior.
  struct Group {
    std::vector<float> got;
    std::vector<double> value, magnitude;
    cml::CompareResult result;
  } edge, landing, interior;
  std::size_t stray_nan = 0;
  std::size_t zeros = 0;  // elements that are 0 where the product is not
  const std::size_t cols = static_cast<std::size_t>(s.cols);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const std::size_t row = rows.empty() ? i / cols : rows[i / cols];
    const std::size_t col = i % cols;
    Group* g = &interior;
    if (static_cast<int>(row) >= full_rows || static_cast<int>(col) >= full_cols) {
      g = &edge;
    } else if (row >= 1 && static_cast<int>(col) < padded_cols - s.cols) {
      g = &landing;
    }
    g->got.push_back(got[i]);
    g->value.push_back(ref.value[i]);
    g->magnitude.push_back(ref.magnitude[i]);
    if (std::isnan(got[i]) && !cml::is_poison(got[i])) ++stray_nan;
    if (got[i] == 0.0f && ref.value[i] != 0.0) ++zeros;
  }
  for (Group* g : {&edge, &landing, &interior}) {
    g->result = cml::compare(g->got, g->value, tol, cml::CompareContext{}, g->magnitude);
  }

  std::vector<std::string> where;
  if (ragged_i) {
    where.push_back("C's last block row holds rows " + std::to_string(full_rows) + ".." +
                    std::to_string(s.rows - 1));
  }
  if (ragged_k) {
    where.push_back("C's last block column holds columns " + std::to_string(full_cols) + ".." +
                    std::to_string(s.cols - 1));
  }
  if (ragged_j) {
    const int phases = (s.inner + tile - 1) / tile;
    where.push_back((phases == 1 ? std::string("the only phase")
                                 : "the last of " + std::to_string(phases) + " phases") +
                    " covers only k = " + std::to_string(s.inner / tile * tile) + ".." +
                    std::to_string(s.inner - 1) +
                    " (the edge tiles of A's last tile column and B's last tile row)");
  }
  out << "Edge tiles (" << tile << "×" << tile << " tiles, " << s.text() << "): ";
  for (std::size_t w = 0; w < where.size(); ++w) out << (w > 0 ? "; " : "") << where[w];
  out << ".\n";

  const std::size_t interior_bad = landing.result.mismatches + interior.result.mismatches;
  const std::size_t interior_all = landing.got.size() + interior.got.size();
  out << "Wrong elements: " << edge.result.mismatches << " of " << edge.got.size()
      << " in C's edge tiles, " << interior_bad << " of " << interior_all
      << " in its interior tiles.\n";
  if (edge.result.mismatches > 0 && interior_bad == 0) {
    out << "The errors are in the edge tiles only.";
    if (interior_all == 0) out << " (Here all of C lies in edge tiles.)";
    out << "\n";
  }
  if (edge.result.mismatches > 0) {
    out << "- In an edge tile, threads load 0 where row >= I (A) or col >= K (B) and store only "
           "when row < I and col < K; threads with no element of C must not return early, "
           "since their loads feed their neighbours.\n";
  }
  if (edge.result.unwritten > 0) {
    out << "- " << edge.result.unwritten
        << " edge-tile elements were never written: the grid needs ceil(I/" << tile << ") × ceil(K/"
        << tile << ") blocks (integer division drops the edge tiles).\n";
  }
  if (landing.result.mismatches > 0 && interior.result.mismatches == 0) {
    out << "- The wrong interior elements are all in the first " << padded_cols - s.cols
        << " columns of a row: where a store for col >= K from the edge tile of the row above "
           "lands when the store is not tested (it runs past the row's end into the next).\n";
  }
  if (interior.result.mismatches > 0 && ragged_j) {
    out << "- The interior is wrong too, and J = " << s.inner << " is not a multiple of " << tile
        << ": every element of C sums over the partial last phase. Run ceil(J/" << tile
        << ") phases and load 0 where k >= J (an A load with k >= J silently reads the next "
           "row of A).\n";
  }
  if (interior.result.mismatches > 0 && !ragged_j) {
    out << "- The interior is wrong too, although J is a multiple of " << tile
        << ": this is not only an edge problem. Check the row lengths (A's rows are J long, "
           "B's and C's K long) and the barriers.\n";
  }
  const std::size_t wrong_values = edge.result.mismatches + interior_bad - edge.result.unwritten -
                                   landing.result.unwritten - interior.result.unwritten;
  if (zeros > 0 && zeros == wrong_values && s.inner < tile) {
    out << "- Every wrong element is exactly 0, as if no phase ran: J = " << s.inner
        << " is less than the tile, so J/" << tile << " is 0; run ceil(J/" << tile << ") phases.\n";
  }
  if (stray_nan > 0 && nan_after_inputs) {
    out << "- NaN results (" << stray_nan
        << "): in these tests A and B are followed by NaN, so a load past the end of A or B "
           "was used instead of 0.\n";
  }
  return out.str();
}

/// Runs `matmul` on A, B and checks C. `check_rows` > 0 checks only that many rows of C
/// (first, last and spread between) so large sizes stay quick on the CPU.
inline cml::CompareResult check_product(const Matmul& matmul, const std::vector<float>& a,
                                        const std::vector<float>& b, const Shape& s,
                                        std::uint64_t seed, const std::string& hint,
                                        std::size_t check_rows = 0,
                                        Padding padding = Padding::generous) {
  const bool pad = padding == Padding::generous;
  cml::MatmulProblem p = problem(s);
  p.seed = seed;
  p.hint = hint;
  p.guard_hint =
      "a thread of an edge tile stored outside C; test row < I && col < K before "
      "the store.";
  p.check_rows = check_rows;
  p.a_tail = pad ? reach_past_end(s.inner) : 0;
  p.b_tail = pad ? reach_past_end(s.cols) : 0;
  p.c_guard_bytes = pad ? reach_past_end(s.cols) * sizeof(float) : 0;
  const auto product = [&](const float* d_a, const float* d_b, float* d_c) {
    matmul(d_a, d_b, d_c, s);
  };
  cml::MatmulCheck c = cml::check_matmul(product, a, b, p);
  if (!c.result.ok && !c.got.empty()) {
    c.result.message += edge_report(s, lab05::kTile, c.got, c.reference, c.rows, c.tolerance, pad);
  }
  return c.result;
}

/// make_inputs() then check_product().
inline cml::CompareResult check_random(const Matmul& matmul, const Shape& s, std::uint64_t seed,
                                       const std::string& hint, std::size_t check_rows = 0,
                                       Padding padding = Padding::generous) {
  const auto [a, b] = make_inputs(s, seed);
  return check_product(matmul, a, b, s, seed, hint, check_rows, padding);
}

inline const char* kSquareHint =
    "n need not be a multiple of the tile: ceil(n/TILE) blocks per side and phases, loads "
    "that test row and column against n separately and load 0 outside, a tested store.";

inline const char* kGeneralHint =
    "A is I×J, B is J×K, C is I×K: rows are tested against I, k against J, columns against K; "
    "A's row length is J, B's and C's is K.";

/// The square sizes of the lab: tiny, one off the tile, and not a multiple of anything.
inline const std::vector<int>& square_sizes() {
  static const std::vector<int> all = {1, 2, 3, 17, 31, 32, 33, 127, 128, 129};
  return all;
}

}  // namespace lab05_test
