/// \file
/// The bench document as JSON, written with nlohmann::json (Debian: nlohmann-json3-dev): each
/// record it holds as the object the grader reads (grader/benchdoc.py), and the document's
/// text. The harness's own sources include it; cml/bench.hpp does not, so a lab's files never
/// compile nlohmann's header.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cml/bench.hpp"
#include "cml/device_info.hpp"
#include "cml/timing.hpp"

namespace cml {

/// A JSON value whose members keep the order they were set in: result.json keeps the
/// document's shape, and a name set twice keeps its first place with the last value (as
/// Python's json module reads a document that names it twice).
using Json = nlohmann::ordered_json;

/// The document's text, on one line. JSON has no NaN: a non-finite number is written as null.
/// A double holding a whole number below 1e9 in magnitude is written as an integer (a size
/// under "params" is 4096, not 4096.0: the types the grader has always read), any other with
/// the fewest digits that read back as the same double. Strings are UTF-8, escaped where JSON
/// asks (quotes, backslashes, control characters); a byte that is not UTF-8 (a message
/// quoting the code under test) is written as U+FFFD, as the grader's reading of the pipe
/// would make it, instead of nlohmann's exception.
std::string dump_json(const Json& doc);

/// The records as the document writes them; nlohmann::json finds these (`json["ms"] = ms`).
/// SampleStats: {"median","min","max","mean","stdev","rse","n","samples"}. ActivityStats and
/// RemoteStats are null where the side was not timed by activity records or by the runner.
void to_json(Json& json, const DeviceInfo& device);
void to_json(Json& json, const ClockSample& clocks);
void to_json(Json& json, const SampleStats& stats);
void to_json(Json& json, const Failure& failure);
void to_json(Json& json, const Verification& verification);
void to_json(Json& json, const DeterminismResult& determinism);
void to_json(Json& json, const LaunchStats& launches);
void to_json(Json& json, const ActivityStats& activity);
void to_json(Json& json, const RemoteStats& remote);
void to_json(Json& json, const Review& review);
void to_json(Json& json, const Plot& plot);

/// An element of the document's "comparisons": the pair's figures, its work, each side's
/// times, rates, verification, launches and clocks, the speedup, determinism and review.
Json comparison_json(const std::string& name, const PairTiming& timing, const Work& work);
/// An element of "cases": the side's fields, then the work and the case's own figures.
Json case_json(const std::string& name, const CaseTiming& timing, const Work& work);

}  // namespace cml
