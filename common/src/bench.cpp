// Bench command line and JSON report.
#include "cml/bench.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>

#include "cml/json.hpp"

namespace cml {

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

BenchArgs parse_bench_args(int argc, char** argv, const std::vector<std::string>& lab_options,
                           const std::string& usage) {
  BenchArgs args;
  args.seed = std::random_device{}();
  auto fail = [&](const std::string& why) {
    std::cerr << why << "\n" << usage << "\n"
              << "common options: --json PATH --seed N --max-seconds S --min-samples N "
                 "--max-samples N --rse X --quick\n";
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << usage << "\n";
      std::exit(0);
    }
    if (arg == "--quick") {
      args.timing.warmup = 1;
      args.timing.min_samples = 3;
      args.timing.max_samples = 3;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || i + 1 >= argc) fail("bad argument: " + arg);
    const std::string name = arg.substr(2);
    const std::string value = argv[++i];
    try {
      if (name == "json") args.json_path = value;
      else if (name == "seed") args.seed = std::stoull(value);
      else if (name == "max-seconds") args.timing.max_seconds = std::stod(value);
      else if (name == "min-samples") args.timing.min_samples = std::stoi(value);
      else if (name == "max-samples") args.timing.max_samples = std::stoi(value);
      else if (name == "rse") args.timing.target_rse = std::stod(value);
      else if (std::find(lab_options.begin(), lab_options.end(), name) != lab_options.end())
        args.values[name] = value;
      else fail("unknown option: " + arg);
    } catch (const std::logic_error&) {
      fail("bad value for " + arg + ": " + value);
    }
  }
  args.timing.max_samples = std::max(args.timing.max_samples, args.timing.min_samples);
  return args;
}

DeviceInfo bench_device() {
  std::string why;
  const auto device = query_device(0, &why);
  if (!device) {
    std::cerr << "no CUDA device: " << why << "\n";
    std::exit(3);
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

void write_check(JsonWriter& json, const Verification& v) {
  json.begin_object()
      .field("checked", v.checked)
      .field("passed", v.passed)
      .field("message", v.message)
      .end_object();
}

}  // namespace

BenchReport::BenchReport(std::string lab, std::string variant, const BenchArgs& args,
                         const DeviceInfo& device, std::size_t l2_flush_bytes)
    : lab_(std::move(lab)),
      variant_(std::move(variant)),
      args_(args),
      device_(device),
      clocks_start_(sample_clocks(device)),
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

void BenchReport::add_comparison(const std::string& name, const PairTiming& t, const Work& work,
                                 const Verification& baseline_check,
                                 const Verification& candidate_check) {
  JsonWriter j;
  j.begin_object().field("name", name).field("converged", t.converged)
      .field("wall_seconds", t.wall_seconds);
  const auto side = [&](const char* role, const std::string& name, const SampleStats& ms,
                        const Verification& check) {
    j.key(role).begin_object().field("name", name);
    j.key("ms");
    write_json(j, ms);
    write_work(j, work, ms.median);
    j.key("verification");
    write_check(j, check);
    j.end_object();
  };
  side("baseline", t.baseline, t.baseline_ms, baseline_check);
  side("candidate", t.candidate, t.candidate_ms, candidate_check);
  j.key("speedup");
  write_json(j, t.speedup);
  j.end_object();
  comparisons_.push_back(j.str());
}

void BenchReport::add_case(const std::string& name, const SampleStats& ms, bool converged,
                           const Work& work, const Verification& check) {
  JsonWriter j;
  j.begin_object().field("name", name).field("converged", converged);
  j.key("ms");
  write_json(j, ms);
  write_work(j, work, ms.median);
  j.key("verification");
  write_check(j, check);
  j.end_object();
  cases_.push_back(j.str());
}

void BenchReport::metric(const std::string& name, double value) {
  metrics_.emplace_back(name, value);
}

std::string BenchReport::finish() {
  const ClockSample clocks_end = sample_clocks(device_);
  JsonWriter j;
  j.begin_object()
      .field("schema", "cml-bench/1")
      .field("lab", lab_)
      .field("variant", variant_)
      .field("seed", static_cast<std::uint64_t>(args_.seed));
  j.key("device");
  write_json(j, device_);
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
      .field("window", "cuda events on the legacy default stream")
      .end_object();
  // Pre-rendered pieces are spliced in as raw JSON text.
  std::string out = j.str();
  auto splice_object = [&](const char* key, const std::vector<std::pair<std::string, std::string>>& kv) {
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
