/// \file
/// The project's one timing protocol, and what makes its numbers trustworthy.
///
/// A measurement (time_pair: baseline A against candidate B, interleaved; or time_single:
/// one case) runs in pairs (or samples). Every pair runs in this order:
///  1. the inputs are regenerated on the GPU (FreshInputs) from the pair's key, derived from
///     the seed, a per-run random nonce, the measurement's names and the pair number, so no
///     two pairs see the same values, nothing a kernel remembers (a product stored by input
///     content) is ever reused, and no later pair's inputs can be known (and its result
///     prepared) earlier;
///  2. every trusted buffer (the baseline's output, the reference's output, the determinism
///     copy) is poisoned (every byte 0xFF: NaN for float), so no result the harness computed
///     for these inputs exists in device memory while the student's code runs;
///  3. the CANDIDATE runs, timed (time_single: the case);
///  4. for a determinism check, its output is copied aside, the inputs are regenerated from
///     the key and the candidate runs again, untimed: still before anything trusted runs;
///  5. the inputs are regenerated from the key again, undoing whatever the candidate did to
///     them; then the BASELINE runs, timed, and the trusted `reference`, untimed;
///  6. the candidate's timed output is compared with the trusted result, and the baseline's
///     is checked too.
/// The candidate always runs before the trusted side of its pair: the L2 cache is flushed
/// (a buffer twice its size written) and each output poisoned before every timed run, so
/// the order costs neither side time. `warmup` pairs run first, exactly like the others
/// (verified too), but are not timed.
///
/// The clock (cml/activity_clock.hpp). Each timed run is: the device synchronized and the
/// pending activity records discarded; `launch(sample)` between two CUDA events on the
/// legacy default stream; cudaDeviceSynchronize(); the records flushed. Its time is the span
/// of CUPTI's activity records (kernels, copies, sets) from the earliest start to the latest
/// end, on every stream: work the call leaves on a stream of its own, or a copy after its
/// kernel, is in the time. The harness's own work (poison, L2 flush, input generation,
/// comparison) happens before the discard or after the flush, never in the span. A call that
/// caused no device work has time 0. The event time and the host time (steady_clock around
/// [start event; launch; stop event; cudaDeviceSynchronize()]) are recorded beside it for
/// information; no run is ever refused for its host time. When the span exceeds the event
/// time (by more than EventCheck's tolerance) in most timed runs, the measurement carries a
/// note (work escaped the stream the events wait on): the time already counts that work. If
/// CUPTI dropped records during a run, or delivered one without timestamps, the run's time
/// is its host time (an upper bound).
///
/// Where CUPTI is unavailable (built without it, or another profiler such as ncu or
/// compute-sanitizer holds the subscription) the events are the clock and HostCheck
/// cross-checks them: work on a stream the events do not wait for still finishes before the
/// device-wide sync, and shows as host time beyond the event time. Honest runs on an H100
/// exceed their event time by 7-20 us, whatever the kernel's length or number of launches.
/// HostCheck's rules, applied with the events clock only:
///  (a) a run whose host time exceeds `factor` x its event time + `slack_ms` is *refused*:
///      its pair leaves the statistics (a lone refusal, the host thread descheduled once,
///      costs nothing);
///  (b) `flag_min_refused` refused pairs that are at least as many as the kept ones flag the
///      measurement for review and stop it (work escapes the events in most runs);
///  (c) pairs: the candidate's median margin (host - event time, over all its timed runs)
///      above `margin_factor` x the baseline's + `margin_slack_ms` flags it for review (work
///      escapes in every run, each time too little for (a)).
///
/// A candidate whose calls another process carries out (the grader's bench checker and the
/// runner, cml/remote.hpp) is timed by that process's activity clock, checked against this
/// process's own observation of each exchange (RemoteCheck): before every pair an empty
/// exchange of the same launch (its buffers mapped, the runner's clock run, nothing called)
/// calibrates the observation. The side's clock is then "runner" where they agree, else
/// "observed", with a note.
///
/// After every run (warm-up included) the WHOLE output is compared on the GPU with a result
/// the harness computes itself for the same inputs: the baseline's output of the same pair
/// (given, trusted code), the output of an untimed trusted `reference` launch, or an input
/// array read through an IndexMap (a copy, a transpose, a strided gather), regenerated after
/// the candidate ran, so a mutated input cannot make a wrong output match. Exact checks
/// compare bits (deterministic arithmetic: this is also the determinism check); tolerance
/// checks use |got - expected| <= abs + rel·|expected| and, if asked, compare the bits of the
/// candidate's two runs (step 4). NaN never passes. The first mismatch stops the measurement
/// and is reported with its pair, sample, index, got and expected.
///
/// The launches each timed call makes are counted (launch_count.hpp); a candidate call that
/// launches no kernel shows as 0 in the report.
///
/// NVTX ranges (NVTX3, header only) name every call of code under test, so a profiler can
/// select exactly what one interface call launched (`ncu --nvtx --nvtx-include
/// "cml:candidate/"`). In a pair they open in this order: candidate, determinism, baseline,
/// reference.
///  - `cml:candidate`    each timed or warm-up call of the candidate, and any untimed call
///                       of the student's code a bench makes for profiling;
///  - `cml:determinism`  the candidate's untimed second run on the same (regenerated)
///                       inputs, the determinism check: kept out of `cml:candidate`;
///  - `cml:baseline`     each timed or warm-up call of the baseline: as many as of the
///                       candidate, so a profile of one range can be divided by the other's;
///  - `cml:reference`    each call of an untimed trusted reference;
///  - `cml:case`         each call of a case timed alone (time_single: library yardsticks,
///                       sweeps of given kernels).
/// The harness's own kernels (input generation, comparison) and the L2 flush run outside
/// every range.
///
/// Sampling repeats until the relative standard error of the mean (of both sides and of
/// the per-pair ratio) is under the target, or a sample/time cap is reached.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cml/activity_clock.hpp"
#include "cml/buffer.hpp"
#include "cml/device_info.hpp"
#include "cml/gpu_verify.hpp"

