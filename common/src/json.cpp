// The bench document's records as JSON (nlohmann::json), and the document's text.
#include "cml/json.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>

namespace cml {
namespace {

// A double holding a whole number below 1e9 in magnitude, as an integer: the document has
// always written those without a point ("%.9g"), and a reader may take one as an integer.
void whole_numbers_as_integers(Json& json) {
  if (json.is_number_float()) {
    const double x = json.get<double>();
    if (std::isfinite(x) && std::fabs(x) < 1e9 && x == std::trunc(x)) {
      json = static_cast<std::int64_t>(x);
    }
  } else if (json.is_structured()) {
    for (auto& member : json) whole_numbers_as_integers(member);
  }
}

// `value` where it is known, else null.
template <class T>
Json known_or_null(bool known, const T& value) {
  return known ? Json(value) : Json(nullptr);
}

Json failure_json(const std::optional<Failure>& failure) {
  return failure ? Json(*failure) : Json(nullptr);
}

const char* phase(bool warmup) { return warmup ? "warmup" : "timed"; }

// A word's bits as the document writes them: "0x7fc00000".
std::string hex_word(std::uint32_t bits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", bits);
  return text;
}

// The work's figures and its rates at `median_ms` (null without work or without a time).
void add_work(Json& json, const Work& work, double median_ms) {
  json["flop"] = work.flop;
  json["bytes"] = work.bytes;
  json["gflops"] = known_or_null(work.flop > 0 && median_ms > 0, work.flop / median_ms * 1e-6);
  json["gbytes_per_s"] =
      known_or_null(work.bytes > 0 && median_ms > 0, work.bytes / median_ms * 1e-6);
}

Json work_object(const Work& work) { return {{"flop", work.flop}, {"bytes", work.bytes}}; }

// One timed side: name, times (the clock's, the events', the host's), work rates,
// verification, launch counts and what the activity records said.
Json side_json(const std::string& name, const SideResult& side, const Work& work) {
  Json json = Json::object();
  json["name"] = name;
  json["clock"] = side.clock;
  json["ms"] = side.ms;
  json["event_ms"] = side.event_ms;
  json["host_ms"] = side.host_ms;
  json["host_margin_ms"] = side.host_margin_ms;
  add_work(json, work, side.ms.median);
  json["verification"] = side.verification;
  json["launches"] = side.launches;
  json["activity"] = side.activity;
  json["remote"] = side.remote;
  return json;
}

}  // namespace

std::string dump_json(const Json& doc) {
  Json out = doc;
  whole_numbers_as_integers(out);
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void to_json(Json& json, const DeviceInfo& d) {
  json = {{"index", d.index},
          {"name", d.name},
          {"pci_bus_id", d.pci_bus_id},
          {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
          {"sm_count", d.sm_count},
          {"warp_size", d.warp_size},
          {"max_threads_per_block", d.max_threads_per_block},
          {"max_threads_per_sm", d.max_threads_per_sm},
          {"max_blocks_per_sm", d.max_blocks_per_sm},
          {"regs_per_sm", d.regs_per_sm},
          {"regs_per_block", d.regs_per_block},
          {"shared_per_block", d.shared_per_block},
          {"shared_per_block_optin", d.shared_per_block_optin},
          {"shared_per_sm", d.shared_per_sm},
          {"reserved_shared_per_block", d.reserved_shared_per_block},
          {"l2_bytes", d.l2_bytes},
          {"global_bytes", d.global_bytes},
          {"max_sm_clock_mhz", d.max_sm_clock_mhz},
          {"max_mem_clock_mhz", d.max_mem_clock_mhz},
          {"mem_bus_bits", d.mem_bus_bits},
          {"driver_version", version_string(d.driver_version)},
          {"runtime_version", version_string(d.runtime_version)},
          {"nvcc_version", nvcc_version()}};
}

void to_json(Json& json, const ClockSample& c) {
  json = {{"available", c.available},
          {"sm_mhz", known_or_null(c.sm_mhz >= 0, c.sm_mhz)},
          {"mem_mhz", known_or_null(c.mem_mhz >= 0, c.mem_mhz)},
          {"temperature_c", known_or_null(c.temperature_c >= 0, c.temperature_c)}};
}

void to_json(Json& json, const SampleStats& s) {
  json = {{"median", s.median}, {"min", s.min}, {"max", s.max},          {"mean", s.mean},
          {"stdev", s.stdev},   {"rse", s.rse}, {"n", s.samples.size()}, {"samples", s.samples}};
}

void to_json(Json& json, const Failure& f) {
  json = {{"phase", phase(f.warmup)},
          {"pair", f.pair},
          {"sample", known_or_null(f.sample >= 0, f.sample)},
          {"index", f.mismatch.first_index},
          {"where", f.where},
          {"got", f.got},
          {"expected", f.expected},
          {"got_bits", hex_word(f.mismatch.got_bits)},
          {"expected_bits", hex_word(f.mismatch.expected_bits)},
          {"mismatches", f.mismatch.mismatches},
          {"unwritten", f.mismatch.unwritten},
          {"elements", f.mismatch.elements}};
}

void to_json(Json& json, const Verification& v) {
  json = {{"checked", v.checked},
          {"passed", v.passed},
          {"message", v.message},
          {"against", v.against},
          {"rule", v.rule},
          {"samples_total", v.samples_total},
          {"samples_verified", v.samples_verified},
          {"warmup_total", v.warmup_total},
          {"warmup_verified", v.warmup_verified},
          {"first_failure", failure_json(v.first_failure)}};
}

void to_json(Json& json, const DeterminismResult& d) {
  json = {{"checked", d.checked},
          {"required", d.required},
          {"identical", d.identical},
          {"runs", d.runs},
          {"method", d.method},
          {"message", d.message},
          {"first_failure", failure_json(d.first_failure)}};
}

void to_json(Json& json, const LaunchStats& l) {
  json = {{"counted", l.counted},
          {"min", known_or_null(l.counted, l.min)},
          {"max", known_or_null(l.counted, l.max)},
          {"median", known_or_null(l.counted, l.median)},
          {"calls", l.per_call.size()}};
}

void to_json(Json& json, const ActivityStats& a) {
  if (!a.recorded) {
    json = nullptr;
    return;
  }
  json = {{"records_min", a.records_min},
          {"records_max", a.records_max},
          {"records_median", a.records_median},
          {"empty_calls", a.empty_calls},
          {"dropped_calls", a.dropped_calls},
          {"escaped_runs", a.escaped_runs},
          {"runs", a.runs}};
}

// How the runner's calls were timed; null for a side this process ran.
void to_json(Json& json, const RemoteStats& r) {
  if (!r.remote) {
    json = nullptr;
    return;
  }
  json = {{"empty_ms", r.empty_ms},
          {"observed_ms", r.observed_ms},
          {"runner_ms", r.runner_ms},
          {"runner_complete", r.runner_complete},
          {"gap_ms", r.gap_ms},
          {"agreed", r.agreed},
          {"rule", r.rule}};
}

void to_json(Json& json, const Review& r) {
  Json refused = Json::array();
  for (const auto& x : r.refused) {
    refused.push_back(Json{{"phase", phase(x.warmup)},
                           {"pair", x.pair},
                           {"side", x.side},
                           {"event_ms", x.event_ms},
                           {"host_ms", x.host_ms}});
  }
  json = {{"flagged", r.flagged},
          {"rule", r.rule},
          {"reasons", r.reasons},
          {"notes", r.notes},
          {"refused", std::move(refused)}};
}

void to_json(Json& json, const Plot& p) {
  json = {{"id", p.id},
          {"title", p.title},
          {"caption", p.caption},
          {"style", p.lines ? "line" : "dots"}};
  Json x = {{"label", p.x_label}, {"scale", p.log2_x ? "log2" : "linear"}};
  if (p.x_max > p.x_min) {
    x["min"] = p.x_min;
    x["max"] = p.x_max;
  }
  json["x"] = std::move(x);
  json["y"] = {{"label", p.y_label}};
  if (!p.ceiling_case.empty()) {
    json["ceiling"] = {{"label", p.ceiling_label},
                       {"case", p.ceiling_case},
                       {"field", p.ceiling_field}};
  }
  Json points = Json::array();
  for (const auto& pt : p.points) {
    Json point = {{"x", pt.x}, {pt.kind, pt.name}};
    if (!pt.field.empty()) point["field"] = pt.field;
    if (!pt.label.empty()) point["label"] = pt.label;
    points.push_back(std::move(point));
  }
  json["points"] = std::move(points);
}

Json comparison_json(const std::string& name, const PairTiming& t, const Work& work) {
  Json json = {{"name", name},
               {"converged", t.converged},
               {"wall_seconds", t.wall_seconds},
               {"warmup_pairs", t.warmup_pairs},
               {"refused_pairs", t.refused_pairs},
               {"work", work_object(work)}};
  json["baseline"] = side_json(t.baseline.name, t.baseline, work);
  json["candidate"] = side_json(t.candidate.name, t.candidate, work);
  json["speedup"] = t.speedup;
  json["determinism"] = t.determinism;
  json["review"] = t.review;
  return json;
}

Json case_json(const std::string& name, const CaseTiming& t, const Work& work) {
  Json json = side_json(name, t.result, work);
  json["work"] = work_object(work);
  json["launch_name"] = t.result.name;
  json["converged"] = t.converged;
  json["wall_seconds"] = t.wall_seconds;
  json["refused_samples"] = t.refused_samples;
  json["determinism"] = t.determinism;
  json["review"] = t.review;
  return json;
}

}  // namespace cml
