// Lab NN public tests: the prediction on the CPU (graded without a GPU), the kernel on the
// GPU against the CPU. Every failure says what was run (size, seed), what came out, what was
// expected, and where to look: CHECKs carry an INFO with the inputs and the hint, GPU
// results go through cml::compare and CML_REQUIRE_MATCH.
#include "cml/testing.hpp"
#include "scale_check.hpp"
#include "topic.cuh"

using labNN_test::check_scale;
using labNN_test::kScaleHint;

TEST_CASE("scale moves one float in and one out per element", "[labNN][host][model]") {
  INFO(
      "Hint: scale reads x[i] once and writes y[i] once: 2 * sizeof(float) bytes per "
      "element. Multiply in 64 bits (n * 8 overflows an int past 268 million).");
  for (int n : {1, 1000, 1 << 20, 1 << 30}) {
    INFO("scale_bytes(" << n << ")");
    CHECK(labNN::scale_bytes(n) == 8LL * n);
  }
}

TEST_CASE("The given baseline matches the CPU", "[labNN][gpu][given]") {
  const auto seed = cml::test_seed();
  for (int n : {1, 255, 256, 100003}) {
    CML_REQUIRE_MATCH(
        check_scale(labNN::scale_baseline, n, 2.5f, seed, "the baseline is given code"));
  }
}

TEST_CASE("scale matches the CPU at awkward sizes", "[labNN][gpu][kernel]") {
  const auto seed = cml::test_seed();
  for (int n : {1, 31, 32, 33, 255, 257, 1000, 1 << 20}) {
    CML_REQUIRE_MATCH(check_scale(labNN::scale, n, 3.0f, seed, kScaleHint));
  }
}
