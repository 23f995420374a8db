// Lab NN hidden tests.
#include "cml/testing.hpp"
#include "topic.cuh"

TEST_CASE("scale_bytes does not overflow", "[labNN][host][hidden][model]") {
  CHECK(labNN::scale_bytes(1 << 30) == 8LL * (1 << 30));
}
