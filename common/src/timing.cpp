// The timing protocol (see timing.hpp).
#include "cml/timing.hpp"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "cml/check.hpp"
#include "cml/launch_count.hpp"
#include "cml/random.hpp"
#include "cml/remote.hpp"

namespace cml {

NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }
NvtxRange::~NvtxRange() { nvtxRangePop(); }

std::string HostCheck::describe() const {
  std::ostringstream out;
  out << "a run is refused when host_ms > " << factor << " x event_ms + " << slack_ms
      << " ms; review when " << flag_min_refused
      << "+ pairs are refused and at least as many as kept, or when the candidate's median "
         "host - event margin > "
      << margin_factor << " x the baseline's + " << margin_slack_ms << " ms";
  return out.str();
}

std::string EventCheck::describe() const {
  std::ostringstream out;
  out << "a run's work escaped the events when its activity span > " << factor << " x event_ms + "
      << slack_ms << " ms (a note, never a refusal)";
  return out.str();
}

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
    : options_(options), clock_(ActivityClock::instance()), flusher_(l2_bytes) {}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// What a run's output is compared with.
struct Trusted {
  DeviceArray array;
  IndexMap map;
  std::string name;
  bool is_baseline = false;
};

LaunchStats launch_stats(const std::vector<std::uint64_t>& calls) {
  LaunchStats s;
  s.counted = launch_counting_active();
  s.per_call = calls;
  if (calls.empty()) return s;
  std::vector<std::uint64_t> sorted = calls;
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  const std::size_t n = sorted.size();
  s.median = n % 2 ? static_cast<double>(sorted[n / 2])
                   : 0.5 * static_cast<double>(sorted[n / 2 - 1] + sorted[n / 2]);
  return s;
}

std::string run_label(bool warmup, int pair, bool is_pair) {
  return std::string(warmup ? "warm-up " : "timed ") + (is_pair ? "pair " : "sample ") +
         std::to_string(pair);
}

}  // namespace

std::string RemoteCheck::describe() const {
  std::ostringstream out;
  out << "the runner's activity span is believed when the least (observation - span) over "
         "the calls, less the cheapest empty exchange, is at most "
      << slack_ms << " ms + " << factor << " x the spans' median; else the observations, less "
      << "the cheapest empty exchange (and never less than the span), are the times";
  return out.str();
}

void StoppingRule::start() { started_ = Clock::now(); }

double StoppingRule::seconds() const { return seconds_since(started_); }

bool StoppingRule::converged(int kept,
                             const std::vector<const std::vector<double>*>& series) const {
  if (kept < options_.min_samples) return false;
  for (const std::vector<double>* s : series) {
    if (summarize(*s).rse >= options_.target_rse) return false;
  }
  return true;
}

bool StoppingRule::capped(int kept, int runs) const {
  const int max_runs = 2 * options_.max_samples + options_.host_check.flag_min_refused;
  return kept >= options_.max_samples || runs >= max_runs || seconds() > options_.max_seconds;
}

struct Harness::Run {
  double ms = 0;  // the clock's time: the activity span, or the event time
  double event_ms = 0;
  double host_ms = 0;
  std::uint64_t launches = 0;
  ActivitySpan span;
  // Calls the runner carried out (a bench run as checker and runner, cml/remote.hpp).
  bool remote = false;
  double observed_ms = 0;  // the checker's observation of the exchanges
  double runner_ms = 0;    // the runner's activity spans of the calls
  bool runner_complete = false;
};

