// The bench document's JSON (cml/json.hpp): what the records are written as reads back, with
// the values, types and order the grader reads (grader/benchdoc.py). The records are made
// here and nothing is timed; only the whole document (a BenchReport, which measures the
// device's limits as it is made) needs the GPU.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cml/bench.hpp"
#include "cml/catch.hpp"
#include "cml/device_info.hpp"
#include "cml/json.hpp"

namespace {

// The text as a strict parser reads it: one that refuses bytes that are not UTF-8.
cml::Json parse(const std::string& text) { return cml::Json::parse(text); }

std::vector<std::string> keys(const cml::Json& object) {
  std::vector<std::string> out;
  for (const auto& member : object.items()) out.push_back(member.key());
  return out;
}

cml::SampleStats stats(std::vector<double> samples) {
  cml::SampleStats s;
  s.samples = std::move(samples);
  s.median = 2.0;
  s.min = 0.1;
  s.max = 1.0 / 3.0;
  s.mean = 1.25;
  s.stdev = 0.5;
  s.rse = 0.01;
  return s;
}

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

}  // namespace

TEST_CASE("A comparison's JSON reads back with its values, null for what is not a number",
          "[harness][host][json]") {
  cml::PairTiming t;
  t.baseline.name = "naive";
  t.baseline.clock = "events";
  t.baseline.ms = stats({1.5, 2.0, 0.1});
  t.candidate.name = "tiled";
  t.candidate.clock = "events";
  t.candidate.ms = stats({0.75});
  t.candidate.ms.median = std::numeric_limits<double>::quiet_NaN();
  t.candidate.ms.stdev = std::numeric_limits<double>::infinity();
  t.candidate.ms.rse = -std::numeric_limits<double>::infinity();
  t.candidate.launches.counted = true;
  t.candidate.launches.per_call = {1, 1, 2};
  t.candidate.launches.min = 1;
  t.candidate.launches.max = 2;
  t.candidate.launches.median = 1;
  // A message quoting the code under test: quotes, a backslash, line breaks, a control
  // character, bytes that are not UTF-8 and a sequence cut short at the end.
  const std::string quoted = "got \"x\\y\"\nat\trow 7\x01: \xff\xfe caf\xc3";
  t.candidate.verification.checked = true;
  t.candidate.verification.message = quoted;
  cml::Failure f;
  f.pair = 3;
  f.where = "C[17][4000]";
  f.got = "nan";
  f.mismatch.got_bits = 0x7fc00000u;
  f.mismatch.first_index = 17 * 4096 + 4000;
  f.mismatch.elements = std::uint64_t{1} << 40;
  t.candidate.verification.first_failure = f;
  t.speedup = stats({2.0, 1.0 / 3.0});
  t.converged = true;
  t.wall_seconds = 1.5;
  t.review.reasons = {"slow \"host\""};
  t.review.refused.push_back({true, 2, "candidate", 0.25, 0.5});
  cml::Work work;
  work.flop = 2.0 * 4096.0 * 4096.0 * 4096.0;  // a whole number above 1e9: a double
  work.bytes = 3.0 * 4096 * 4096 * 4;

  const std::string text = cml::dump_json(cml::comparison_json("tiled", t, work));
  INFO(text);
  CHECK(text.find('\n') == std::string::npos);
  CHECK(std::none_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20; }));
  const cml::Json doc = parse(text);  // throws on a byte that is not UTF-8

  CHECK(keys(doc) == std::vector<std::string>{"name", "converged", "wall_seconds", "warmup_pairs",
                                              "refused_pairs", "work", "baseline", "candidate",
                                              "speedup", "determinism", "review"});
  CHECK(doc["name"] == "tiled");
  CHECK(doc["converged"] == true);
  CHECK(doc["wall_seconds"].get<double>() == 1.5);
  CHECK(doc["work"]["flop"].is_number_float());
  CHECK(doc["work"]["flop"].get<double>() == 137438953472.0);

  const cml::Json& baseline = doc["baseline"];
  CHECK(keys(baseline) == std::vector<std::string>{"name", "clock", "ms", "event_ms", "host_ms",
                                                   "host_margin_ms", "flop", "bytes", "gflops",
                                                   "gbytes_per_s", "verification", "launches",
                                                   "activity", "remote"});
  const cml::Json& ms = baseline["ms"];
  CHECK(ms["n"] == 3);
  REQUIRE(ms["samples"].size() == 3);
  CHECK(ms["samples"][0].get<double>() == 1.5);
  CHECK(ms["samples"][1].is_number_integer());   // 2.0: a whole number, written "2"
  CHECK(ms["samples"][2].get<double>() == 0.1);  // every digit back
  CHECK(ms["max"].get<double>() == 1.0 / 3.0);
  CHECK(baseline["gflops"].get<double>() == work.flop / 2.0 * 1e-6);
  CHECK(baseline["activity"].is_null());
  CHECK(baseline["remote"].is_null());
  CHECK(baseline["launches"]["counted"] == false);
  CHECK(baseline["launches"]["min"].is_null());
  CHECK(baseline["verification"]["first_failure"].is_null());

  const cml::Json& candidate = doc["candidate"];
  CHECK(candidate["ms"]["median"].is_null());  // JSON has no NaN nor infinity
  CHECK(candidate["ms"]["stdev"].is_null());
  CHECK(candidate["ms"]["rse"].is_null());
  CHECK(candidate["gflops"].is_null());  // no time, no rate
  CHECK(candidate["launches"]["min"] == 1);
  CHECK(candidate["launches"]["calls"] == 3);
  const cml::Json& v = candidate["verification"];
  CHECK(v["message"] ==
        "got \"x\\y\"\nat\trow 7\x01: " + kReplacement + kReplacement + " caf" + kReplacement);
  const cml::Json& failure = v["first_failure"];
  CHECK(failure["phase"] == "timed");
  CHECK(failure["pair"] == 3);
  CHECK(failure["sample"].is_null());
  CHECK(failure["index"] == 17 * 4096 + 4000);
  CHECK(failure["elements"] == std::uint64_t{1} << 40);
  CHECK(failure["got_bits"] == "0x7fc00000");
  CHECK(failure["expected_bits"] == "0x00000000");

  CHECK(doc["speedup"]["samples"][1].get<double>() == 1.0 / 3.0);
  CHECK(doc["review"]["reasons"] == cml::Json::array({"slow \"host\""}));
  CHECK(doc["review"]["notes"] == cml::Json::array());
  CHECK(doc["review"]["refused"][0]["phase"] == "warmup");
  CHECK(doc["review"]["refused"][0]["host_ms"].get<double>() == 0.5);
  CHECK(doc["determinism"]["first_failure"].is_null());
}

