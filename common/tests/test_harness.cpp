// The timing harness's own tests (cml/timing.hpp): what a timed call's time covers (work left
// running on a stream of its own, a copy after its kernel), that the code under test finds
// no trusted result in device memory while it runs and cannot pass by changing its inputs,
// and the device limits. Small arrays and a few pairs each: well under 2 s on an H100.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cml/bench.hpp"
#include "cml/buffer.hpp"
#include "cml/check.hpp"
#include "cml/device_info.hpp"
#include "cml/gpu_verify.hpp"
#include "cml/testing.hpp"
#include "cml/timing.hpp"
#include "harness_kernels.hpp"

// Skips the rest of a test case (Catch2 3's SKIP where it exists; 2.x has none, so the
// case says why and ends early there).
#ifdef SKIP
#define CML_SKIP_CASE(why) SKIP(why)
#else
#define CML_SKIP_CASE(why)      \
  do {                          \
    WARN("skipped: " << (why)); \
    return;                     \
  } while (false)
#endif

namespace {

constexpr std::size_t kCount = std::size_t{1} << 16;
constexpr std::size_t kBytes = kCount * sizeof(float);

cml::TimingOptions quick_options() {
  cml::TimingOptions o;
  o.warmup = 1;
  o.min_samples = 3;
  o.max_samples = 3;
  o.max_seconds = 1.0;
  o.seed = cml::test_seed();
  o.nonce = 0x5eed;
  return o;
}

// One input, the baseline's output and the candidate's, and a harness on the device.
struct Fixture {
  cml::DeviceInfo device;
  cml::DeviceBuffer<float> in{kCount}, base{kCount}, out{kCount};
  cml::FreshInputs inputs;
  cml::Harness harness;

  Fixture() : device(*cml::query_device(0)), harness(device.l2_bytes, quick_options()) {
    inputs.uniform(in);
  }

  // A trusted copy of the input into `dst`.
  cml::TimedCase copy_case(std::string name, cml::DeviceBuffer<float>& dst) {
    const float* src = in.data();
    float* to = dst.data();
    return {std::move(name), [=](const cml::Sample&) { cml_test::copy_floats(src, to, kCount); },
            cml::device_array(dst)};
  }

  // The copy as the baseline against `candidate`, which writes `out`; exact comparison.
  cml::Measurement pair(cml::Launch candidate) {
    cml::Measurement m;
    m.baseline = copy_case("baseline copy", base);
    m.candidate = {"candidate", std::move(candidate), cml::device_array(out)};
    m.inputs = &inputs;
    m.check = cml::Check::exact_match("out");
    return m;
  }

  // A candidate that copies honestly.
  cml::Launch honest() {
    const float* src = in.data();
    float* dst = out.data();
    return [=](const cml::Sample&) { cml_test::copy_floats(src, dst, kCount); };
  }
};

// Whether every word of a device array holds the poison pattern (copied to the host).
bool all_poison(const void* data, std::size_t count) {
  std::vector<std::uint32_t> words(count);
  CUDA_CHECK(cudaMemcpy(words.data(), data, count * 4, cudaMemcpyDeviceToHost));
  return std::all_of(words.begin(), words.end(), [](std::uint32_t w) { return w == 0xFFFFFFFFu; });
}

}  // namespace

TEST_CASE("The FP32 lanes per SM follow the programming guide's table", "[harness][host]") {
  CHECK(cml::fp32_lanes_per_sm(9, 0) == 128);  // H100
  CHECK(cml::fp32_lanes_per_sm(8, 0) == 64);   // A100
  CHECK(cml::fp32_lanes_per_sm(8, 6) == 128);
  CHECK(cml::fp32_lanes_per_sm(8, 9) == 128);
  CHECK(cml::fp32_lanes_per_sm(7, 5) == 64);
  CHECK(cml::fp32_lanes_per_sm(6, 0) == 64);
  CHECK(cml::fp32_lanes_per_sm(6, 1) == 128);
  CHECK(cml::fp32_lanes_per_sm(10, 0) == 128);
  CHECK(cml::fp32_lanes_per_sm(3, 5) == 0);  // unknown: no peak rather than a wrong one
}