Harness::Run Harness::run_timed(const TimedCase& c, const Sample& s, const char* nvtx) {
  poison(c.output);
  flusher_.flush();
  // Synchronizes, then discards every record so far (the poison and the flush included).
  clock_.begin();
  Run run;
  remote::CallLog calls;
  const std::uint64_t before = launch_count();
  const auto t0 = Clock::now();
  timer_.start(0);
  {
    NvtxRange range(nvtx);
    c.launch(s);
  }
  timer_.stop(0);
  // Device-wide: whatever the call enqueued, on any stream, is finished when this returns,
  // so host time covers work the events did not wait for.
  CUDA_CHECK(cudaDeviceSynchronize());
  run.host_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  run.launches = launch_count() - before;
  run.span = clock_.end();  // every record of the call's work, on any stream
  run.event_ms = timer_.elapsed_millis();
  CUDA_CHECK(cudaGetLastError());
  if (!calls.calls().empty()) {
    // The runner's span for now; Session::decide_runner_clock() checks it against the
    // checker's observations once the measurement is over.
    run.remote = true;
    run.runner_complete = true;
    for (const remote::CallTiming& call : calls.calls()) {
      run.observed_ms += call.observed_ms;
      run.runner_ms += call.runner_ms;
      run.runner_complete = run.runner_complete && call.runner_complete();
    }
    run.ms = run.runner_complete ? run.runner_ms : run.observed_ms;
  } else if (!clock_.available()) {
    run.ms = run.event_ms;
  } else if (run.span.dropped > 0 || run.span.untimed > 0) {
    // Records lost or without timestamps: the span may miss work. The host time covers it.
    run.ms = std::max(run.span.ms, run.host_ms);
  } else {
    run.ms = run.span.ms;
  }
  return run;
}

void Harness::run_untimed(const TimedCase& c, const Sample& s, const char* nvtx) {
  poison(c.output);
  {
    NvtxRange range(nvtx);
    c.launch(s);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaGetLastError());
}

double Harness::run_empty(const TimedCase& c, const Sample& s) {
  remote::CallLog calls(/*empty=*/true);
  try {
    // A proxy answers an empty call with a value-initialised result, which a launch may not
    // be able to use: then this pair has no calibration, nothing worse.
    c.launch(s);
    CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const std::exception&) {
    cudaGetLastError();
    return -1;
  }
  if (calls.calls().empty()) return -1;
  double total = 0;
  for (const remote::CallTiming& call : calls.calls()) total += call.observed_ms;
  return total;
}

std::uint64_t Harness::pair_key(const std::string& salt, bool warmup, int pair) const {
  const std::uint64_t stream =
      (warmup ? (std::uint64_t{1} << 32) : 0) + static_cast<std::uint64_t>(pair);
  const std::uint64_t run = derive_seed(options_.seed, options_.nonce);
  return derive_seed(derive_seed(run, fnv1a(salt)), stream);
}

// Everything a measurement of one or two sides produced.
struct Harness::Outcome : TimingRun {
  std::vector<SideResult> sides;  // pair: baseline, candidate; single: the case
  SampleStats speedup;
  int warmups = 0;
  int refused = 0;
};

namespace {

// What one side's timed runs gave, as they are kept.
struct SideSamples {
  std::vector<double> times, event, host;  // kept runs
  std::vector<double> margin;              // every timed run, refused ones too
  std::vector<std::uint64_t> launches, records;
  ActivityStats activity;
  // Kept runs the runner carried out: the checker's observation, the runner's span and
  // whether that span lost nothing.
  std::vector<double> observed, runner;
  std::vector<bool> runner_complete;
};

}  // namespace

// One measurement (time_pair or time_single), as the steps of the file comment. Side k of the
// result: pair: 0 baseline, 1 candidate; single: 0 the case.
class Harness::Session {
 public:
  Session(Harness& harness, const Measurement& m, bool pair);
  Outcome run();

 private:
  void choose_trusted();
  void start_results();
  bool one(bool warmup, int number);
  bool record(const std::vector<Run>& runs, bool warmup, int number, bool* refused);
  bool verify(std::size_t k, const DeviceArray& got, bool warmup, int number, int sample);
  bool check_determinism(const GpuMismatch& rerun, bool warmup, int number, int sample);
  Failure make_failure(const GpuMismatch& mm, bool warmup, int number, int sample) const;
  std::string failure_message(const Failure& f, const std::string& what, const std::string& against,
                              const std::string& rule) const;
  void summarize_sides();
  void summarize_determinism();
  double runner_gap_ms() const;
  bool runner_settled() const;
  void decide_runner_clock();
  void review_activity();
  void review_host_time();

