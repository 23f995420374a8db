// The timing protocol (see timing.hpp).
#include "cml/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "cml/check.hpp"

namespace cml {

SampleStats summarize(std::vector<double> samples) {
  SampleStats s;
  s.samples = samples;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  double ss = 0;
  for (double x : samples) ss += (x - s.mean) * (x - s.mean);
  s.stdev = n > 1 ? std::sqrt(ss / static_cast<double>(n - 1)) : 0.0;
  s.rse = (n > 1 && s.mean > 0) ? s.stdev / std::sqrt(static_cast<double>(n)) / s.mean : 1.0;
  return s;
}

EventTimer::EventTimer() {
  CUDA_CHECK(cudaEventCreate(&start_));
  CUDA_CHECK(cudaEventCreate(&stop_));
}
EventTimer::~EventTimer() {
  if (start_ != nullptr) cudaEventDestroy(start_);
  if (stop_ != nullptr) cudaEventDestroy(stop_);
}
void EventTimer::start(cudaStream_t stream) { CUDA_CHECK(cudaEventRecord(start_, stream)); }
void EventTimer::stop(cudaStream_t stream) { CUDA_CHECK(cudaEventRecord(stop_, stream)); }
float EventTimer::elapsed_millis() {
  CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

L2Flusher::L2Flusher(std::size_t l2_bytes)
    : buffer_(std::max<std::size_t>(2 * l2_bytes, std::size_t{8} << 20)) {}

void L2Flusher::flush() {
  // A different byte each time so no part of the write can be elided.
  CUDA_CHECK(cudaMemsetAsync(buffer_.data(), ++next_, buffer_.bytes(), 0));
}

Harness::Harness(std::size_t l2_bytes, TimingOptions options)
    : options_(options), flusher_(l2_bytes) {}

double Harness::time_once(const Launch& launch, int sample) {
  flusher_.flush();
  CUDA_CHECK(cudaDeviceSynchronize());
  timer_.start(0);
  launch(sample);
  timer_.stop(0);
  const double ms = timer_.elapsed_millis();
  // Anything still running elsewhere, or a fault inside the kernel, surfaces here.
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaGetLastError());
  return ms;
}

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
}  // namespace

SampleStats Harness::time_single(const TimedCase& c, bool* converged) {
  for (int i = 0; i < options_.warmup; ++i) time_once(c.launch, i);
  std::vector<double> samples;
  const auto t0 = Clock::now();
  bool done = false;
  while (static_cast<int>(samples.size()) < options_.max_samples) {
    samples.push_back(time_once(c.launch, static_cast<int>(samples.size())));
    if (static_cast<int>(samples.size()) >= options_.min_samples &&
        summarize(samples).rse < options_.target_rse) {
      done = true;
      break;
    }
    if (seconds_since(t0) > options_.max_seconds) break;
  }
  if (converged != nullptr) *converged = done;
  return summarize(samples);
}

PairTiming Harness::time_pair(const TimedCase& baseline, const TimedCase& candidate) {
  for (int i = 0; i < options_.warmup; ++i) {
    time_once(baseline.launch, i);
    time_once(candidate.launch, i);
  }
  std::vector<double> a, b, ratio;
  const auto t0 = Clock::now();
  PairTiming result;
  result.baseline = baseline.name;
  result.candidate = candidate.name;
  for (int i = 0; i < options_.max_samples; ++i) {
    a.push_back(time_once(baseline.launch, i));
    b.push_back(time_once(candidate.launch, i));
    ratio.push_back(b.back() > 0 ? a.back() / b.back() : 0.0);
    if (i + 1 >= options_.min_samples && summarize(a).rse < options_.target_rse &&
        summarize(b).rse < options_.target_rse && summarize(ratio).rse < options_.target_rse) {
      result.converged = true;
      break;
    }
    if (seconds_since(t0) > options_.max_seconds) break;
  }
  result.wall_seconds = seconds_since(t0);
  result.baseline_ms = summarize(a);
  result.candidate_ms = summarize(b);
  result.speedup = summarize(ratio);
  return result;
}

}  // namespace cml