TEST_CASE("A case's and a plot's JSON read back, whole numbers below 1e9 as integers",
          "[harness][host][json]") {
  cml::CaseTiming t;
  t.result.name = "copy_kernel";
  t.result.clock = "cupti";
  t.result.ms = stats({0.5, 0.25});
  t.result.activity.recorded = true;
  t.result.activity.records_median = 1.5;
  cml::Work work;
  work.bytes = 1e9;  // whole, but 1e9: a double

  cml::Plot plot;
  plot.id = "bandwidth";
  plot.title = "bandwidth vs stride";
  plot.log2_x = true;
  plot.x_min = 1;
  plot.x_max = 32;
  plot.case_point(4096, "copy", "gbytes_per_s", "\"4 KiB\"");
  plot.metric_point(0.5, "ways");
  plot.ceiling("copy", "a plain copy");

  cml::Json doc = cml::Json::object();
  doc["cases"] = cml::Json::array({cml::case_json("copy 1", t, work)});
  doc["plots"] = cml::Json::array({plot});
  doc["params"] = {{"n", 4096.0}, {"n_neg", -4096.0}, {"big", 123456789012.0}};
  const std::string text = cml::dump_json(doc);
  INFO(text);
  const cml::Json back = parse(text);

  const cml::Json& c = back["cases"][0];
  CHECK(keys(c).front() == "name");
  CHECK(c["name"] == "copy 1");
  CHECK(c["launch_name"] == "copy_kernel");
  CHECK(c["work"]["bytes"].is_number_float());
  CHECK(c["work"]["bytes"].get<double>() == 1e9);
  CHECK(c["gbytes_per_s"].get<double>() == 1e9 / 2.0 * 1e-6);  // at the median, 2 ms
  CHECK(c["activity"]["records_median"].get<double>() == 1.5);
  CHECK(c["remote"].is_null());

  const cml::Json& p = back["plots"][0];
  CHECK(p["style"] == "line");
  CHECK(p["x"]["scale"] == "log2");
  CHECK(p["x"]["max"] == 32);
  CHECK(p["ceiling"]["case"] == "copy");
  CHECK(p["points"][0]["x"].is_number_integer());
  CHECK(p["points"][0]["case"] == "copy");
  CHECK(p["points"][0]["label"] == "\"4 KiB\"");
  CHECK(p["points"][1]["metric"] == "ways");
  CHECK(p["points"][1].count("field") == 0);

  CHECK(back["params"]["n"].is_number_integer());
  CHECK(back["params"]["n"] == 4096);
  CHECK(back["params"]["n_neg"] == -4096);
  CHECK(back["params"]["big"].is_number_float());
  CHECK(text.find("\"n\":4096,") != std::string::npos);
}