  Harness& h_;
  const Measurement& m_;
  const bool pair_;
  std::vector<const TimedCase*> cases_;
  std::vector<const char*> nvtx_;
  std::vector<std::string> roles_;
  std::size_t cand_ = 0;  // the candidate's (or the case's) side
  Trusted trusted_;
  bool rerun_ = false;
  // The candidate's timed output, copied aside before its determinism re-run overwrites it.
  DeviceBuffer<std::uint32_t> first_output_;
  DeviceArray first_view_;
  // Everything that holds a result the harness trusts: poisoned before the candidate's call.
  std::vector<DeviceArray> trusted_buffers_;
  std::string salt_;
  bool cupti_ = false;
  bool remote_ = false;           // the candidate's calls run in the runner
  std::vector<double> empty_ms_;  // the empty exchanges of the candidate's launch
  Outcome out_;
  std::vector<SideSamples> samples_;
  std::vector<double> ratio_;
  int kept_ = 0;
};

Harness::Session::Session(Harness& harness, const Measurement& m, bool pair)
    : h_(harness), m_(m), pair_(pair), cupti_(harness.clock_.available()) {
  if (pair) {
    cases_ = {&m.baseline, &m.candidate};
    nvtx_ = {kNvtxBaseline, kNvtxCandidate};
    roles_ = {"baseline", "candidate"};
  } else {
    cases_ = {&m.candidate};
    nvtx_ = {kNvtxCase};
    roles_ = {"case"};
  }
  cand_ = cases_.size() - 1;
  for (std::size_t k = 0; k < cases_.size(); ++k) {
    if (!cases_[k]->launch || !cases_[k]->output) {
      throw std::invalid_argument("Harness: the " + roles_[k] + " '" + cases_[k]->name +
                                  "' needs a launch and an output array");
    }
  }
  if (pair && m.baseline.output.data == m.candidate.output.data) {
    throw std::invalid_argument("Harness::time_pair: baseline and candidate share an output");
  }
  choose_trusted();
  rerun_ = !m.check.exact && m.check.determinism != Determinism::Off;
  first_output_ = DeviceBuffer<std::uint32_t>(rerun_ ? m.candidate.output.count : 0);
  first_view_ = {first_output_.data(), first_output_.size(), m.candidate.output.elem};
  if (pair) trusted_buffers_.push_back(m.baseline.output);
  if (m.reference.launch && m.reference.output) trusted_buffers_.push_back(m.reference.output);
  if (rerun_) trusted_buffers_.push_back(first_view_);
  salt_ = pair ? m.baseline.name + "|" + m.candidate.name : "case|" + m.candidate.name;
  start_results();
}

// What the candidate's output is compared with (Measurement's order of precedence).
void Harness::Session::choose_trusted() {
  const Measurement& m = m_;
  if (m.expected) {
    // The expected array is read after the candidate ran: it must be regenerated before.
    if (m.inputs == nullptr || !m.inputs->holds(m.expected.data, m.expected.count)) {
      throw std::invalid_argument("Harness: the expected array of '" + m.candidate.name +
                                  "' must be one of the inputs regenerated for every pair");
    }
    trusted_ = {m.expected, m.map,
                m.expected_name.empty() ? "the input" + m.map.describe() : m.expected_name, false};
  } else if (m.reference.launch) {
    if (!m.reference.output || m.reference.output.data == m.candidate.output.data ||
        (pair_ && m.reference.output.data == m.baseline.output.data)) {
      throw std::invalid_argument("Harness: the reference needs an output of its own");
    }
    trusted_ = {m.reference.output, IndexMap::identity(),
                m.expected_name.empty() ? "the output of the trusted " + m.reference.name
                                        : m.expected_name,
                false};
  } else if (pair_) {
    trusted_ = {m.baseline.output, IndexMap::identity(),
                m.expected_name.empty() ? "the baseline's output (" + m.baseline.name + ")"
                                        : m.expected_name,
                true};
  } else {
    throw std::invalid_argument("Harness::time_single: '" + m.candidate.name +
                                "' needs a reference launch or an expected array");
  }
}

