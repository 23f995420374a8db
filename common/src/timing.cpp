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
  out << "a run's work escaped the events when its activity span > " << factor
      << " x event_ms + " << slack_ms << " ms (a note, never a refusal)";
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

struct Harness::Run {
  double ms = 0;  // the clock's time: the activity span, or the event time
  double event_ms = 0;
  double host_ms = 0;
  std::uint64_t launches = 0;
  ActivitySpan span;
};

Harness::Run Harness::run_timed(const TimedCase& c, const Sample& s, const char* nvtx) {
  poison(c.output);
  flusher_.flush();
  // Synchronizes, then discards every record so far (the poison and the flush included).
  clock_.begin();
  Run run;
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
  if (!clock_.available()) {
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

std::uint64_t Harness::pair_key(const std::string& salt, bool warmup, int pair) const {
  const std::uint64_t stream = (warmup ? (std::uint64_t{1} << 32) : 0) +
                               static_cast<std::uint64_t>(pair);
  const std::uint64_t run = derive_seed(options_.seed, options_.nonce);
  return derive_seed(derive_seed(run, fnv1a(salt)), stream);
}

// Everything a measurement of one or two sides produced.
struct Harness::Outcome {
  std::vector<SideResult> sides;  // pair: baseline, candidate; single: the case
  SampleStats speedup;
  bool converged = false;
  double wall_seconds = 0;
  int warmups = 0;
  int refused = 0;
  DeterminismResult determinism;
  Review review;
};

Harness::Outcome Harness::measure(const Measurement& m, bool pair) {
  // --- what runs, and what it is compared with -------------------------------------------
  // Side k of the result: pair: 0 baseline, 1 candidate; single: 0 the case.
  std::vector<const TimedCase*> cases;
  std::vector<const char*> nvtx;
  std::vector<std::string> roles;
  if (pair) {
    cases = {&m.baseline, &m.candidate};
    nvtx = {kNvtxBaseline, kNvtxCandidate};
    roles = {"baseline", "candidate"};
  } else {
    cases = {&m.candidate};
    nvtx = {kNvtxCase};
    roles = {"case"};
  }
  const std::size_t cand = cases.size() - 1;  // the candidate's (or the case's) side
  for (std::size_t k = 0; k < cases.size(); ++k) {
    if (!cases[k]->launch || !cases[k]->output) {
      throw std::invalid_argument("Harness: the " + roles[k] + " '" + cases[k]->name +
                                  "' needs a launch and an output array");
    }
  }
  if (pair && m.baseline.output.data == m.candidate.output.data) {
    throw std::invalid_argument("Harness::time_pair: baseline and candidate share an output");
  }
  Trusted trusted;
  if (m.expected) {
    // The expected array is read after the candidate ran: it must be regenerated before.
    if (m.inputs == nullptr || !m.inputs->holds(m.expected.data, m.expected.count)) {
      throw std::invalid_argument("Harness: the expected array of '" + m.candidate.name +
                                  "' must be one of the inputs regenerated for every pair");
    }
    trusted = {m.expected, m.map,
               m.expected_name.empty() ? "the input" + m.map.describe() : m.expected_name, false};
  } else if (m.reference.launch) {
    if (!m.reference.output || m.reference.output.data == m.candidate.output.data ||
        (pair && m.reference.output.data == m.baseline.output.data)) {
      throw std::invalid_argument("Harness: the reference needs an output of its own");
    }
    trusted = {m.reference.output, IndexMap::identity(),
               m.expected_name.empty() ? "the output of the trusted " + m.reference.name
                                       : m.expected_name,
               false};
  } else if (pair) {
    trusted = {m.baseline.output, IndexMap::identity(),
               m.expected_name.empty() ? "the baseline's output (" + m.baseline.name + ")"
                                       : m.expected_name,
               true};
  } else {
    throw std::invalid_argument("Harness::time_single: '" + m.candidate.name +
                                "' needs a reference launch or an expected array");
  }
  const Check& check = m.check;
  const bool rerun = !check.exact && check.determinism != Determinism::Off;
  // The candidate's timed output, copied aside before its determinism re-run overwrites it.
  DeviceBuffer<std::uint32_t> first_output(rerun ? m.candidate.output.count : 0);
  const DeviceArray first_view{first_output.data(), first_output.size(), m.candidate.output.elem};
  // Everything that holds a result the harness trusts: poisoned before the candidate's call.
  std::vector<DeviceArray> trusted_buffers;
  if (pair) trusted_buffers.push_back(m.baseline.output);
  if (m.reference.launch && m.reference.output) trusted_buffers.push_back(m.reference.output);
  if (rerun) trusted_buffers.push_back(first_view);
  const std::string salt =
      pair ? m.baseline.name + "|" + m.candidate.name : "case|" + m.candidate.name;
  const bool cupti = clock_.available();
  const HostCheck& hc = options_.host_check;
  const EventCheck& ec = options_.event_check;

  Outcome out;
  out.sides.resize(cases.size());
  std::vector<std::vector<double>> times(cases.size()), event(cases.size()), host(cases.size());
  std::vector<std::vector<double>> margin(cases.size());  // every timed run, refused ones too
  std::vector<std::vector<std::uint64_t>> launches(cases.size()), records(cases.size());
  std::vector<ActivityStats> activity(cases.size());
  std::vector<double> ratio;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    Verification& v = out.sides[k].verification;
    v.checked = true;
    v.rule = check.describe();
    v.against = pair && k == 0 && trusted.is_baseline
                    ? "itself: the trusted result (every element written, no NaN)"
                    : trusted.name;
    out.sides[k].name = cases[k]->name;
    out.sides[k].clock = clock_.name();
  }
  DeterminismResult& det = out.determinism;
  det.checked = check.exact || rerun;
  det.required = check.exact || check.determinism == Determinism::Require;
  det.method = check.exact ? "exact match with the trusted result on every run"
               : rerun     ? "the candidate run twice on the same inputs, bits compared"
                           : "not checked (tolerance comparison)";
  const auto make_failure = [&](const GpuMismatch& mm, bool warmup, int number, int sample) {
    Failure f;
    f.warmup = warmup;
    f.pair = number;
    f.sample = sample;
    f.mismatch = mm;
    f.where = check.where(mm.first_index);
    f.got = describe_word(m.candidate.output.elem, mm.got_bits);
    f.expected = describe_word(m.candidate.output.elem, mm.expected_bits);
    return f;
  };
  const auto failure_message = [&](const Failure& f, const std::string& what,
                                   const std::string& against, const std::string& rule) {
    std::ostringstream msg;
    msg << run_label(f.warmup, f.pair, pair);
    if (f.sample >= 0) msg << " (sample " << f.sample << ")";
    msg << ": " << f.mismatch.mismatches << " of " << f.mismatch.elements << " elements of "
        << check.output_name << " " << what << " " << against;
    if (f.mismatch.unwritten > 0) msg << " (" << f.mismatch.unwritten << " never written)";
    msg << "; the first, " << f.where << " (index " << f.mismatch.first_index << "): got "
        << f.got << ", expected " << f.expected << " [" << rule << "]";
    return msg.str();
  };
  // Compares side k's timed output (`got`) with the trusted result.
  const auto verify = [&](std::size_t k, const DeviceArray& got, bool warmup, int number,
                          int sample) {
    Verification& v = out.sides[k].verification;
    const bool self = pair && k == 0 && trusted.is_baseline;
    const GpuMismatch mm = self ? comparer_.compare(got, got, IndexMap::identity(), check, true)
                                : comparer_.compare(got, trusted.array, trusted.map, check);
    (warmup ? v.warmup_total : v.samples_total) += 1;
    if (mm.ok()) {
      (warmup ? v.warmup_verified : v.samples_verified) += 1;
      return true;
    }
    if (!v.first_failure) {
      v.first_failure = make_failure(mm, warmup, number, sample);
      v.message = failure_message(*v.first_failure, self ? "are NaN or unwritten in" : "differ from",
                                  self ? "the trusted result" : trusted.name,
                                  self ? "NaN never passes" : v.rule);
    }
    return false;
  };

  // One pair (or sample), in the file comment's order: the candidate first, while nothing
  // trusted exists; its determinism re-run; then, on inputs regenerated from the same key,
  // the trusted side; then every output verified. Returns false when the measurement must
  // stop.
  int kept = 0;
  const auto one = [&](bool warmup, int number) {
    const Sample s{warmup, number, pair_key(salt, warmup, number)};
    const auto fresh_inputs = [&] {
      if (m.inputs != nullptr) m.inputs->fill(s.key);
    };
    std::vector<Run> runs(cases.size());
    fresh_inputs();
    for (const DeviceArray& buffer : trusted_buffers) poison(buffer);
    runs[cand] = run_timed(m.candidate, s, nvtx[cand]);
    DeviceArray candidate_output = m.candidate.output;
    GpuMismatch rerun_mismatch;
    if (rerun) {
      const DeviceArray& got = m.candidate.output;
      CUDA_CHECK(cudaMemcpy(first_output.data(), got.data, got.bytes(), cudaMemcpyDeviceToDevice));
      candidate_output = first_view;
      fresh_inputs();
      run_untimed(m.candidate, s, kNvtxDeterminism);
      rerun_mismatch = comparer_.compare(got, first_view, IndexMap::identity(), check, true);
    }
    fresh_inputs();  // undoes whatever the candidate did to the inputs
    if (pair) runs[0] = run_timed(m.baseline, s, nvtx[0]);
    if (m.reference.launch) run_untimed(m.reference, s, kNvtxReference);

    bool refused = false;
    for (std::size_t k = 0; k < cases.size(); ++k) {
      const Run& r = runs[k];
      launches[k].push_back(r.launches);
      if (warmup) continue;
      margin[k].push_back(r.host_ms - r.event_ms);
      if (cupti) {
        ActivityStats& a = activity[k];
        records[k].push_back(r.span.records);
        ++a.runs;
        if (r.span.records == 0) ++a.empty_calls;
        if (r.span.dropped > 0 || r.span.untimed > 0) ++a.dropped_calls;
        if (ec.escaped(r.event_ms, r.span.ms)) ++a.escaped_runs;
      } else if (hc.refuses(r.event_ms, r.host_ms)) {
        refused = true;
        out.review.refused.push_back({warmup, number, roles[k], r.event_ms, r.host_ms});
      }
    }
    const int sample = warmup || refused ? -1 : kept;
    bool ok = true;
    for (std::size_t k = 0; k < cases.size(); ++k) {
      ok = verify(k, k == cand ? candidate_output : cases[k]->output, warmup, number, sample) && ok;
    }
    if (ok && rerun) {
      ++det.runs;
      if (!rerun_mismatch.ok() && !det.first_failure) {
        det.identical = false;
        det.first_failure = make_failure(rerun_mismatch, warmup, number, sample);
        det.message = failure_message(*det.first_failure, "changed when the candidate ran again on",
                                      "the same inputs", "bit for bit");
        if (det.required) ok = false;
      }
    }
    if (warmup) return ok;
    if (refused) {
      ++out.refused;
    } else {
      for (std::size_t k = 0; k < cases.size(); ++k) {
        times[k].push_back(runs[k].ms);
        event[k].push_back(runs[k].event_ms);
        host[k].push_back(runs[k].host_ms);
      }
      if (pair) ratio.push_back(runs[1].ms > 0 ? runs[0].ms / runs[1].ms : 0.0);
      ++kept;
    }
    // Most pairs refused: work escapes the events; stop now (flagged below).
    if (out.refused >= hc.flag_min_refused && out.refused >= kept) return false;
    return ok;
  };

  bool go = true;
  for (int i = 0; i < options_.warmup && go; ++i) {
    go = one(true, i);
    ++out.warmups;
  }
  const auto t0 = Clock::now();
  const int max_runs = 2 * options_.max_samples + hc.flag_min_refused;
  for (int number = 0; go && kept < options_.max_samples && number < max_runs; ++number) {
    go = one(false, number);
    if (!go) break;
    if (kept >= options_.min_samples) {
      bool stable = true;
      for (const auto& t : times) stable = stable && summarize(t).rse < options_.target_rse;
      if (pair) stable = stable && summarize(ratio).rse < options_.target_rse;
      if (stable) {
        out.converged = true;
        break;
      }
    }
    if (seconds_since(t0) > options_.max_seconds) break;
  }
  out.wall_seconds = seconds_since(t0);

  // --- summaries ---------------------------------------------------------------------------
  for (std::size_t k = 0; k < cases.size(); ++k) {
    SideResult& side = out.sides[k];
    side.ms = summarize(times[k]);
    side.event_ms = summarize(event[k]);
    side.host_ms = summarize(host[k]);
    side.host_margin_ms = summarize(margin[k]).median;
    side.launches = launch_stats(launches[k]);
    if (cupti) {
      side.activity = activity[k];
      side.activity.recorded = true;
      const LaunchStats r = launch_stats(records[k]);
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
  const Verification& cv = out.sides[cand].verification;
  if (check.exact) {
    det.identical = cv.passed;
    det.runs = cv.samples_total + cv.warmup_total;
    det.message = cv.passed ? "deterministic: every run matched the trusted result bit for bit"
                            : "not established: " + cv.message;
  } else if (rerun && det.identical) {
    det.message = det.runs > 0 ? "identical bits in all " + std::to_string(det.runs) + " re-runs"
                               : "no run was re-checked (the output was wrong first)";
  } else if (!rerun) {
    det.identical = false;
    det.message = "not checked";
  }
  Review& review = out.review;
  if (cupti) {
    review.rule = "no host-time refusal (the activity clock times every stream); " + ec.describe();
    for (std::size_t k = 0; k < cases.size(); ++k) {
      const ActivityStats& a = out.sides[k].activity;
      if (a.runs > 0 && 2 * a.escaped_runs > a.runs) {
        std::ostringstream note;
        note << "the " << roles[k] << "'s activity span exceeded its event time in "
             << a.escaped_runs << " of " << a.runs << " timed runs (" << ec.factor
             << " x event_ms + " << ec.slack_ms
             << " ms): work escaped the stream the events wait on; its time counts that work";
        review.notes.push_back(note.str());
      }
      if (a.dropped_calls > 0) {
        std::ostringstream note;
        note << "CUPTI dropped activity records (or gave them no timestamps) in "
             << a.dropped_calls << " of " << a.runs << " timed calls of the " << roles[k]
             << ": those calls were timed by their host time";
        review.notes.push_back(note.str());
      }
    }
    if (pair) out.speedup = summarize(ratio);
    return out;
  }
  review.rule = hc.describe();
  const int total = kept + out.refused;
  if (out.refused >= hc.flag_min_refused && out.refused >= kept) {
    review.flagged = true;
    int by_candidate = 0;
    for (const auto& r : review.refused) by_candidate += r.side != "baseline" ? 1 : 0;
    const Refusal& r = review.refused.front();
    std::ostringstream why;
    why << out.refused << " of " << total << " " << (pair ? "pairs" : "samples")
        << " refused by the host-time cross-check (host_ms > " << hc.factor << " x event_ms + "
        << hc.slack_ms << " ms); ";
    if (by_candidate > 0) {
      why << "work of the " << (pair ? "candidate" : "case")
          << " escaped the timing events (e.g. on a stream they do not wait for)";
    } else {
      why << "only the baseline's runs were refused: the machine is too noisy to time";
    }
    why << "; first: " << run_label(r.warmup, r.pair, pair) << ", " << r.side << " event "
        << r.event_ms << " ms, host " << r.host_ms << " ms";
    review.reasons.push_back(why.str());
  }
  if (pair && !margin[0].empty() &&
      hc.margin_suspect(out.sides[1].host_margin_ms, out.sides[0].host_margin_ms)) {
    review.flagged = true;
    std::ostringstream why;
    why << "the candidate's host time exceeded its event time by a median of "
        << out.sides[1].host_margin_ms << " ms, the baseline's by "
        << out.sides[0].host_margin_ms << " ms (limit: " << hc.margin_factor << " x the baseline's + "
        << hc.margin_slack_ms << " ms): part of the candidate's work escaped the timing events "
           "in every run";
    review.reasons.push_back(why.str());
  }
  if (pair) out.speedup = summarize(ratio);
  return out;
}

PairTiming Harness::time_pair(const Measurement& m) {
  Outcome o = measure(m, true);
  PairTiming t;
  t.baseline = std::move(o.sides[0]);
  t.candidate = std::move(o.sides[1]);
  t.speedup = std::move(o.speedup);
  t.converged = o.converged;
  t.wall_seconds = o.wall_seconds;
  t.warmup_pairs = o.warmups;
  t.refused_pairs = o.refused;
  t.determinism = std::move(o.determinism);
  t.review = std::move(o.review);
  return t;
}

CaseTiming Harness::time_single(const Measurement& m) {
  Outcome o = measure(m, false);
  CaseTiming t;
  t.result = std::move(o.sides[0]);
  t.converged = o.converged;
  t.wall_seconds = o.wall_seconds;
  t.refused_samples = o.refused;
  t.determinism = std::move(o.determinism);
  t.review = std::move(o.review);
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
