/// \file
/// What every lab's bench shares: its command line and the one JSON document it writes
/// (schema "cml-bench/2", read by the grader; described in grader/README.md).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "cml/device_info.hpp"
#include "cml/timing.hpp"

namespace cml {

/// Options every bench accepts, plus the lab's own `--name value` pairs.
///   --json PATH      write the document there (default: standard output)
///   --seed N         input seed (default: random, recorded in the document); it keys
///                    every input the harness generates (TimingOptions::seed)
///   --nonce N        the run's input nonce (default: random, recorded as "input_nonce");
///                    with the seed it reproduces a run's inputs exactly
///   --max-seconds S  cap per measurement      --min-samples N / --max-samples N
///   --rse X          target relative standard error (default 0.01)
///   --quick          a few samples only, for smoke tests
struct BenchArgs {
  std::string json_path;
  std::uint64_t seed = 0;
  TimingOptions timing;
  std::map<std::string, std::string> values;

  /// A lab option as an integer (or `fallback` when absent).
  long long get_int(const std::string& name, long long fallback) const;
  double get_double(const std::string& name, double fallback) const;
  std::string get(const std::string& name, const std::string& fallback) const;
};

/// Parses argv; `lab_options` are the names (without "--") the lab accepts. Prints `usage`
/// and exits with status 2 on an unknown or malformed option.
BenchArgs parse_bench_args(int argc, char** argv, const std::vector<std::string>& lab_options,
                           const std::string& usage);

/// The device a bench runs on. Without a usable CUDA device it says so and why on standard
/// error and exits with status 77, "skipped" (as the test executables do without a GPU).
DeviceInfo bench_device();

/// Amount of work a timed case does, for rates in the report.
struct Work {
  double flop = 0;   ///< floating-point operations per run (GFLOP/s reported when > 0)
  double bytes = 0;  ///< bytes that must cross device memory per run (GB/s when > 0)
};

/// A plot the grader's HTML report draws from the document, declared by the bench that
/// sweeps (the grader recognises no case names). Each point's y is read from the document:
/// a field of a case (`case_point`) or a metric (`metric_point`), so the plot shows the
/// same numbers the document records. Written under "plots" (grader/README.md).
struct Plot {
  struct Point {
    double x = 0;
    std::string kind;   ///< "case" or "metric"
    std::string name;   ///< the case's or the metric's name
    std::string field;  ///< a case's number: "gbytes_per_s", "gflops", ...
    std::string label;  ///< text shown above the point (may be empty)
  };
  std::string id;       ///< names the plot; the same in every variant's document
  std::string title;    ///< "bandwidth vs stride"
  std::string caption;  ///< a sentence under the plot: what to read in it
  std::string x_label, y_label;
  bool log2_x = false;  ///< x on a log2 axis (powers of two)
  bool lines = true;    ///< false: dots only (a scatter)
  double x_min = 0, x_max = 0;  ///< the x axis' range when x_max > x_min; else the data's
  std::string ceiling_case, ceiling_field, ceiling_label;  ///< a case drawn as a dashed line
  std::vector<Point> points;

  Plot& case_point(double x, const std::string& case_name,
                   const std::string& field = "gbytes_per_s", const std::string& label = "");
  Plot& metric_point(double x, const std::string& metric, const std::string& label = "");
  /// A case's value as a dashed horizontal line (a ceiling such as a plain copy).
  Plot& ceiling(const std::string& case_name, const std::string& label,
                const std::string& field = "gbytes_per_s");
};

/// Collects a bench's measurements and writes them as one JSON document.
class BenchReport {
 public:
  /// Records the device, its clocks and its limits (measure_limits: a copy timed on the
  /// device) at the start: construct it before any code under test runs.
  BenchReport(std::string lab, std::string variant, const BenchArgs& args,
              const DeviceInfo& device, std::size_t l2_flush_bytes);

  void param(const std::string& name, double value);
  void param(const std::string& name, const std::string& value);

  /// An interleaved baseline/candidate measurement (the grader scores these by name), with
  /// its verification, launch counts, determinism and review verdict.
  void add_comparison(const std::string& name, const PairTiming& timing, const Work& work);
  /// A case timed alone (a library yardstick, a sweep point).
  void add_case(const std::string& name, const CaseTiming& timing, const Work& work);
  /// A derived figure (a fraction, a count) under "metrics".
  void metric(const std::string& name, double value);
  /// A comparison the bench meant to time but could not (the code under test threw before
  /// a measurement was made), with the reason, under "not_timed": the grader quotes it.
  void not_timed(const std::string& comparison, const std::string& why);
  /// Declares a plot (see Plot); returns it for its points, which may be added until
  /// finish(). Declaring an id again returns the plot already declared.
  Plot& plot(const std::string& id, const std::string& title, const std::string& x_label,
             const std::string& y_label);

  /// Samples the clocks again and returns the document.
  std::string finish();
  /// finish() and write to --json PATH or standard output; returns a process exit status.
  int write();

 private:
  std::string lab_, variant_;
  BenchArgs args_;
  DeviceInfo device_;
  ClockSample clocks_start_;
  DeviceLimits limits_;
  std::size_t flush_bytes_;
  std::vector<std::pair<std::string, std::string>> params_;  // name, JSON text
  std::vector<std::string> comparisons_, cases_;             // JSON texts
  std::vector<std::pair<std::string, double>> metrics_;
  std::vector<std::pair<std::string, std::string>> not_timed_;  // name, JSON text
  std::deque<Plot> plots_;  // a deque: the references plot() returns stay valid
};

/// One line for standard error: times, speedup, verified runs, launches per call, and any
/// failure or review flag, e.g. "naive 98.2 ms, tiled 7.41 ms, speedup 13.3x; candidate
/// verified 12/12 (+3 warm-up); 1 launch per call".
std::string summary(const PairTiming& timing);
std::string summary(const CaseTiming& timing);

/// Writes `stats` as {"median":..,"min":..,"max":..,"mean":..,"stdev":..,"rse":..,"n":..,"samples":[..]}.
void write_json(JsonWriter& json, const SampleStats& stats);

}  // namespace cml