void Harness::Session::start_results() {
  const Check& check = m_.check;
  out_.sides.resize(cases_.size());
  samples_.resize(cases_.size());
  for (std::size_t k = 0; k < cases_.size(); ++k) {
    Verification& v = out_.sides[k].verification;
    v.checked = true;
    v.rule = check.describe();
    v.against = pair_ && k == 0 && trusted_.is_baseline
                    ? "itself: the trusted result (every element written, no NaN)"
                    : trusted_.name;
    out_.sides[k].name = cases_[k]->name;
    out_.sides[k].clock = h_.clock_.name();
  }
  DeterminismResult& det = out_.determinism;
  det.checked = check.exact || rerun_;
  det.required = check.exact || check.determinism == Determinism::Require;
  det.method = check.exact ? "exact match with the trusted result on every run"
               : rerun_    ? "the candidate run twice on the same inputs, bits compared"
                           : "not checked (tolerance comparison)";
}

Failure Harness::Session::make_failure(const GpuMismatch& mm, bool warmup, int number,
                                       int sample) const {
  Failure f;
  f.warmup = warmup;
  f.pair = number;
  f.sample = sample;
  f.mismatch = mm;
  f.where = m_.check.where(mm.first_index);
  f.got = describe_word(m_.candidate.output.elem, mm.got_bits);
  f.expected = describe_word(m_.candidate.output.elem, mm.expected_bits);
  return f;
}

std::string Harness::Session::failure_message(const Failure& f, const std::string& what,
                                              const std::string& against,
                                              const std::string& rule) const {
  std::ostringstream msg;
  msg << run_label(f.warmup, f.pair, pair_);
  if (f.sample >= 0) msg << " (sample " << f.sample << ")";
  msg << ": " << f.mismatch.mismatches << " of " << f.mismatch.elements << " elements of "
      << m_.check.output_name << " " << what << " " << against;
  if (f.mismatch.unwritten > 0) msg << " (" << f.mismatch.unwritten << " never written)";
  msg << "; the first, " << f.where << " (index " << f.mismatch.first_index << "): got " << f.got
      << ", expected " << f.expected << " [" << rule << "]";
  return msg.str();
}

// Compares side k's timed output (`got`) with the trusted result.
bool Harness::Session::verify(std::size_t k, const DeviceArray& got, bool warmup, int number,
                              int sample) {
  Verification& v = out_.sides[k].verification;
  const bool self = pair_ && k == 0 && trusted_.is_baseline;
  const GpuMismatch mm = self ? h_.comparer_.compare(got, got, IndexMap::identity(), m_.check, true)
                              : h_.comparer_.compare(got, trusted_.array, trusted_.map, m_.check);
  (warmup ? v.warmup_total : v.samples_total) += 1;
  if (mm.ok()) {
    (warmup ? v.warmup_verified : v.samples_verified) += 1;
    return true;
  }
  if (!v.first_failure) {
    v.first_failure = make_failure(mm, warmup, number, sample);
    v.message = failure_message(*v.first_failure, self ? "are NaN or unwritten in" : "differ from",
                                self ? "the trusted result" : trusted_.name,
                                self ? "NaN never passes" : v.rule);
  }
  return false;
}

// The candidate's re-run on the same inputs against its timed output; false when a required
// determinism failed.
bool Harness::Session::check_determinism(const GpuMismatch& rerun, bool warmup, int number,
                                         int sample) {
  DeterminismResult& det = out_.determinism;
  ++det.runs;
  if (rerun.ok() || det.first_failure) return true;
  det.identical = false;
  det.first_failure = make_failure(rerun, warmup, number, sample);
  det.message = failure_message(*det.first_failure, "changed when the candidate ran again on",
                                "the same inputs", "bit for bit");
  return !det.required;
}

