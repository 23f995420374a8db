// Bench declarations (CML_BENCH), their command line, and the JSON report.
#include "cml/bench.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>

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
constexpr const char* kCommonOptions[] = {"json",        "seed",        "nonce",
                                          "max-seconds", "min-samples", "max-samples",
                                          "rse",         "quick",       "help"};
const char* const kCommonUsage =
    "common options: --json PATH --seed N --nonce N --max-seconds S --min-samples N "
    "--max-samples N --rse X --quick";

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
      args.timing.min_samples = 3;
      args.timing.max_samples = 3;
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

void write_json(JsonWriter& json, const SampleStats& s) {
  json.begin_object()
      .field("median", s.median)
      .field("min", s.min)
      .field("max", s.max)
      .field("mean", s.mean)
      .field("stdev", s.stdev)
      .field("rse", s.rse)
      .field("n", static_cast<int>(s.samples.size()))
      .field("samples", s.samples)
      .end_object();
}

namespace {

void write_work(JsonWriter& json, const Work& work, double median_ms) {
  json.field("flop", work.flop).field("bytes", work.bytes);
  json.key("gflops");
  work.flop > 0 && median_ms > 0 ? json.value(work.flop / median_ms * 1e-6) : json.null();
  json.key("gbytes_per_s");
  work.bytes > 0 && median_ms > 0 ? json.value(work.bytes / median_ms * 1e-6) : json.null();
}

void write_failure(JsonWriter& json, const std::optional<Failure>& f) {
  if (!f) {
    json.null();
    return;
  }
  char got_bits[16], expected_bits[16];
  std::snprintf(got_bits, sizeof got_bits, "0x%08x", f->mismatch.got_bits);
  std::snprintf(expected_bits, sizeof expected_bits, "0x%08x", f->mismatch.expected_bits);
  json.begin_object().field("phase", f->warmup ? "warmup" : "timed").field("pair", f->pair);
  json.key("sample");
  f->sample >= 0 ? json.value(f->sample) : json.null();
  json.field("index", static_cast<std::uint64_t>(f->mismatch.first_index))
      .field("where", f->where)
      .field("got", f->got)
      .field("expected", f->expected)
      .field("got_bits", got_bits)
      .field("expected_bits", expected_bits)
      .field("mismatches", static_cast<std::uint64_t>(f->mismatch.mismatches))
      .field("unwritten", static_cast<std::uint64_t>(f->mismatch.unwritten))
      .field("elements", static_cast<std::uint64_t>(f->mismatch.elements))
      .end_object();
}

void write_check(JsonWriter& json, const Verification& v) {
  json.begin_object()
      .field("checked", v.checked)
      .field("passed", v.passed)
      .field("message", v.message)
      .field("against", v.against)
      .field("rule", v.rule)
      .field("samples_total", v.samples_total)
      .field("samples_verified", v.samples_verified)
      .field("warmup_total", v.warmup_total)
      .field("warmup_verified", v.warmup_verified);
  json.key("first_failure");
  write_failure(json, v.first_failure);
  json.end_object();
}

void write_launches(JsonWriter& json, const LaunchStats& l) {
  json.begin_object().field("counted", l.counted);
  if (l.counted) {
    json.field("min", static_cast<std::uint64_t>(l.min))
        .field("max", static_cast<std::uint64_t>(l.max))
        .field("median", l.median);
  } else {
    json.key("min").null().key("max").null().key("median").null();
  }
  json.field("calls", static_cast<std::uint64_t>(l.per_call.size())).end_object();
}

void write_determinism(JsonWriter& json, const DeterminismResult& d) {
  json.begin_object()
      .field("checked", d.checked)
      .field("required", d.required)
      .field("identical", d.identical)
      .field("runs", d.runs)
      .field("method", d.method)
      .field("message", d.message);
  json.key("first_failure");
  write_failure(json, d.first_failure);
  json.end_object();
}

void write_review(JsonWriter& json, const Review& r) {
  json.begin_object().field("flagged", r.flagged).field("rule", r.rule);
  json.key("reasons").begin_array();
  for (const auto& why : r.reasons) json.value(why);
  json.end_array();
  json.key("notes").begin_array();
  for (const auto& note : r.notes) json.value(note);
  json.end_array();
  json.key("refused").begin_array();
  for (const auto& x : r.refused) {
    json.begin_object()
        .field("phase", x.warmup ? "warmup" : "timed")
        .field("pair", x.pair)
        .field("side", x.side)
        .field("event_ms", x.event_ms)
        .field("host_ms", x.host_ms)
        .end_object();
  }
  json.end_array().end_object();
}

void write_activity(JsonWriter& json, const ActivityStats& a) {
  if (!a.recorded) {
    json.null();
    return;
  }
  json.begin_object()
      .field("records_min", static_cast<std::uint64_t>(a.records_min))
      .field("records_max", static_cast<std::uint64_t>(a.records_max))
      .field("records_median", a.records_median)
      .field("empty_calls", a.empty_calls)
      .field("dropped_calls", a.dropped_calls)
      .field("escaped_runs", a.escaped_runs)
      .field("runs", a.runs)
      .end_object();
}

// How the runner's calls were timed (RemoteStats); null for a side this process ran.
void write_remote(JsonWriter& json, const RemoteStats& r) {
  if (!r.remote) {
    json.null();
    return;
  }
  json.begin_object().field("empty_ms", r.empty_ms);
  json.key("observed_ms");
  write_json(json, r.observed_ms);
  json.key("runner_ms");
  write_json(json, r.runner_ms);
  json.field("runner_complete", r.runner_complete)
      .field("gap_ms", r.gap_ms)
      .field("agreed", r.agreed)
      .field("rule", r.rule)
      .end_object();
}

void write_work_object(JsonWriter& json, const Work& work) {
  json.key("work").begin_object().field("flop", work.flop).field("bytes", work.bytes).end_object();
}

// One timed side: name, times (the clock's, the events', the host's), work rates,
// verification, launch counts and what the activity records said.
void write_side_fields(JsonWriter& json, const std::string& name, const SideResult& side,
                       const Work& work) {
  json.field("name", name).field("clock", side.clock);
  json.key("ms");
  write_json(json, side.ms);
  json.key("event_ms");
  write_json(json, side.event_ms);
  json.key("host_ms");
  write_json(json, side.host_ms);
  json.field("host_margin_ms", side.host_margin_ms);
  write_work(json, work, side.ms.median);
  json.key("verification");
  write_check(json, side.verification);
  json.key("launches");
  write_launches(json, side.launches);
  json.key("activity");
  write_activity(json, side.activity);
  json.key("remote");
  write_remote(json, side.remote);
}

}  // namespace

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
  JsonWriter j;
  j.value(value);
  params_.emplace_back(name, j.str());
}
void BenchReport::param(const std::string& name, const std::string& value) {
  JsonWriter j;
  j.value(value);
  params_.emplace_back(name, j.str());
}

