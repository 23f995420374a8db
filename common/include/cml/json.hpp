/// \file
/// A minimal streaming JSON writer, for the bench documents the grader reads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cml {

/// Writes one JSON document. Commas and nesting are tracked, strings escaped, and
/// non-finite numbers written as null (JSON has no NaN).
class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  /// The key of the next member; must be inside an object.
  JsonWriter& key(std::string_view name);
  JsonWriter& value(double number);
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(std::uint64_t number);
  JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
  JsonWriter& value(bool flag);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& null();
  /// An array of numbers in one call.
  JsonWriter& value(const std::vector<double>& numbers);
  /// `key(name).value(v)` in one call.
  template <class T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }
  const std::string& str() const { return out_; }

 private:
  void before_value();
  std::string out_;
  std::vector<bool> first_;  // per open container: no member written yet
  bool after_key_ = false;
};

}  // namespace cml