// One pair (or sample), in the file comment's order: the candidate first, while nothing
// trusted exists; its determinism re-run; then, on inputs regenerated from the same key, the
// trusted side; then every output verified. False when the measurement must stop.
bool Harness::Session::one(bool warmup, int number) {
  const Sample s{warmup, number, h_.pair_key(salt_, warmup, number)};
  const auto fresh_inputs = [&] {
    if (m_.inputs != nullptr) m_.inputs->fill(s.key);
  };
  std::vector<Run> runs(cases_.size());
  // The runner's exchange without the call, for RemoteCheck: before this pair's inputs exist.
  if (remote_) empty_ms_.push_back(h_.run_empty(m_.candidate, s));
  fresh_inputs();
  for (const DeviceArray& buffer : trusted_buffers_) poison(buffer);
  runs[cand_] = h_.run_timed(m_.candidate, s, nvtx_[cand_]);
  remote_ = remote_ || runs[cand_].remote;
  DeviceArray candidate_output = m_.candidate.output;
  GpuMismatch rerun_mismatch;
  if (rerun_) {
    const DeviceArray& got = m_.candidate.output;
    CUDA_CHECK(cudaMemcpy(first_output_.data(), got.data, got.bytes(), cudaMemcpyDeviceToDevice));
    candidate_output = first_view_;
    fresh_inputs();
    h_.run_untimed(m_.candidate, s, kNvtxDeterminism);
    rerun_mismatch = h_.comparer_.compare(got, first_view_, IndexMap::identity(), m_.check, true);
  }
  fresh_inputs();  // undoes whatever the candidate did to the inputs
  if (pair_) runs[0] = h_.run_timed(m_.baseline, s, nvtx_[0]);
  if (m_.reference.launch) h_.run_untimed(m_.reference, s, kNvtxReference);

  bool refused = false;
  const bool go = record(runs, warmup, number, &refused);
  const int sample = warmup || refused ? -1 : kept_ - 1;
  bool ok = true;
  for (std::size_t k = 0; k < cases_.size(); ++k) {
    ok = verify(k, k == cand_ ? candidate_output : cases_[k]->output, warmup, number, sample) && ok;
  }
  if (ok && rerun_) ok = check_determinism(rerun_mismatch, warmup, number, sample);
  return go && ok;
}

// Keeps the pair's times (or refuses them, the events clock's rule (a)); false when most
// pairs were refused (rule (b): the measurement stops, flagged by review_host_time()).
bool Harness::Session::record(const std::vector<Run>& runs, bool warmup, int number,
                              bool* refused) {
  const HostCheck& hc = h_.options_.host_check;
  const EventCheck& ec = h_.options_.event_check;
  for (std::size_t k = 0; k < cases_.size(); ++k) {
    const Run& r = runs[k];
    SideSamples& side = samples_[k];
    side.launches.push_back(r.launches);
    if (warmup || r.remote) continue;  // the runner's runs: decide_runner_clock()
    side.margin.push_back(r.host_ms - r.event_ms);
    if (cupti_) {
      ActivityStats& a = side.activity;
      side.records.push_back(r.span.records);
      ++a.runs;
      if (r.span.records == 0) ++a.empty_calls;
      if (r.span.dropped > 0 || r.span.untimed > 0) ++a.dropped_calls;
      if (ec.escaped(r.event_ms, r.span.ms)) ++a.escaped_runs;
    } else if (hc.refuses(r.event_ms, r.host_ms)) {
      *refused = true;
      out_.review.refused.push_back({warmup, number, roles_[k], r.event_ms, r.host_ms});
    }
  }
  if (warmup) return true;
  if (*refused) {
    ++out_.refused;
  } else {
    for (std::size_t k = 0; k < cases_.size(); ++k) {
      SideSamples& side = samples_[k];
      side.times.push_back(runs[k].ms);
      side.event.push_back(runs[k].event_ms);
      side.host.push_back(runs[k].host_ms);
      if (runs[k].remote) {
        side.observed.push_back(runs[k].observed_ms);
        side.runner.push_back(runs[k].runner_ms);
        side.runner_complete.push_back(runs[k].runner_complete);
      }
    }
    if (pair_) ratio_.push_back(runs[1].ms > 0 ? runs[0].ms / runs[1].ms : 0.0);
    ++kept_;
  }
  return !(out_.refused >= hc.flag_min_refused && out_.refused >= kept_);
}

Harness::Outcome Harness::Session::run() {
  bool go = true;
  for (int i = 0; i < h_.options_.warmup && go; ++i) {
    go = one(true, i);
    ++out_.warmups;
  }
  StoppingRule rule(h_.options_);
  rule.start();
  std::vector<const std::vector<double>*> series;
  for (const SideSamples& side : samples_) series.push_back(&side.times);
  if (pair_) series.push_back(&ratio_);
  for (int number = 0; go && !rule.capped(kept_, number); ++number) {
    go = one(false, number);
    if (go && rule.converged(kept_, series) && runner_settled()) {
      out_.converged = true;
      break;
    }
  }
  out_.wall_seconds = rule.seconds();
  decide_runner_clock();
  summarize_sides();
  summarize_determinism();
  if (cupti_) {
    review_activity();
  } else {
    review_host_time();
  }
  if (pair_) out_.speedup = summarize(ratio_);
  return std::move(out_);
}