namespace cml {

/// NVTX range names (see the file comment).
inline constexpr const char* kNvtxCandidate = "cml:candidate";
inline constexpr const char* kNvtxBaseline = "cml:baseline";
inline constexpr const char* kNvtxDeterminism = "cml:determinism";
inline constexpr const char* kNvtxReference = "cml:reference";
inline constexpr const char* kNvtxCase = "cml:case";

/// An NVTX push/pop range for the lifetime of the object.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

/// The host-time cross-check's rules (see the file comment), applied with the events clock.
struct HostCheck {
  double factor = 1.05;  ///< (a) refuse a run when host_ms > factor·event_ms + slack_ms
  double slack_ms = 0.1;
  int flag_min_refused = 3;        ///< (b) review when this many pairs were refused and they
                                   ///<     are at least as many as the kept ones
  double margin_factor = 2.0;      ///< (c) review when the candidate's median host-event margin
  double margin_slack_ms = 0.025;  ///<   > margin_factor·baseline's + margin_slack_ms
  bool refuses(double event_ms, double host_ms) const {
    return host_ms > factor * event_ms + slack_ms;
  }
  bool margin_suspect(double candidate_ms, double baseline_ms) const {
    return candidate_ms > margin_factor * baseline_ms + margin_slack_ms;
  }
  std::string describe() const;  ///< the three rules in one line
};

/// When a run's activity span counts as exceeding its event time (work escaped the stream
/// the events wait on): span_ms > factor·event_ms + slack_ms. A note, never a refusal.
struct EventCheck {
  double factor = 1.05;
  double slack_ms = 0.01;
  bool escaped(double event_ms, double span_ms) const {
    return span_ms > factor * event_ms + slack_ms;
  }
  std::string describe() const;
};

/// When the runner's clock is believed for a call the runner carried out (a bench run as
/// checker and runner, cml/remote.hpp): the checker observes each exchange itself (from its go
/// to the answer) and, before every pair, an empty exchange (the same launch with the same
/// buffers and the runner's clock running, nothing called). The runner's activity spans are
/// believed when the least (observation - span) over the kept calls exceeds the cheapest empty
/// exchange by at most slack_ms + factor x the spans' median: work kept from the runner's
/// clock shows in every call, and a busy host only ever delays an exchange, so minima compare
/// what the exchanges cost; while they disagree, sampling goes on (up to 8 x min_samples
/// kept) before the verdict. Else each observation less the cheapest empty exchange (and never
/// less than its span) is the run's time, and the side says so (RemoteStats::agreed): a time
/// that can only be longer, so a runner gains nothing by making its clock unbelievable.
struct RemoteCheck {
  double slack_ms = 0.05;
  double factor = 0.1;
  bool agrees(double runner_ms, double gap_ms) const {
    return gap_ms <= slack_ms + factor * runner_ms;
  }
  std::string describe() const;  ///< the rule in one line
};

/// Knobs of the protocol; the defaults are what the grader uses.
struct TimingOptions {
  int warmup = 3;             ///< untimed (but verified) runs of each case before sampling
  int min_samples = 5;        ///< samples (or pairs) always taken: the fewest the standard
                              ///< error is judged from; past them the target RSE decides
  int max_samples = 200;      ///< cap on samples (or pairs)
  double max_seconds = 30.0;  ///< cap on wall time for one measurement
  double target_rse = 0.01;   ///< stop once the relative standard error is below this
  std::uint64_t seed = 0;     ///< keys every input the harness generates ...
  /// ... together with this per-run random number, so the inputs of later pairs cannot be
  /// computed (and their results prepared during an untimed call) from the seed alone.
  std::uint64_t nonce = 0;
  HostCheck host_check;
  EventCheck event_check;
  RemoteCheck remote_check;
};

/// Summary of timing samples in milliseconds (or of per-pair ratios).
struct SampleStats {
  std::vector<double> samples;
  double median = 0, min = 0, max = 0, mean = 0, stdev = 0;
  double rse = 0;  ///< standard error of the mean over the mean
};

/// Computes median, min, max, mean, standard deviation and relative standard error.
SampleStats summarize(std::vector<double> samples);

/// What a launch is told about the run it makes. Both sides of a pair get the same Sample.
struct Sample {
  bool warmup = false;    ///< a warm-up run (verified, not timed)
  int pair = 0;           ///< the pair's (or sample's) number within its phase, from 0
  std::uint64_t key = 0;  ///< the key this pair's inputs came from: derive any per-pair
                          ///< parameter (a seed the kernel reads) from it
};

/// Enqueues one run of the code under test on the legacy default stream (stream 0).
using Launch = std::function<void(const Sample&)>;

/// A named launch and the output it writes (poisoned before, verified after every run).
struct TimedCase {
  std::string name;
  Launch launch;
  DeviceArray output;
};

/// One measurement: what runs, on which inputs, and what its output is compared with.
/// The expected result is, in order of precedence: `expected` (one of the `inputs`,
/// regenerated after the candidate ran, read through `map`); the output of `reference`
/// (trusted code run untimed after the candidate in each pair); the baseline's output of the
/// same pair (time_pair only: the baseline is given, trusted code, run after the candidate).
struct Measurement {
  TimedCase baseline;                   ///< time_pair's A side; unused by time_single
  TimedCase candidate;                  ///< time_pair's B side; time_single's case
  const FreshInputs* inputs = nullptr;  ///< regenerated before each side (may be null)
  TimedCase reference;                  ///< optional: trusted code whose output is expected
  DeviceArray expected;                 ///< optional: the expected result itself
  IndexMap map;                         ///< expected value of output i: expected[map(i)]
  std::string expected_name;            ///< e.g. "the input" (messages; a default is made)
  Check check;
};

/// Where a run's output first went wrong.
struct Failure {
  bool warmup = false;
  int pair = 0;     ///< the pair (time_pair) or sample (time_single) number
  int sample = -1;  ///< index of the run's time in `ms.samples`; -1: not kept
  GpuMismatch mismatch;
  std::string where;          ///< "C[17][4000]"
  std::string got, expected;  ///< the words as text
};

/// Whether the runs' outputs were right, and where the first wrong one was.
struct Verification {
  bool checked = false;
  bool passed = false;
  std::string message;
  std::string against;       ///< what the output was compared with
  std::string rule;          ///< Check::describe()
  int samples_total = 0;     ///< timed runs compared (refused ones included)
  int samples_verified = 0;  ///< of those, the ones that matched
  int warmup_total = 0, warmup_verified = 0;
  std::optional<Failure> first_failure;
};

/// The determinism check (see Check::determinism).
struct DeterminismResult {
  bool checked = false;
  bool required = false;
  bool identical = true;
  int runs = 0;  ///< pairs whose candidate output was checked for determinism
  std::string method;
  std::string message;
  std::optional<Failure> first_failure;
};

/// What the activity records said about a side's timed calls (the CUPTI clock only).
struct ActivityStats {
  bool recorded = false;                           ///< false: the events clock timed the runs
  std::uint64_t records_min = 0, records_max = 0;  ///< device work records per timed call
  double records_median = 0;
  int empty_calls = 0;    ///< timed calls that caused no device work (time 0)
  int dropped_calls = 0;  ///< timed calls with records dropped or without timestamps: timed
                          ///< by their host time instead
  int escaped_runs = 0;   ///< timed runs whose span exceeded the event time (EventCheck)
  int runs = 0;           ///< timed runs looked at
};

/// Kernels launched by each timed call (warm-up and refused runs included).
struct LaunchStats {
  bool counted = false;  ///< false: the executable was not linked with the wrap options
  std::vector<std::uint64_t> per_call;
  std::uint64_t min = 0, max = 0;
  double median = 0;
};

/// A run the host-time cross-check refused.
struct Refusal {
  bool warmup = false;
  int pair = 0;
  std::string side;  ///< "baseline", "candidate" or "case"
  double event_ms = 0, host_ms = 0;
};

/// The host-time cross-check's verdict on one measurement, and notes from the clocks.
struct Review {
  bool flagged = false;  ///< the events clock's host-time cross-check only
  std::vector<std::string> reasons;
  std::vector<std::string> notes;  ///< information, never a flag (work escaped the events)
  std::vector<Refusal> refused;
  std::string rule;
};

/// How a side's calls carried out by the runner were timed (RemoteCheck).
struct RemoteStats {
  bool remote = false;           ///< the side's calls ran in the runner
  double empty_ms = 0;           ///< the cheapest empty exchange: what is subtracted
  SampleStats observed_ms;       ///< the checker's observations of the kept runs, less empty_ms
  SampleStats runner_ms;         ///< the runner's activity spans of the same runs
  bool runner_complete = false;  ///< every kept run had a span with no record lost
  double gap_ms = 0;             ///< least (observation - span), less empty_ms
  bool agreed = false;           ///< the spans were believed; false: the observations are the times
  std::string rule;              ///< RemoteCheck::describe()
};

/// One side of a measurement.
struct SideResult {
  std::string name;
  /// Where `ms` came from: "cupti" or "events" (this process's clock), "runner" (the
  /// runner's activity clock, checked against the checker's observation) or "observed" (the
  /// checker's observation of each exchange, where the runner's clock was not believed).
  std::string clock;
  SampleStats ms;             ///< the clock's times of the kept runs (the scored figure)
  SampleStats event_ms;       ///< event times of the same runs
  SampleStats host_ms;        ///< host times of the same runs
  double host_margin_ms = 0;  ///< median of host - event time over every timed run
  Verification verification;
  LaunchStats launches;
  ActivityStats activity;
  RemoteStats remote;
};

/// What every measurement gives, a pair or a case alone: declared once, here.
struct TimingRun {
  bool converged = false;
  double wall_seconds = 0;
  DeterminismResult determinism;
  Review review;
};

/// Result of timing two cases interleaved.
struct PairTiming : TimingRun {
  SideResult baseline;
  SideResult candidate;
  SampleStats speedup;  ///< baseline time / candidate time (`ms`), one value per kept pair
  int warmup_pairs = 0;
  int refused_pairs = 0;
};

/// Result of timing one case alone.
struct CaseTiming : TimingRun {
  SideResult result;
  int refused_samples = 0;
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

/// The physical floor of every time on this device, measured (copy) or computed (FP32)
/// before any code under test runs; a time below what these allow is impossible.
struct DeviceLimits {
  double copy_gbytes_per_s = 0;          ///< best device-to-device copy, bytes read + written per s
  double fp32_gflops = 0;                ///< SMs × FP32 lanes per SM × 2 (FMA) × max SM clock
  std::string copy_method, fp32_method;  ///< how each was obtained, one line each
};

/// Measures the copy bandwidth (cudaMemcpyAsync of at least 4 × the L2 size, device to
/// device, best of 5 after a warm-up, timed by the activity clock or, without it, by
/// events) and computes the FP32 peak (fp32_lanes_per_sm()).
DeviceLimits measure_limits(const DeviceInfo& device);

/// When a measurement stops sampling (nvbench's relative-standard-error criterion): once at
/// least `min_samples` are kept and the relative standard error of the mean of every series
/// (each side's times, and a pair's per-pair ratio) is under `target_rse`; or, unconverged,
/// at `max_samples` kept, after 2 x max_samples + a few runs made (most refused), or after
/// `max_seconds`.
class StoppingRule {
 public:
  explicit StoppingRule(const TimingOptions& options) : options_(options) {}
  /// Starts the clock `max_seconds` counts from (after the warm-up).
  void start();
  /// True when the kept samples of every series are enough and stable.
  bool converged(int kept, const std::vector<const std::vector<double>*>& series) const;
  /// True when a cap says stop, before `runs` (kept or refused) are exceeded.
  bool capped(int kept, int runs) const;
  double seconds() const;

