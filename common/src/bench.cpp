// Bench declarations (CML_BENCH), their command line, and the JSON report.
#include "cml/bench.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>
#include <variant>

#include "cml/check.hpp"
#include "cml/json.hpp"
#include "cml/launch_count.hpp"

namespace cml {

long long BenchArgs::get_int(const std::string& name) const {
  const auto it = values.find(name);
  if (it == values.end()) throw std::out_of_range("the bench has no value for --" + name);
  return std::stoll(it->second);
}
long long BenchArgs::get_int(const std::string& name, long long fallback) const {
  const auto it = values.find(name);
  return it == values.end() ? fallback : std::stoll(it->second);
}
double BenchArgs::get_double(const std::string& name, double fallback) const {
  const auto it = values.find(name);
  return it == values.end() ? fallback : std::stod(it->second);
}
std::string BenchArgs::get(const std::string& name, const std::string& fallback) const {
  const auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

namespace {

// The options every bench takes (BenchArgs), which no declaration may take for its own.
// Constants, not std::strings: CML_BENCH declares while the program's statics are made, in
// no order this file's would be sure to come before.
constexpr const char* kCommonOptions[] = {"json",        "seed",        "nonce", "max-seconds",
                                          "min-samples", "max-samples", "rse",   "quick",
                                          "help",        "start-fd"};
const char* const kCommonUsage =
    "common options: --json PATH --seed N --nonce N --max-seconds S --min-samples N "
    "--max-samples N --rse X --quick --start-fd N";

// The whole of `text` as an integer ("12abc" and "" are refused: std::invalid_argument).
long long parse_integer(const std::string& text) {
  std::size_t used = 0;
  const long long value = std::stoll(text, &used);
  if (used != text.size()) throw std::invalid_argument("not an integer: " + text);
  return value;
}

// "odd or multiple"; "conflicted, padded or padded_vs_conflicted".
std::string either(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

}  // namespace

std::string BenchOption::param_name() const {
  std::string out = name;
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

BenchDeclaration::BenchDeclaration(std::string name, BenchFunction run, std::string lab,
                                   std::string variant)
    : name_(std::move(name)), run_(run), lab_(std::move(lab)), variant_(std::move(variant)) {}

BenchDeclaration& BenchDeclaration::add(BenchOption option) {
  const std::string& name = option.name;
  if (name.empty() || name[0] == '-') {
    throw std::logic_error("bench " + name_ + ": an option is named without its dashes, not '" +
                           name + "'");
  }
  if (std::find(std::begin(kCommonOptions), std::end(kCommonOptions), name) !=
      std::end(kCommonOptions)) {
    throw std::logic_error("bench " + name_ + ": --" + name + " is a common option");
  }
  for (const auto& known : options_) {
    if (known.name == name) {
      throw std::logic_error("bench " + name_ + ": --" + name + " is declared twice");
    }
  }
  options_.push_back(std::move(option));
  return *this;
}

BenchDeclaration& BenchDeclaration::param(const std::string& name, long long fallback,
                                          const std::string& placeholder, const std::string& help) {
  option(name, fallback, placeholder, help);
  options_.back().recorded = true;  // an option the document records under "params"
  return *this;
}

BenchDeclaration& BenchDeclaration::option(const std::string& name, long long fallback,
                                           const std::string& placeholder,
                                           const std::string& help) {
  BenchOption o;
  o.name = name;
  o.placeholder = placeholder;
  o.help = help;
  o.has_default = true;
  o.fallback = fallback;
  return add(std::move(o));
}

BenchDeclaration& BenchDeclaration::option(const std::string& name, const std::string& placeholder,
                                           const std::string& help) {
  BenchOption o;
  o.name = name;
  o.placeholder = placeholder;
  o.help = help;
  return add(std::move(o));
}

BenchDeclaration& BenchDeclaration::choice(const std::string& name,
                                           const std::vector<std::string>& choices,
                                           const std::string& help) {
  if (choices.empty()) {
    throw std::logic_error("bench " + name_ + ": --" + name + " is declared with no choices");
  }
  BenchOption o;
  o.name = name;
  o.kind = BenchOption::Kind::Choice;
  for (const auto& c : choices) o.placeholder += (o.placeholder.empty() ? "" : "|") + c;
  o.help = help;
  o.choices = choices;
  return add(std::move(o));
}

BenchDeclaration& BenchDeclaration::check(std::function<std::string(const BenchArgs&)> rule) {
  rules_.push_back(std::move(rule));
  return *this;
}

std::string BenchDeclaration::usage() const {
  // "lab04 bench" for the lab folder 04_tiled_matmul.
  const bool numbered = lab_.size() > 3 && std::isdigit(static_cast<unsigned char>(lab_[0])) &&
                        std::isdigit(static_cast<unsigned char>(lab_[1])) && lab_[2] == '_';
  std::string out = "usage: " + (numbered ? "lab" + lab_.substr(0, 2) : lab_) + " bench";
  // One line per option, the helps in one column; a form wider than kColumn has its help on
  // the next line, in that column.
  constexpr std::size_t kColumn = 24;
  std::vector<std::string> forms;
  std::size_t width = 0;
  for (const auto& o : options_) {
    forms.push_back("--" + o.name + " " + o.placeholder);
    if (forms.back().size() <= kColumn) width = std::max(width, forms.back().size());
    out += " [" + forms.back() + "]";
  }
  out += " [common options]\n";
  for (std::size_t i = 0; i < options_.size(); ++i) {
    const BenchOption& o = options_[i];
    out += "  " + forms[i];
    out += forms[i].size() <= width ? std::string(width - forms[i].size() + 2, ' ')
                                    : "\n" + std::string(width + 4, ' ');
    out += o.help;
    if (o.has_default) out += " (default " + std::to_string(o.fallback) + ")";
    out += "\n";
  }
  return out + kCommonUsage;
}

BenchArgs BenchDeclaration::parse(int argc, const char* const* argv) const {
  BenchArgs args;
  args.seed = std::random_device{}();
  {
    std::random_device device;
    args.timing.nonce = (std::uint64_t{device()} << 32) ^ device();
  }
  const auto fail = [&](const std::string& why) { throw BenchExit(2, why + "\n" + usage()); };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") throw BenchExit(0, usage());
    if (arg == "--quick") {
      args.timing.warmup = 1;
      args.timing.min_samples = 1;
      args.timing.max_samples = 1;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || i + 1 >= argc) fail("bad argument: " + arg);
    const std::string name = arg.substr(2);
    const std::string value = argv[++i];
    const auto declared = std::find_if(options_.begin(), options_.end(),
                                       [&](const BenchOption& o) { return o.name == name; });
    try {
      if (name == "json") args.json_path = value;
      else if (name == "seed") args.seed = std::stoull(value);
      else if (name == "nonce") args.timing.nonce = std::stoull(value);
      else if (name == "start-fd") args.start_fd = static_cast<int>(parse_integer(value));
      else if (name == "max-seconds") args.timing.max_seconds = std::stod(value);
      else if (name == "min-samples") args.timing.min_samples = std::stoi(value);
      else if (name == "max-samples") args.timing.max_samples = std::stoi(value);
      else if (name == "rse") args.timing.target_rse = std::stod(value);
      else if (declared == options_.end()) fail("unknown option: " + arg);
      else {
        if (declared->kind == BenchOption::Kind::Integer) parse_integer(value);
        args.values[name] = value;
      }
    } catch (const std::logic_error&) {
      fail("bad value for " + arg + ": " + value);
    }
  }
  args.timing.max_samples = std::max(args.timing.max_samples, args.timing.min_samples);
  args.timing.seed = args.seed;
  for (const auto& o : options_) {
    const auto given = args.values.find(o.name);
    if (given == args.values.end()) {
      if (o.has_default) args.values[o.name] = std::to_string(o.fallback);
      continue;
    }
    if (o.kind == BenchOption::Kind::Choice &&
        std::find(o.choices.begin(), o.choices.end(), given->second) == o.choices.end()) {
      throw BenchExit(2, "--" + o.name + " takes " + either(o.choices) + ", not '" + given->second +
                             "'");
    }
  }
  for (const auto& rule : rules_) {
    const std::string why = rule(args);
    if (!why.empty()) throw BenchExit(2, why);
  }
  return args;
}

void BenchDeclaration::record_params(const BenchArgs& args, BenchReport& report) const {
  for (const auto& o : options_) {
    if (o.recorded) report.param(o.param_name(), static_cast<double>(args.get_int(o.name)));
  }
}

std::deque<BenchDeclaration>& declared_benches() {
  static std::deque<BenchDeclaration> benches;
  return benches;
}

BenchDeclaration& declare_bench(const std::string& name, BenchFunction run, const std::string& lab,
                                const std::string& variant) {
  return declared_benches().emplace_back(name, run, lab, variant);
}

bool wait_at_start_gate(int fd, const DeviceInfo& device) {
  (void)sample_clocks(device);  // the first reading loads NVML
  CUDA_CHECK(cudaDeviceSynchronize());
  const char ready = 'r';
  ssize_t n = 0;
  do {
    n = ::send(fd, &ready, 1, MSG_NOSIGNAL);  // a closed gate is no reason to die of SIGPIPE
  } while (n < 0 && errno == EINTR);
  char go = 0;
  if (n == 1) {
    do {
      n = ::read(fd, &go, 1);
    } while (n < 0 && errno == EINTR);
  }
  ::close(fd);
  return n == 1 && go == 'g';
}

DeviceInfo bench_device() {
  std::string why;
  const auto device = query_device(0, &why);
  if (!device) {
    std::cerr << "no CUDA GPU found (" << why
              << "): this step needs one; see README 'GPU "
                 "feedback without a GPU'\n";
    std::exit(77);  // "skipped", as the test executables say it (CTest's SKIP_RETURN_CODE)
  }
  return *device;
}

namespace {

std::string side_summary(const SideResult& side) {
  std::ostringstream out;
  const Verification& v = side.verification;
  out << side.name << " verified " << v.samples_verified << "/" << v.samples_total;
  if (v.warmup_total > 0) out << " (+" << v.warmup_verified << "/" << v.warmup_total << " warm-up)";
  if (side.launches.counted) {
    out << ", " << side.launches.median << " launch" << (side.launches.median == 1 ? "" : "es")
        << " per call";
    if (side.launches.min != side.launches.max) {
      out << " (" << side.launches.min << ".." << side.launches.max << ")";
    }
  }
  if (v.first_failure) out << "\n  WRONG OUTPUT: " << v.message;
  return out.str();
}

std::string verdicts(const DeterminismResult& d, const Review& r) {
  std::string out;
  if (d.checked && !d.identical && d.first_failure) {
    out += std::string("\n  ") + (d.required ? "NOT DETERMINISTIC: " : "not deterministic: ") +
           d.message;
  }
  for (const auto& why : r.reasons) out += "\n  REVIEW: " + why;
  for (const auto& note : r.notes) out += "\n  note: " + note;
  return out;
}

}  // namespace

std::string summary(const PairTiming& t) {
  std::ostringstream out;
  out << t.baseline.name << " " << t.baseline.ms.median << " ms, " << t.candidate.name << " "
      << t.candidate.ms.median << " ms (" << t.candidate.clock << "), speedup " << t.speedup.median
      << "x over " << t.speedup.samples.size() << " pairs";
  if (t.refused_pairs > 0) out << " (" << t.refused_pairs << " refused)";
  out << "; " << side_summary(t.baseline) << "; " << side_summary(t.candidate)
      << verdicts(t.determinism, t.review);
  return out.str();
}

std::string summary(const CaseTiming& t) {
  std::ostringstream out;
  out << t.result.ms.median << " ms (" << t.result.clock << ") over " << t.result.ms.samples.size()
      << " samples";
  if (t.refused_samples > 0) out << " (" << t.refused_samples << " refused)";
  out << "; " << side_summary(t.result) << verdicts(t.determinism, t.review);
  return out.str();
}

BenchReport::BenchReport(std::string lab, std::string variant, const BenchArgs& args,
                         const DeviceInfo& device, std::size_t l2_flush_bytes)
    : lab_(std::move(lab)),
      variant_(std::move(variant)),
      args_(args),
      device_(device),
      clocks_start_(sample_clocks(device)),
      limits_(measure_limits(device)),
      flush_bytes_(l2_flush_bytes) {}

void BenchReport::param(const std::string& name, double value) {
  params_.emplace_back(name, value);
}
void BenchReport::param(const std::string& name, const std::string& value) {
  params_.emplace_back(name, value);
}

void BenchReport::not_timed(const std::string& comparison, const std::string& why) {
  not_timed_.emplace_back(comparison, why);
}

void BenchReport::add_comparison(const std::string& name, const PairTiming& t, const Work& work) {
  comparisons_.push_back({name, t, work});
}

void BenchReport::add_case(const std::string& name, const CaseTiming& t, const Work& work) {
  cases_.push_back({name, t, work});
}

void BenchReport::metric(const std::string& name, double value) {
  metrics_.emplace_back(name, value);
}

Plot& Plot::case_point(double x, const std::string& case_name, const std::string& field,
                       const std::string& label) {
  points.push_back({x, "case", case_name, field, label});
  return *this;
}

Plot& Plot::metric_point(double x, const std::string& metric, const std::string& label) {
  points.push_back({x, "metric", metric, "", label});
  return *this;
}

Plot& Plot::ceiling(const std::string& case_name, const std::string& label,
                    const std::string& field) {
  ceiling_case = case_name;
  ceiling_label = label;
  ceiling_field = field;
  return *this;
}

Plot& BenchReport::plot(const std::string& id, const std::string& title, const std::string& x_label,
                        const std::string& y_label) {
  for (auto& p : plots_) {
    if (p.id == id) return p;
  }
  Plot p;
  p.id = id;
  p.title = title;
  p.x_label = x_label;
  p.y_label = y_label;
  plots_.push_back(std::move(p));
  return plots_.back();
}

std::string BenchReport::finish() {
  const ClockSample clocks_end = sample_clocks(device_);
  const ActivityClock& clock = ActivityClock::instance();
  Json doc = {{"schema", "cml-bench/2"},
              {"lab", lab_},
              {"variant", variant_},
              {"seed", args_.seed},
              {"input_nonce", args_.timing.nonce},
              {"launch_counting", launch_counting_active()},
              {"device", device_}};
  doc["limits"] = {{"copy_gbytes_per_s", limits_.copy_gbytes_per_s},
                   {"fp32_gflops", limits_.fp32_gflops},
                   {"copy_method", limits_.copy_method},
                   {"fp32_method", limits_.fp32_method}};
  doc["clocks"] = {{"start", clocks_start_}, {"end", clocks_end}};
  doc["protocol"] = {{"warmup", args_.timing.warmup},
                     {"min_samples", args_.timing.min_samples},
                     {"max_samples", args_.timing.max_samples},
                     {"max_seconds", args_.timing.max_seconds},
                     {"target_rse", args_.timing.target_rse},
                     {"l2_flush_bytes", flush_bytes_},
                     {"window",
                      clock.available()
                          ? "CUPTI activity records: earliest start to latest end of every "
                            "kernel, copy and set the call caused, on any stream; CUDA events "
                            "on the legacy default stream and host steady_clock recorded "
                            "beside it"
                          : "CUDA events on the legacy default stream; host steady_clock "
                            "around [events; launch; cudaDeviceSynchronize()] cross-checks "
                            "them"},
                     {"order",
                      "per pair: inputs from the pair's key, trusted outputs poisoned, the "
                      "candidate (timed), its determinism re-run on regenerated inputs, then "
                      "inputs regenerated, the baseline (timed) and the reference, then "
                      "verification"},
                     {"inputs",
                      "regenerated on the GPU before every pair from a hash of (seed, "
                      "input_nonce, measurement, pair); never reused"},
                     {"poison", "every output set to 0xFF bytes before every run"},
                     {"verification",
                      "the whole output of every run (warm-up included) compared on "
                      "the GPU with a result the harness computes for the same inputs"},
                     {"launch_counting",
                      "kernels launched by each call, counted through "
                      "-Wl,--wrap of the runtime's launch entry points"}};
  doc["protocol"]["clock"] = {{"name", clock.name()}, {"status", clock.status()}};
  const EventCheck& ec = args_.timing.event_check;
  doc["protocol"]["event_check"] = {{"rule", ec.describe()},
                                    {"factor", ec.factor},
                                    {"slack_ms", ec.slack_ms}};
  const HostCheck& hc = args_.timing.host_check;
  doc["protocol"]["host_check"] = {{"active", !clock.available()},
                                   {"rule", hc.describe()},
                                   {"factor", hc.factor},
                                   {"slack_ms", hc.slack_ms},
                                   {"flag_min_refused", hc.flag_min_refused},
                                   {"margin_factor", hc.margin_factor},
                                   {"margin_slack_ms", hc.margin_slack_ms}};
  doc["protocol"]["nvtx"] = {{"candidate", kNvtxCandidate},
                             {"baseline", kNvtxBaseline},
                             {"determinism", kNvtxDeterminism},
                             {"reference", kNvtxReference},
                             {"case", kNvtxCase}};
  // What the bench added, in the order it added it.
  Json params = Json::object();
  for (const auto& param : params_) {
    std::visit([&](const auto& value) { params[param.first] = value; }, param.second);
  }
  doc["params"] = std::move(params);
  Json comparisons = Json::array();
  for (const auto& c : comparisons_)
    comparisons.push_back(comparison_json(c.name, c.timing, c.work));
  doc["comparisons"] = std::move(comparisons);
  Json cases = Json::array();
  for (const auto& c : cases_) cases.push_back(case_json(c.name, c.timing, c.work));
  doc["cases"] = std::move(cases);
  Json metrics = Json::object();
  for (const auto& [name, value] : metrics_) metrics[name] = value;
  doc["metrics"] = std::move(metrics);
  Json not_timed = Json::object();
  for (const auto& [comparison, why] : not_timed_) not_timed[comparison] = why;
  doc["not_timed"] = std::move(not_timed);
  Json plots = Json::array();
  for (const auto& p : plots_) plots.push_back(p);
  doc["plots"] = std::move(plots);
  return dump_json(doc);
}

int BenchReport::write() {
  const std::string doc = finish();
  if (args_.json_path.empty()) {
    std::cout << doc << "\n";
    return 0;
  }
  std::ofstream file(args_.json_path);
  file << doc << "\n";
  if (!file) {
    std::cerr << "could not write " << args_.json_path << "\n";
    return 1;
  }
  return 0;
}

}  // namespace cml
