// Lab NN public tests: the prediction on the CPU, the kernel on the GPU.
#include <vector>

#include "cml/buffer.hpp"
#include "cml/random.hpp"
#include "cml/testing.hpp"
#include "topic.cuh"

TEST_CASE("scale moves one float in and one out per element", "[labNN][host][model]") {
  CHECK(labNN::scale_bytes(1) == 8);
  CHECK(labNN::scale_bytes(1000) == 8000);
}

TEST_CASE("scale matches the CPU at awkward sizes", "[labNN][gpu][kernel]") {
  const auto seed = cml::test_seed();
  for (int n : {1, 31, 32, 33, 1000, 1 << 20}) {
    const auto x = cml::random_floats(n, cml::derive_seed(seed, n));
    cml::DeviceBuffer<float> d_x(n), d_y(n, 1024);
    d_x.upload(x);
    d_y.poison();
    labNN::scale(d_x.data(), d_y.data(), n, 3.0f);
    std::vector<double> expected(x.begin(), x.end());
    for (auto& e : expected) e *= 3.0;
    cml::CompareContext ctx;
    ctx.name = "y";
    ctx.size = "n=" + std::to_string(n);
    ctx.seed = seed;
    ctx.hint = "one thread per element; guard the tail with i < n.";
    CML_REQUIRE_MATCH(cml::compare(d_y.download(), expected, {}, ctx));
    REQUIRE(d_y.guard_report().empty());
  }
}