TEST_CASE("A bench's whole document reads back, each part where the grader reads it",
          "[harness][gpu][json]") {
  // The report measures the device's limits as it is made: the GPU layer.
  const cml::DeviceInfo device = *cml::query_device(0);
  cml::BenchArgs args;
  args.seed = 7;
  args.timing.nonce = std::uint64_t{1} << 63;
  cml::BenchReport report("99_probe", "solution", args, device, 0);
  report.param("n", 4096);
  report.param("label", "a \"quoted\"\nname");
  report.param("n", 8192);  // named again: its first place, the last value
  cml::PairTiming t;
  t.baseline.name = "naive";
  t.candidate.name = "tiled";
  report.add_comparison("tiled", t, {});
  report.add_case("copy", cml::CaseTiming{}, {});
  report.metric("fraction", 0.25);
  report.metric("ratio", std::numeric_limits<double>::quiet_NaN());
  report.not_timed("bonus", "threw: \xff");
  report.plot("sweep", "a sweep", "x", "y").case_point(1, "copy");
  const std::string text = report.finish();
  INFO(text);
  const cml::Json doc = parse(text);

  CHECK(keys(doc) == std::vector<std::string>{"schema", "lab", "variant", "seed", "input_nonce",
                                              "launch_counting", "device", "limits", "clocks",
                                              "protocol", "params", "comparisons", "cases",
                                              "metrics", "not_timed", "plots"});
  CHECK(doc["schema"] == "cml-bench/2");
  CHECK(doc["lab"] == "99_probe");
  CHECK(doc["seed"] == 7);
  CHECK(doc["input_nonce"] == std::uint64_t{1} << 63);
  CHECK(doc["device"]["name"] == device.name);
  CHECK(keys(doc["clocks"]) == std::vector<std::string>{"start", "end"});
  for (const char* key : {"clock", "event_check", "host_check", "nvtx"}) {
    CHECK(doc["protocol"].contains(key));
  }
  CHECK(doc["protocol"]["nvtx"]["candidate"] == "cml:candidate");
  CHECK(keys(doc["params"]) == std::vector<std::string>{"n", "label"});
  CHECK(doc["params"]["n"].is_number_integer());
  CHECK(doc["params"]["n"] == 8192);
  CHECK(doc["params"]["label"] == "a \"quoted\"\nname");
  CHECK(doc["comparisons"][0]["candidate"]["name"] == "tiled");
  CHECK(doc["cases"][0]["name"] == "copy");
  CHECK(doc["metrics"]["fraction"].get<double>() == 0.25);
  CHECK(doc["metrics"]["ratio"].is_null());
  CHECK(doc["not_timed"]["bonus"] == "threw: " + kReplacement);
  CHECK(doc["plots"][0]["points"][0]["case"] == "copy");
}