// The least (observation - span) over the kept runs, less the cheapest empty exchange
// (RemoteCheck): what the observations saw beyond the runner's spans.
double Harness::Session::runner_gap_ms() const {
  const SideSamples& side = samples_[cand_];
  double beyond = 0, empty = 0;
  bool first = true;
  for (std::size_t i = 0; i < side.observed.size(); ++i) {
    const double b = side.observed[i] - side.runner[i];
    beyond = first ? b : std::min(beyond, b);
    first = false;
  }
  first = true;
  for (double e : empty_ms_) {
    if (e < 0) continue;
    empty = first ? e : std::min(empty, e);
    first = false;
  }
  return beyond - empty;
}

// Whether sampling may stop as far as the runner's clock goes: it agrees with the checker's
// observations, or enough runs were kept to say it does not. A busy host delays some
// exchanges; more runs give the minima their chance, and a runner that keeps work from its
// clock shows it in every run.
bool Harness::Session::runner_settled() const {
  if (!remote_) return true;
  const SideSamples& side = samples_[cand_];
  if (kept_ >= 8 * h_.options_.min_samples) return true;
  if (std::find(side.runner_complete.begin(), side.runner_complete.end(), false) !=
      side.runner_complete.end()) {
    return true;  // not believed whatever more runs say
  }
  return h_.options_.remote_check.agrees(summarize(side.runner).median, runner_gap_ms());
}

// The candidate's calls ran in the runner: its spans are the times where they agree with the
// checker's observations (RemoteCheck); else the observations are.
void Harness::Session::decide_runner_clock() {
  if (!remote_) return;
  SideSamples& side = samples_[cand_];
  RemoteStats& r = out_.sides[cand_].remote;
  const RemoteCheck& rc = h_.options_.remote_check;
  r.remote = true;
  r.rule = rc.describe();
  std::vector<double> empties;
  for (double e : empty_ms_) {
    if (e >= 0) empties.push_back(e);
  }
  const SampleStats empty = summarize(empties);
  r.empty_ms = empty.min;
  // Minima: a busy host only ever delays an exchange, and the least delayed of each kind is
  // the closest to what the exchange itself costs. A disbelieved span is replaced by the
  // observation less the cheapest empty exchange, never less than the span: a runner gains
  // nothing by making its clock unbelievable.
  std::vector<double> calibrated;
  r.runner_complete = !side.observed.empty();
  for (std::size_t i = 0; i < side.observed.size(); ++i) {
    calibrated.push_back(std::max(side.observed[i] - empty.min, side.runner[i]));
    r.runner_complete = r.runner_complete && side.runner_complete[i];
  }
  r.observed_ms = summarize(calibrated);
  r.runner_ms = summarize(side.runner);
  r.gap_ms = runner_gap_ms();
  r.agreed = r.runner_complete && rc.agrees(r.runner_ms.median, r.gap_ms);
  out_.sides[cand_].clock = r.agreed ? "runner" : "observed";
  if (r.agreed) return;
  const std::vector<double>& observed = calibrated;
  side.times = observed;
  if (pair_) {
    for (std::size_t i = 0; i < ratio_.size() && i < observed.size(); ++i) {
      ratio_[i] = observed[i] > 0 ? samples_[0].times[i] / observed[i] : 0.0;
    }
  }
  std::ostringstream note;
  note << "the " << roles_[cand_] << "'s calls ran in the runner, whose clock was not believed ("
       << (r.runner_complete ? "its spans fell short of the checker's observations"
                             : "it did not time every call completely")
       << ": median " << r.runner_ms.median << " ms against " << r.observed_ms.median
       << " ms observed, less " << r.empty_ms
       << " ms for the cheapest empty exchange): the observations are the times";
  out_.review.notes.push_back(note.str());
}