TEST_CASE("Sampling stops once every series is stable, or at a cap", "[harness][host]") {
  cml::TimingOptions o;
  o.min_samples = 5;
  o.max_samples = 8;
  o.max_seconds = 60;
  o.target_rse = 0.01;
  cml::StoppingRule rule(o);
  rule.start();
  const std::vector<double> steady(5, 2.0), noisy = {1.0, 3.0, 1.0, 3.0, 1.0};
  const std::vector<double> few(4, 2.0);
  CHECK_FALSE(rule.converged(4, {&few}));  // fewer than min_samples
  CHECK(rule.converged(5, {&steady, &steady}));
  CHECK_FALSE(rule.converged(5, {&steady, &noisy}));  // one series still moves
  CHECK_FALSE(rule.capped(7, 7));
  CHECK(rule.capped(8, 8));                                      // max_samples kept
  CHECK(rule.capped(2, 2 * 8 + o.host_check.flag_min_refused));  // most runs refused
  o.max_seconds = -1;                                            // the time cap, already spent
  CHECK(cml::StoppingRule(o).capped(0, 0));
}

TEST_CASE("The runner's clock is believed only where the checker saw as much", "[harness][host]") {
  const cml::RemoteCheck rc;
  CHECK(rc.agrees(10.0, -0.2));  // the observation under the span: honest calls do that
  CHECK(rc.agrees(10.0, rc.slack_ms + rc.factor * 10.0));
  CHECK_FALSE(rc.agrees(10.0, rc.slack_ms + rc.factor * 10.0 + 0.01));
  // Two thirds of a 15 ms call's work kept from the clock: 5 ms claimed, 10 ms more seen.
  CHECK_FALSE(rc.agrees(5.0, 10.0));
  // A quarter of a 0.3 ms call hidden.
  CHECK_FALSE(rc.agrees(0.225, 0.075));
  CHECK(rc.describe().find("empty exchange") != std::string::npos);
}

TEST_CASE("Without a usable GPU the reason is said in a student's words", "[harness][host]") {
  std::string why;
  if (cml::query_device(0, &why)) CML_SKIP_CASE("this machine has a usable GPU");
  INFO("why: " << why);
  CHECK(why.find("insufficient") == std::string::npos);  // reads as "update your driver"
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) {
    CHECK(why == "no NVIDIA driver");
  } else {
    dlclose(driver);
    CHECK_FALSE(why.empty());
  }
}

