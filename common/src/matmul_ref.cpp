// CPU matrix product in double precision.
#include "cml/matmul_ref.hpp"

#include <algorithm>
#include <cmath>

#include "cml/parallel.hpp"

namespace cml {

MatmulReference matmul_reference(const std::vector<float>& a, const std::vector<float>& b,
                                 std::size_t rows, std::size_t inner, std::size_t cols,
                                 const std::vector<std::size_t>& only_rows) {
  std::vector<std::size_t> which = only_rows;
  if (which.empty()) {
    which.resize(rows);
    for (std::size_t r = 0; r < rows; ++r) which[r] = r;
  }
  MatmulReference ref;
  ref.value.assign(which.size() * cols, 0.0);
  ref.magnitude.assign(which.size() * cols, 0.0);
  // Rows are independent: split them over the cores (a 1024-cube product is a billion
  // multiply-adds, seconds on one core while the test holds the GPU).
  const std::size_t row_work = std::max<std::size_t>(inner * cols, 1);
  parallel_for(which.size(), (std::size_t{1} << 22) / row_work + 1,
               [&](std::size_t begin, std::size_t end) {
                 for (std::size_t i = begin; i < end; ++i) {
                   const std::size_t r = which[i];
                   double* value = &ref.value[i * cols];
                   double* magnitude = &ref.magnitude[i * cols];
                   // i-k-j order walks B and C along rows, which keeps the CPU reference cache-friendly.
                   for (std::size_t k = 0; k < inner; ++k) {
                     const double aik = a[r * inner + k];
                     const float* brow = &b[k * cols];
                     for (std::size_t j = 0; j < cols; ++j) {
                       const double p = aik * brow[j];
                       value[j] += p;
                       magnitude[j] += std::fabs(p);
                     }
                   }
                 }
               });
  return ref;
}

std::vector<std::size_t> sample_rows(std::size_t rows, std::size_t count) {
  std::vector<std::size_t> out;
  if (rows == 0 || count == 0) return out;
  if (count >= rows) {
    for (std::size_t r = 0; r < rows; ++r) out.push_back(r);
    return out;
  }
  out.push_back(0);
  out.push_back(rows - 1);
  for (std::size_t i = 1; out.size() < count; ++i) {
    const std::size_t r = i * rows / (count - 1);
    if (r > 0 && r < rows - 1) out.push_back(r);
    if (i > count) break;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<float> gather_rows(const std::vector<float>& matrix, std::size_t cols,
                               const std::vector<std::size_t>& rows) {
  std::vector<float> out;
  out.reserve(rows.size() * cols);
  for (std::size_t r : rows) {
    out.insert(out.end(), matrix.begin() + r * cols, matrix.begin() + (r + 1) * cols);
  }
  return out;
}

}  // namespace cml