void BenchReport::not_timed(const std::string& comparison, const std::string& why) {
  JsonWriter j;
  j.value(why);
  not_timed_.emplace_back(comparison, j.str());
}

void BenchReport::add_comparison(const std::string& name, const PairTiming& t, const Work& work) {
  JsonWriter j;
  j.begin_object()
      .field("name", name)
      .field("converged", t.converged)
      .field("wall_seconds", t.wall_seconds)
      .field("warmup_pairs", t.warmup_pairs)
      .field("refused_pairs", t.refused_pairs);
  write_work_object(j, work);
  j.key("baseline").begin_object();
  write_side_fields(j, t.baseline.name, t.baseline, work);
  j.end_object();
  j.key("candidate").begin_object();
  write_side_fields(j, t.candidate.name, t.candidate, work);
  j.end_object();
  j.key("speedup");
  write_json(j, t.speedup);
  j.key("determinism");
  write_determinism(j, t.determinism);
  j.key("review");
  write_review(j, t.review);
  j.end_object();
  comparisons_.push_back(j.str());
}

void BenchReport::add_case(const std::string& name, const CaseTiming& t, const Work& work) {
  JsonWriter j;
  j.begin_object();
  write_side_fields(j, name, t.result, work);
  write_work_object(j, work);
  j.field("launch_name", t.result.name)
      .field("converged", t.converged)
      .field("wall_seconds", t.wall_seconds)
      .field("refused_samples", t.refused_samples);
  j.key("determinism");
  write_determinism(j, t.determinism);
  j.key("review");
  write_review(j, t.review);
  j.end_object();
  cases_.push_back(j.str());
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

namespace {

void write_plot(JsonWriter& json, const Plot& p) {
  json.begin_object()
      .field("id", p.id)
      .field("title", p.title)
      .field("caption", p.caption)
      .field("style", p.lines ? "line" : "dots");
  json.key("x").begin_object().field("label", p.x_label);
  json.field("scale", p.log2_x ? "log2" : "linear");
  if (p.x_max > p.x_min) json.field("min", p.x_min).field("max", p.x_max);
  json.end_object();
  json.key("y").begin_object().field("label", p.y_label).end_object();
  if (!p.ceiling_case.empty()) {
    json.key("ceiling")
        .begin_object()
        .field("label", p.ceiling_label)
        .field("case", p.ceiling_case)
        .field("field", p.ceiling_field)
        .end_object();
  }
  json.key("points").begin_array();
  for (const auto& pt : p.points) {
    json.begin_object().field("x", pt.x).field(pt.kind, pt.name);
    if (!pt.field.empty()) json.field("field", pt.field);
    if (!pt.label.empty()) json.field("label", pt.label);
    json.end_object();
  }
  json.end_array().end_object();
}

}  // namespace

std::string BenchReport::finish() {
  const ClockSample clocks_end = sample_clocks(device_);
  const ActivityClock& clock = ActivityClock::instance();
  JsonWriter j;
  j.begin_object()
      .field("schema", "cml-bench/2")
      .field("lab", lab_)
      .field("variant", variant_)
      .field("seed", static_cast<std::uint64_t>(args_.seed))
      .field("input_nonce", static_cast<std::uint64_t>(args_.timing.nonce))
      .field("launch_counting", launch_counting_active());
  j.key("device");
  write_json(j, device_);
  j.key("limits")
      .begin_object()
      .field("copy_gbytes_per_s", limits_.copy_gbytes_per_s)
      .field("fp32_gflops", limits_.fp32_gflops)
      .field("copy_method", limits_.copy_method)
      .field("fp32_method", limits_.fp32_method)
      .end_object();
  j.key("clocks").begin_object();
  j.key("start");
  write_json(j, clocks_start_);
  j.key("end");
  write_json(j, clocks_end);
  j.end_object();
  j.key("protocol")
      .begin_object()
      .field("warmup", args_.timing.warmup)
      .field("min_samples", args_.timing.min_samples)
      .field("max_samples", args_.timing.max_samples)
      .field("max_seconds", args_.timing.max_seconds)
      .field("target_rse", args_.timing.target_rse)
      .field("l2_flush_bytes", static_cast<std::uint64_t>(flush_bytes_))
      .field("window", clock.available()
                           ? "CUPTI activity records: earliest start to latest end of every "
                             "kernel, copy and set the call caused, on any stream; CUDA events "
                             "on the legacy default stream and host steady_clock recorded "
                             "beside it"
                           : "CUDA events on the legacy default stream; host steady_clock "
                             "around [events; launch; cudaDeviceSynchronize()] cross-checks "
                             "them")
      .field("order",
             "per pair: inputs from the pair's key, trusted outputs poisoned, the "
             "candidate (timed), its determinism re-run on regenerated inputs, then "
             "inputs regenerated, the baseline (timed) and the reference, then "
             "verification")
      .field("inputs",
             "regenerated on the GPU before every pair from a hash of (seed, "
             "input_nonce, measurement, pair); never reused")
      .field("poison", "every output set to 0xFF bytes before every run")
      .field("verification",
             "the whole output of every run (warm-up included) compared on "
             "the GPU with a result the harness computes for the same inputs")
      .field("launch_counting",
             "kernels launched by each call, counted through "
             "-Wl,--wrap of the runtime's launch entry points");
  j.key("clock")
      .begin_object()
      .field("name", clock.name())
      .field("status", clock.status())
      .end_object();
  const EventCheck& ec = args_.timing.event_check;
  j.key("event_check")
      .begin_object()
      .field("rule", ec.describe())
      .field("factor", ec.factor)
      .field("slack_ms", ec.slack_ms)
      .end_object();
  const HostCheck& hc = args_.timing.host_check;
  j.key("host_check")
      .begin_object()
      .field("active", !clock.available())
      .field("rule", hc.describe())
      .field("factor", hc.factor)
      .field("slack_ms", hc.slack_ms)
      .field("flag_min_refused", hc.flag_min_refused)
      .field("margin_factor", hc.margin_factor)
      .field("margin_slack_ms", hc.margin_slack_ms)
      .end_object();
  j.key("nvtx")
      .begin_object()
      .field("candidate", kNvtxCandidate)
      .field("baseline", kNvtxBaseline)
      .field("determinism", kNvtxDeterminism)
      .field("reference", kNvtxReference)
      .field("case", kNvtxCase)
      .end_object();
  j.end_object();
  // Pre-rendered pieces are spliced in as raw JSON text.
  std::string out = j.str();
  auto splice_object = [&](const char* key,
                           const std::vector<std::pair<std::string, std::string>>& kv) {
    out += std::string(",\"") + key + "\":{";
    for (std::size_t i = 0; i < kv.size(); ++i) {
      JsonWriter k;
      k.value(kv[i].first);
      out += (i ? "," : "") + k.str() + ":" + kv[i].second;
    }
    out += "}";
  };
  auto splice_array = [&](const char* key, const std::vector<std::string>& items) {
    out += std::string(",\"") + key + "\":[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
    out += "]";
  };
  splice_object("params", params_);
  splice_array("comparisons", comparisons_);
  splice_array("cases", cases_);
  std::vector<std::pair<std::string, std::string>> metrics;
  for (const auto& [name, value] : metrics_) {
    JsonWriter v;
    v.value(value);
    metrics.emplace_back(name, v.str());
  }
  splice_object("metrics", metrics);
  splice_object("not_timed", not_timed_);
  std::vector<std::string> plots;
  for (const auto& p : plots_) {
    JsonWriter pj;
    write_plot(pj, p);
    plots.push_back(pj.str());
  }
  splice_array("plots", plots);
  out += "}";
  return out;
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