TEST_CASE("A bench at its start gate says it is ready and goes only when told",
          "[harness][gpu][bench]") {
  const cml::DeviceInfo device = *cml::query_device(0);
  for (const char answer : {'g', '\0'}) {
    int pair[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
    bool went = false;
    std::thread bench([&] { went = cml::wait_at_start_gate(pair[1], device); });
    char ready = 0;
    REQUIRE(::read(pair[0], &ready, 1) == 1);
    CHECK(ready == 'r');
    if (answer != '\0') REQUIRE(::write(pair[0], &answer, 1) == 1);
    ::close(pair[0]);  // without an answer: the gate closed
    bench.join();
    CHECK(went == (answer == 'g'));
  }
}

TEST_CASE("A call's time covers work it leaves running on a stream of its own",
          "[harness][gpu][clock]") {
  Fixture f;
  if (!f.harness.clock().available()) CML_SKIP_CASE(f.harness.clock().status());
  cudaStream_t side = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  // clock64() counts SM cycles: at the maximum clock or below, the spin lasts spin_ms or more.
  const double spin_ms = 2.0;
  const int mhz = f.device.max_sm_clock_mhz > 0 ? f.device.max_sm_clock_mhz : 2000;
  const auto cycles = static_cast<long long>(spin_ms * mhz * 1e3);
  const float* src = f.in.data();
  float* dst = f.out.data();
  const cml::PairTiming t = f.harness.time_pair(f.pair([=](const cml::Sample&) {
    cml_test::spin(cycles, side);  // not waited for: the call returns while it runs
    cml_test::copy_floats(src, dst, kCount);
  }));
  CUDA_CHECK(cudaStreamDestroy(side));
  INFO(cml::summary(t));
  REQUIRE(t.candidate.verification.passed);
  REQUIRE(t.candidate.clock == "cupti");
  REQUIRE(t.candidate.ms.samples.size() == 3u);
  CHECK(t.candidate.ms.min >= 0.95 * spin_ms);
  // The events, on the legacy stream, do not wait for a non-blocking stream: they missed it,
  // which is a note; the time already counts the work, so it is no review flag.
  CHECK(t.candidate.activity.escaped_runs == t.candidate.activity.runs);
  CHECK(t.candidate.activity.records_min == 2u);
  CHECK_FALSE(t.review.notes.empty());
  CHECK_FALSE(t.review.flagged);
  CHECK(t.refused_pairs == 0);
  CHECK(t.baseline.activity.escaped_runs == 0);
}

TEST_CASE("A call's time covers a copy it makes after its kernel", "[harness][gpu][clock]") {
  Fixture f;
  if (!f.harness.clock().available()) CML_SKIP_CASE(f.harness.clock().status());
  // 256 MB: a copy of a tenth of a millisecond or more, well above the noise of a few
  // microseconds' kernel, so the two medians cannot cross by chance.
  constexpr std::size_t kCopyBytes = std::size_t{256} << 20;
  cml::DeviceBuffer<unsigned char> from(kCopyBytes), to(kCopyBytes);
  CUDA_CHECK(cudaMemset(from.data(), 1, kCopyBytes));
  const cml::PairTiming kernel_only = f.harness.time_pair(f.pair(f.honest()));
  const float* src = f.in.data();
  float* dst = f.out.data();
  unsigned char* copy_to = to.data();
  const unsigned char* copy_from = from.data();
  const cml::PairTiming with_copy = f.harness.time_pair(f.pair([=](const cml::Sample&) {
    cml_test::copy_floats(src, dst, kCount);
    CUDA_CHECK(cudaMemcpy(copy_to, copy_from, kCopyBytes, cudaMemcpyDeviceToDevice));
  }));
  INFO("kernel only: " << cml::summary(kernel_only));
  INFO("kernel and copy: " << cml::summary(with_copy));
  REQUIRE(kernel_only.candidate.verification.passed);
  REQUIRE(with_copy.candidate.verification.passed);
  CHECK(kernel_only.candidate.activity.records_max == 1u);
  CHECK(with_copy.candidate.activity.records_min == 2u);
  CHECK(with_copy.candidate.ms.median > kernel_only.candidate.ms.median);
}

TEST_CASE("While the candidate runs, every trusted output holds only poison",
          "[harness][gpu][trusted]") {
  Fixture f;
  int calls = 0, clean = 0;
  SECTION("the baseline's output, in every pair of an honest candidate") {
    cml::Measurement m = f.pair(nullptr);
    const void* trusted = m.baseline.output.data;
    const cml::Launch copy = f.honest();
    m.candidate.launch = [&, trusted, copy](const cml::Sample& s) {
      ++calls;
      clean += all_poison(trusted, kCount) ? 1 : 0;
      copy(s);
    };
    const cml::PairTiming t = f.harness.time_pair(m);
    INFO(cml::summary(t));
    REQUIRE(t.candidate.verification.passed);
    CHECK(calls == 4);  // 1 warm-up and 3 timed pairs: the baseline ran in each before
    CHECK(clean == calls);
  }
  SECTION("a candidate that copies the baseline's output fails") {
    cml::Measurement m = f.pair(nullptr);
    const void* trusted = m.baseline.output.data;
    float* dst = f.out.data();
    m.candidate.launch = [=](const cml::Sample&) {
      CUDA_CHECK(cudaMemcpy(dst, trusted, kBytes, cudaMemcpyDeviceToDevice));
    };
    const cml::PairTiming t = f.harness.time_pair(m);
    INFO(cml::summary(t));
    CHECK_FALSE(t.candidate.verification.passed);
    REQUIRE(t.candidate.verification.first_failure.has_value());
    CHECK(t.candidate.verification.first_failure->mismatch.unwritten == kCount);
  }
  SECTION("a trusted reference's output, for a case timed alone") {
    cml::Measurement m;
    m.candidate = {"case", nullptr, cml::device_array(f.out)};
    m.reference = f.copy_case("reference copy", f.base);
    m.inputs = &f.inputs;
    m.check = cml::Check::exact_match("out");
    const void* trusted = m.reference.output.data;
    const cml::Launch copy = f.honest();
    m.candidate.launch = [&, trusted, copy](const cml::Sample& s) {
      ++calls;
      clean += all_poison(trusted, kCount) ? 1 : 0;
      copy(s);
    };
    const cml::CaseTiming t = f.harness.time_single(m);
    INFO(cml::summary(t));
    REQUIRE(t.result.verification.passed);
    CHECK(calls == 4);
    CHECK(clean == calls);
  }
}

TEST_CASE("A candidate that zeroes its inputs fails verification", "[harness][gpu][trusted]") {
  Fixture f;
  float* in = f.in.data();
  float* out = f.out.data();
  const cml::Launch zero_all = [=](const cml::Sample&) {
    CUDA_CHECK(cudaMemsetAsync(in, 0, kBytes, 0));
    CUDA_CHECK(cudaMemsetAsync(out, 0, kBytes, 0));
  };
  SECTION("against the baseline's output") {
    const cml::PairTiming t = f.harness.time_pair(f.pair(zero_all));
    INFO(cml::summary(t));
    // The measurement stops at the candidate's first wrong output (the warm-up pair), so
    // the baseline has warm-up runs only: every one of them matched itself.
    const cml::Verification& base = t.baseline.verification;
    CHECK(base.warmup_total > 0);
    CHECK(base.warmup_verified == base.warmup_total);
    CHECK_FALSE(base.first_failure.has_value());
    CHECK_FALSE(t.candidate.verification.passed);
    REQUIRE(t.candidate.verification.first_failure.has_value());
    CHECK(t.candidate.verification.first_failure->mismatch.mismatches > kCount / 2);
  }
  SECTION("against the input itself, read through an IndexMap") {
    const auto copy_of_input = [&](cml::Launch launch) {
      cml::Measurement m;
      m.candidate = {"copy", std::move(launch), cml::device_array(f.out)};
      m.inputs = &f.inputs;
      m.expected = cml::device_array(f.in);
      m.map = cml::IndexMap::identity();
      m.check = cml::Check::exact_match("out");
      return f.harness.time_single(m);
    };
    const cml::CaseTiming honest = copy_of_input(f.honest());
    INFO("honest: " << cml::summary(honest));
    CHECK(honest.result.verification.passed);
    const cml::CaseTiming zeroed = copy_of_input(zero_all);
    INFO("zeroed: " << cml::summary(zeroed));
    CHECK_FALSE(zeroed.result.verification.passed);
  }
}

TEST_CASE("The device limits are measured before anything is timed", "[harness][gpu][limits]") {
  const cml::DeviceInfo device = *cml::query_device(0);
  const cml::DeviceLimits limits = cml::measure_limits(device);
  INFO(limits.copy_method);
  INFO(limits.fp32_method);
  CHECK(limits.copy_gbytes_per_s > 0);
  CHECK_FALSE(limits.copy_method.empty());
  CHECK_FALSE(limits.fp32_method.empty());
  if (cml::fp32_lanes_per_sm(device.cc_major, device.cc_minor) > 0) {
    CHECK(limits.fp32_gflops > 0);
  }
  // No copy beats the memory's data rate: clock × 2 (double data rate) × bus width.
  if (device.max_mem_clock_mhz > 0 && device.mem_bus_bits > 0) {
    const double dram_gbytes_per_s = device.max_mem_clock_mhz * 1e-3 * 2 * device.mem_bus_bits / 8;
    INFO("the memory's data rate: " << dram_gbytes_per_s << " GB/s");
    CHECK(limits.copy_gbytes_per_s < 1.5 * dram_gbytes_per_s);
  }
}
