/// \file
/// The project's one timing protocol. CUDA events bracket each launch on the legacy default
/// stream, so the stop event waits for all work the launch enqueued there (and on every
/// blocking stream); warm-up comes first; the L2 cache is flushed before every sample,
/// outside the window; the launch is told the sample number so it can rotate its inputs;
/// sampling repeats until the relative standard error of the mean is under the target or a
/// cap is reached; two cases are interleaved A B A B and the speedup is taken per pair.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "cml/buffer.hpp"

namespace cml {

/// Knobs of the protocol; the defaults are what the grader uses.
struct TimingOptions {
  int warmup = 3;             ///< untimed runs of each case before sampling
  int min_samples = 10;       ///< samples (or pairs) always taken
  int max_samples = 200;      ///< cap on samples (or pairs)
  double max_seconds = 30.0;  ///< cap on wall time for one measurement
  double target_rse = 0.01;   ///< stop once the relative standard error is below this
};

/// Summary of timing samples in milliseconds (or of per-pair ratios).
struct SampleStats {
  std::vector<double> samples;
  double median = 0, min = 0, max = 0, mean = 0, stdev = 0;
  double rse = 0;  ///< standard error of the mean over the mean
};

/// Computes median, min, max, mean, standard deviation and relative standard error.
SampleStats summarize(std::vector<double> samples);

/// Enqueues one run of the code under test on the legacy default stream (stream 0).
/// `sample` counts from 0; use it to pick one of several input sets.
using Launch = std::function<void(int sample)>;

/// A named launch: the baseline, the student's kernel, the reference, a library yardstick.
struct TimedCase {
  std::string name;
  Launch launch;
};

/// Result of timing two cases interleaved.
struct PairTiming {
  std::string baseline;
  std::string candidate;
  SampleStats baseline_ms;
  SampleStats candidate_ms;
  SampleStats speedup;  ///< baseline time / candidate time, one value per pair
  bool converged = false;
  double wall_seconds = 0;
};

/// RAII pair of CUDA events.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(cudaStream_t stream = 0);
  void stop(cudaStream_t stream = 0);
  /// Waits for the stop event and returns the time between the events.
  float elapsed_millis();

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

/// Evicts the L2 cache by writing a buffer at least twice its size.
class L2Flusher {
 public:
  explicit L2Flusher(std::size_t l2_bytes);
  void flush();
  std::size_t bytes() const { return buffer_.size(); }

 private:
  DeviceBuffer<unsigned char> buffer_;
  unsigned char next_ = 0;
};

/// Runs the protocol on the current device.
class Harness {
 public:
  Harness(std::size_t l2_bytes, TimingOptions options);

  /// One sample: flush L2, then time `launch(sample)` with events; checks for errors.
  double time_once(const Launch& launch, int sample);
  /// Samples one case until converged or capped.
  SampleStats time_single(const TimedCase& c, bool* converged = nullptr);
  /// Interleaves baseline and candidate, A B A B, until converged or capped.
  PairTiming time_pair(const TimedCase& baseline, const TimedCase& candidate);

  const TimingOptions& options() const { return options_; }
  std::size_t flush_bytes() const { return flusher_.bytes(); }

 private:
  TimingOptions options_;
  L2Flusher flusher_;
  EventTimer timer_;
};

}  // namespace cml
