// Lab NN hidden tests: what the public tests do not pin down (large sizes, other factors).
#include "cml/testing.hpp"
#include "scale_check.hpp"
#include "topic.cuh"

TEST_CASE("scale is right for a size that is not a multiple of anything",
          "[labNN][gpu][hidden][kernel]") {
  const auto seed = cml::test_seed();
  for (float a : {-1.0f, 0.5f}) {
    CML_REQUIRE_MATCH(
        labNN_test::check_scale(labNN::scale, 3 * (1 << 20) + 7, a, seed, labNN_test::kScaleHint));
  }
}

TEST_CASE("scale_bytes counts in 64 bits at the largest n", "[labNN][host][hidden][model]") {
  INFO("Hint: 2 * sizeof(float) bytes per element, multiplied in long long.");
  CHECK(labNN::scale_bytes(2'147'483'647) == 8LL * 2'147'483'647);
}
