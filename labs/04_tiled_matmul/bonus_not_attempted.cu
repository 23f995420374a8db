// Lab 04's stand-in for the optional bonus: a weak definition of matmul_register_tiled, so a
// file without the bonus (the function deleted) still builds and keeps every required point.
// A file that defines matmul_register_tiled replaces this one (the linker takes a strong
// definition over a weak one); otherwise the bonus's tests and the bench's bonus comparison
// get the error below, and the bonus earns nothing.
#include <stdexcept>
#include <string>

#include "tiled_matmul.cuh"

namespace lab04 {

__attribute__((weak)) void matmul_register_tiled(const float*, const float*, float*, int n) {
  if (n <= 0 || n % kTile != 0) {  // the same refusal as the given part of the function
    throw std::invalid_argument("matmul_register_tiled: n = " + std::to_string(n) +
                                " must be a positive multiple of the tile width " +
                                std::to_string(kTile));
  }
  throw std::logic_error(
      "matmul_register_tiled is not in your file: the optional bonus is not attempted");
}

}  // namespace lab04