void Harness::Session::summarize_sides() {
  for (std::size_t k = 0; k < cases_.size(); ++k) {
    SideResult& side = out_.sides[k];
    const SideSamples& got = samples_[k];
    side.ms = summarize(got.times);
    side.event_ms = summarize(got.event);
    side.host_ms = summarize(got.host);
    side.host_margin_ms = summarize(got.margin).median;
    side.launches = launch_stats(got.launches);
    if (cupti_ && !(k == cand_ && remote_)) {
      side.activity = got.activity;
      side.activity.recorded = true;
      const LaunchStats r = launch_stats(got.records);
      side.activity.records_min = r.min;
      side.activity.records_max = r.max;
      side.activity.records_median = r.median;
    }
    Verification& v = side.verification;
    v.passed = !v.first_failure && v.samples_total > 0;
    if (v.passed) {
      v.message = "every element of all " + std::to_string(v.samples_total) + " timed runs (and " +
                  std::to_string(v.warmup_total) + " warm-up runs) matched " + v.against;
    } else if (!v.first_failure) {
      v.message = "no timed run was verified";
    }
  }
}

void Harness::Session::summarize_determinism() {
  DeterminismResult& det = out_.determinism;
  const Verification& cv = out_.sides[cand_].verification;
  if (m_.check.exact) {
    det.identical = cv.passed;
    det.runs = cv.samples_total + cv.warmup_total;
    det.message = cv.passed ? "deterministic: every run matched the trusted result bit for bit"
                            : "not established: " + cv.message;
  } else if (rerun_ && det.identical) {
    det.message = det.runs > 0 ? "identical bits in all " + std::to_string(det.runs) + " re-runs"
                               : "no run was re-checked (the output was wrong first)";
  } else if (!rerun_) {
    det.identical = false;
    det.message = "not checked";
  }
}

// The activity clock's notes: work that escaped the events, records CUPTI dropped.
void Harness::Session::review_activity() {
  const EventCheck& ec = h_.options_.event_check;
  Review& review = out_.review;
  review.rule = "no host-time refusal (the activity clock times every stream); " + ec.describe();
  if (remote_) review.rule += "; " + h_.options_.remote_check.describe();
  for (std::size_t k = 0; k < cases_.size(); ++k) {
    const ActivityStats& a = out_.sides[k].activity;
    if (a.runs > 0 && 2 * a.escaped_runs > a.runs) {
      std::ostringstream note;
      note << "the " << roles_[k] << "'s activity span exceeded its event time in "
           << a.escaped_runs << " of " << a.runs << " timed runs (" << ec.factor << " x event_ms + "
           << ec.slack_ms
           << " ms): work escaped the stream the events wait on; its time counts that work";
      review.notes.push_back(note.str());
    }
    if (a.dropped_calls > 0) {
      std::ostringstream note;
      note << "CUPTI dropped activity records (or gave them no timestamps) in " << a.dropped_calls
           << " of " << a.runs << " timed calls of the " << roles_[k]
           << ": those calls were timed by their host time";
      review.notes.push_back(note.str());
    }
  }
}

// The events clock's host-time cross-check, rules (b) and (c) of the file comment.
void Harness::Session::review_host_time() {
  const HostCheck& hc = h_.options_.host_check;
  Review& review = out_.review;
  review.rule = hc.describe();
  if (remote_) review.rule += "; " + h_.options_.remote_check.describe();
  const int total = kept_ + out_.refused;
  if (out_.refused >= hc.flag_min_refused && out_.refused >= kept_) {
    review.flagged = true;
    int by_candidate = 0;
    for (const auto& r : review.refused) by_candidate += r.side != "baseline" ? 1 : 0;
    const Refusal& r = review.refused.front();
    std::ostringstream why;
    why << out_.refused << " of " << total << " " << (pair_ ? "pairs" : "samples")
        << " refused by the host-time cross-check (host_ms > " << hc.factor << " x event_ms + "
        << hc.slack_ms << " ms); ";
    if (by_candidate > 0) {
      why << "work of the " << (pair_ ? "candidate" : "case")
          << " escaped the timing events (e.g. on a stream they do not wait for)";
    } else {
      why << "only the baseline's runs were refused: the machine is too noisy to time";
    }
    why << "; first: " << run_label(r.warmup, r.pair, pair_) << ", " << r.side << " event "
        << r.event_ms << " ms, host " << r.host_ms << " ms";
    review.reasons.push_back(why.str());
  }
  const SideResult& candidate = out_.sides[cand_];
  if (pair_ && !remote_ && !samples_[0].margin.empty() &&
      hc.margin_suspect(candidate.host_margin_ms, out_.sides[0].host_margin_ms)) {
    review.flagged = true;
    std::ostringstream why;
    why << "the candidate's host time exceeded its event time by a median of "
        << candidate.host_margin_ms << " ms, the baseline's by " << out_.sides[0].host_margin_ms
        << " ms (limit: " << hc.margin_factor << " x the baseline's + " << hc.margin_slack_ms
        << " ms): part of the candidate's work escaped the timing events in every run";
    review.reasons.push_back(why.str());
  }
}