 private:
  const TimingOptions& options_;
  std::chrono::steady_clock::time_point started_{};
};

/// Runs the protocol on the current device.
class Harness {
 public:
  /// Subscribes the activity clock (ActivityClock::instance()) before anything is timed.
  Harness(std::size_t l2_bytes, TimingOptions options);

  /// Interleaves the two in pairs, the candidate first in each (see the file comment),
  /// until converged, capped, wrong or flagged.
  PairTiming time_pair(const Measurement& m);
  /// Samples `m.candidate` alone (needs `m.reference` or `m.expected`).
  CaseTiming time_single(const Measurement& m);

  const TimingOptions& options() const { return options_; }
  std::size_t flush_bytes() const { return flusher_.bytes(); }
  /// The clock the runs are timed with ("cupti" or "events").
  const ActivityClock& clock() const { return clock_; }

 private:
  struct Run;
  struct Outcome;
  class Session;  // one measurement's state and steps (timing.cpp)
  Run run_timed(const TimedCase& c, const Sample& s, const char* nvtx);
  void run_untimed(const TimedCase& c, const Sample& s, const char* nvtx);
  /// The launch with every call to the runner made empty (remote::CallLog): the checker's
  /// observation of the exchanges alone, in ms; -1 when the launch called no runner.
  double run_empty(const TimedCase& c, const Sample& s);
  std::uint64_t pair_key(const std::string& salt, bool warmup, int pair) const;

  TimingOptions options_;
  ActivityClock& clock_;
  L2Flusher flusher_;
  EventTimer timer_;
  GpuComparer comparer_;
};

}  // namespace cml
