/// \file
/// What every lab's bench shares: its command line, its `main` and the one JSON document it
/// writes (schema "cml-bench/2", read by the grader; described in grader/README.md).
///
/// A bench is one function that measures, declared with the options it reads:
///
///     void tiled_matmul(cml::BenchContext& ctx) { ... ctx.harness.time_pair(m) ... }
///     CML_BENCH(tiled_matmul)
///         .param("n", 4096, "N", "the matrices' size, a multiple of 32")
///         .option("stretch", 1, "0|1", "the bonus ladder against cuBLAS");
///
/// The harness's `main` (common/src/bench_main.cpp, linked into every bench) parses the
/// command line against the declaration (the usage is made from it), finds the device,
/// builds the Harness and the BenchReport before any code under test runs, records the
/// declared params, calls the function and writes the document.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
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
///   --quick          one warm-up and one timed run (a profiler's run, a smoke test)
///   --start-fd N     wait at the start gate on descriptor N (wait_at_start_gate)
struct BenchArgs {
  std::string json_path;
  std::uint64_t seed = 0;
  int start_fd = -1;  ///< --start-fd N; -1: start at once
  TimingOptions timing;
  std::map<std::string, std::string> values;

  /// A lab option as an integer: its value, or its declared default; throws
  /// std::out_of_range for an option that has neither.
  long long get_int(const std::string& name) const;
  /// A lab option as an integer (or `fallback` when absent).
  long long get_int(const std::string& name, long long fallback) const;
  double get_double(const std::string& name, double fallback) const;
  std::string get(const std::string& name, const std::string& fallback) const;
  /// Whether the option has a value (given, or declared with a default).
  bool has(const std::string& name) const { return values.count(name) != 0; }
};

/// The start gate (`--start-fd N`, a socket the grader holds): what a bench does before it
/// measures anything is done first (the device found, its context made, the activity clock
/// and the clock readings' library loaded, the harness's buffers made), then the bench
/// writes one byte to `fd` ("ready") and waits for one byte back ("go"). The grader starts a
/// trusted bench so while other work still has the GPU and lets it go once the GPU is the
/// bench's alone, so its start-up is not paid inside that time. False: the grader closed the
/// gate instead (the bench is not wanted).
bool wait_at_start_gate(int fd, const DeviceInfo& device);

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
  bool log2_x = false;          ///< x on a log2 axis (powers of two)
  bool lines = true;            ///< false: dots only (a scatter)
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
  BenchReport(std::string lab, std::string variant, const BenchArgs& args, const DeviceInfo& device,
              std::size_t l2_flush_bytes);

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
  // What the document will hold, in the order given; finish() writes it (cml/json.hpp).
  struct Comparison {
    std::string name;
    PairTiming timing;
    Work work;
  };
  struct Case {
    std::string name;
    CaseTiming timing;
    Work work;
  };
  std::vector<std::pair<std::string, std::variant<double, std::string>>> params_;
  std::vector<Comparison> comparisons_;
  std::vector<Case> cases_;
  std::vector<std::pair<std::string, double>> metrics_;
  std::vector<std::pair<std::string, std::string>> not_timed_;  // comparison, why
  std::deque<Plot> plots_;  // a deque: the references plot() returns stay valid
};

/// One line for standard error: times, speedup, verified runs, launches per call, and any
/// failure or review flag, e.g. "naive 98.2 ms, tiled 7.41 ms, speedup 13.3x; candidate
/// verified 12/12 (+3 warm-up); 1 launch per call".
std::string summary(const PairTiming& timing);
std::string summary(const CaseTiming& timing);

/// What a bench's function is given: the parsed command line, the device, the harness that
/// times and the report the measurements go into (both made before the function runs).
struct BenchContext {
  const BenchArgs& args;
  const DeviceInfo& device;
  Harness& harness;
  BenchReport& report;
};

/// A bench: the function that measures.
using BenchFunction = void (*)(BenchContext&);

/// One `--name VALUE` option of a bench, as its declaration states it.
struct BenchOption {
  enum class Kind { Integer, Choice };