PairTiming Harness::time_pair(const Measurement& m) {
  Outcome o = Session(*this, m, true).run();
  PairTiming t;
  static_cast<TimingRun&>(t) = std::move(static_cast<TimingRun&>(o));
  t.baseline = std::move(o.sides[0]);
  t.candidate = std::move(o.sides[1]);
  t.speedup = std::move(o.speedup);
  t.warmup_pairs = o.warmups;
  t.refused_pairs = o.refused;
  return t;
}

CaseTiming Harness::time_single(const Measurement& m) {
  Outcome o = Session(*this, m, false).run();
  CaseTiming t;
  static_cast<TimingRun&>(t) = std::move(static_cast<TimingRun&>(o));
  t.result = std::move(o.sides[0]);
  t.refused_samples = o.refused;
  return t;
}

DeviceLimits measure_limits(const DeviceInfo& device) {
  DeviceLimits limits;
  const int lanes = fp32_lanes_per_sm(device.cc_major, device.cc_minor);
  limits.fp32_gflops = 2.0 * lanes * device.sm_count * device.max_sm_clock_mhz * 1e-3;
  {
    std::ostringstream how;
    how << device.sm_count << " SMs x " << lanes << " FP32 lanes per SM (compute capability "
        << device.cc_major << "." << device.cc_minor << ") x 2 (fused multiply-add) x "
        << device.max_sm_clock_mhz << " MHz (the maximum SM clock)";
    limits.fp32_method = how.str();
  }

  // Source and destination each at least 4 × the L2, so neither stays in the cache.
  constexpr std::size_t kPage = 4096;
  const std::size_t bytes =
      (std::max<std::size_t>(4 * device.l2_bytes, std::size_t{64} << 20) + kPage - 1) / kPage *
      kPage;
  ActivityClock& clock = ActivityClock::instance();
  try {
    DeviceBuffer<unsigned char> src(bytes), dst(bytes);
    CUDA_CHECK(cudaMemsetAsync(src.data(), 0x3C, bytes, 0));
    EventTimer timer;
    constexpr int kCopies = 5;
    double best_ms = 0;
    for (int i = 0; i <= kCopies; ++i) {  // copy 0 warms up
      clock.begin();
      timer.start(0);
      CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, 0));
      timer.stop(0);
      const ActivitySpan span = clock.end();
      const double ms = clock.available() ? span.ms : timer.elapsed_millis();
      if (i > 0 && ms > 0 && (best_ms == 0 || ms < best_ms)) best_ms = ms;
    }
    if (best_ms > 0) limits.copy_gbytes_per_s = 2.0 * static_cast<double>(bytes) / best_ms * 1e-6;
    std::ostringstream how;
    how << "cudaMemcpyAsync device to device of " << (bytes >> 20) << " MiB ("
        << (device.l2_bytes > 0 ? static_cast<double>(bytes) / device.l2_bytes : 0.0)
        << " x the L2), bytes read + written, best of " << kCopies << " after a warm-up, timed by "
        << (clock.available() ? "CUPTI activity records" : "CUDA events");
    limits.copy_method = how.str();
  } catch (const std::exception& err) {
    limits.copy_gbytes_per_s = 0;
    limits.copy_method = std::string("not measured: ") + err.what();
    cudaGetLastError();  // a failed allocation leaves no sticky error; clear the last one
  }
  return limits;
}

}  // namespace cml