  std::string name;  ///< without "--"
  Kind kind = Kind::Integer;
  std::string placeholder;           ///< the value in the usage: "N", "0|1", "odd|multiple"
  std::string help;                  ///< what it sets, one line
  bool has_default = false;          ///< false: absent unless given (the help says why)
  long long fallback = 0;            ///< the default, when has_default
  std::vector<std::string> choices;  ///< Kind::Choice: the values it takes
  bool recorded = false;             ///< written under "params" (param_name())

  /// The name it is recorded under: `name` with every '-' as '_' ("probe_iterations").
  std::string param_name() const;
};

/// The command line ended the run before anything was measured: `--help` (status 0, the
/// usage for standard output) or a command line the bench refuses (status 2, why, for
/// standard error).
class BenchExit : public std::runtime_error {
 public:
  BenchExit(int status, const std::string& text) : std::runtime_error(text), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

/// A bench and what it reads from its command line; made by CML_BENCH, its options declared
/// by the calls chained on it. Declaring a name twice, or one of the common options, throws
/// std::logic_error.
class BenchDeclaration {
 public:
  BenchDeclaration(std::string name, BenchFunction run, std::string lab, std::string variant);

  /// An integer the measurement depends on (a size), recorded under "params".
  BenchDeclaration& param(const std::string& name, long long fallback,
                          const std::string& placeholder, const std::string& help);
  /// An integer the bench reads but does not record as it is: it picks what runs, or the
  /// bench records what it derives from it.
  BenchDeclaration& option(const std::string& name, long long fallback,
                           const std::string& placeholder, const std::string& help);
  /// An integer without a default: absent unless given (`help` says what the bench does
  /// then, e.g. "default: choose_tile for this GPU").
  BenchDeclaration& option(const std::string& name, const std::string& placeholder,
                           const std::string& help);
  /// One of `choices`, absent unless given; any other value is refused ("--only takes odd
  /// or multiple, not 'x'").
  BenchDeclaration& choice(const std::string& name, const std::vector<std::string>& choices,
                           const std::string& help);
  /// A rule the values must keep together, checked after parsing and before the device is
  /// looked for: a non-empty message refuses the command line with it (status 2).
  BenchDeclaration& check(std::function<std::string(const BenchArgs&)> rule);

  const std::string& name() const { return name_; }
  const std::string& lab() const { return lab_; }
  const std::string& variant() const { return variant_; }
  const std::vector<BenchOption>& options() const { return options_; }

  /// The usage, made from the declaration: a synopsis, one line per option (its help and
  /// default) and the common options.
  std::string usage() const;
  /// The command line (argv[0] is the program) as BenchArgs, each declared default filled
  /// in; throws BenchExit for --help and for a command line it refuses.
  BenchArgs parse(int argc, const char* const* argv) const;
  /// Records every declared param's value under "params", in the order declared.
  void record_params(const BenchArgs& args, BenchReport& report) const;
  void run(BenchContext& context) const { run_(context); }

 private:
  BenchDeclaration& add(BenchOption option);

  std::string name_;
  BenchFunction run_;
  std::string lab_, variant_;
  std::vector<BenchOption> options_;
  std::vector<std::function<std::string(const BenchArgs&)>> rules_;
};

/// Every bench declared in this program (a deque: the references CML_BENCH keeps stay
/// valid). A bench executable declares exactly one.
std::deque<BenchDeclaration>& declared_benches();
/// Adds a bench to declared_benches(); what CML_BENCH expands to.
BenchDeclaration& declare_bench(const std::string& name, BenchFunction run, const std::string& lab,
                                const std::string& variant);

}  // namespace cml

#define CML_BENCH_JOIN_(a, b) a##b
#define CML_BENCH_NAME_(line) CML_BENCH_JOIN_(cml_bench_declared_, line)
/// Declares `fn` (void fn(cml::BenchContext&)) as this executable's bench, of the lab and
/// variant the build names (CML_LAB, CML_VARIANT); chain its options on it:
/// `CML_BENCH(fn).param("n", 4096, "N", "the matrices' size");`.
#define CML_BENCH(fn)                                                          \
  [[maybe_unused]] static ::cml::BenchDeclaration& CML_BENCH_NAME_(__LINE__) = \
      ::cml::declare_bench(#fn, fn, CML_LAB, CML_VARIANT)
