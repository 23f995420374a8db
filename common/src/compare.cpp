// Element-wise comparison with readable mismatch reports.
#include "cml/compare.hpp"

#include <cmath>
#include <sstream>

#include "cml/buffer.hpp"
#include "cml/guard_check.hpp"

namespace cml {
namespace {

std::string where(const CompareContext& ctx, std::size_t i) {
  std::ostringstream out;
  out << ctx.name;
  if (ctx.cols > 0) {
    std::size_t row = i / ctx.cols;
    if (row < ctx.row_labels.size()) row = ctx.row_labels[row];
    out << "[" << row << "][" << i % ctx.cols << "]";
  } else {
    out << "[" << i << "]";
  }
  return out.str();
}

std::string run_facts(const CompareContext& ctx) {
  std::ostringstream out;
  out << "(";
  if (!ctx.size.empty()) out << "size " << ctx.size << ", ";
  out << "seed " << ctx.seed << ")";
  return out.str();
}

void finish(CompareResult& result, const CompareContext& ctx, std::ostringstream& lines) {
  result.ok = result.mismatches == 0;
  if (result.ok) return;
  std::ostringstream out;
  out << result.mismatches << " of " << result.checked << " elements of " << ctx.name
      << " are wrong";
  if (result.unwritten > 0) out << " (" << result.unwritten << " never written)";
  out << " " << run_facts(ctx) << ":\n" << lines.str();
  if (result.mismatches > static_cast<std::size_t>(ctx.max_reported)) {
    out << "  ... and " << result.mismatches - ctx.max_reported << " more\n";
  }
  if (!ctx.hint.empty()) out << "Hint: " << ctx.hint << "\n";
  result.message = out.str();
}

// Fails `result` when the arrays differ in length (nothing is compared then); otherwise sets
// how many elements will be checked.
bool sizes_differ(std::size_t got, std::size_t expected, const CompareContext& ctx,
                  CompareResult& result) {
  if (got == expected) {
    result.checked = got;
    return false;
  }
  result.ok = false;
  result.message =
      ctx.name + " has " + std::to_string(got) + " elements, expected " + std::to_string(expected);
  return true;
}

}  // namespace

CompareResult guard_failure(const std::string& name, const std::string& report,
                            const std::string& size, std::uint64_t seed, const std::string& hint) {
  CompareResult r;
  if (report.empty()) return r;
  CompareContext facts;
  facts.size = size;
  facts.seed = seed;
  r.ok = false;
  r.message = "out-of-bounds write into " + name + ": " + report + " " + run_facts(facts);
  if (!hint.empty()) r.message += "\nHint: " + hint;
  return r;
}

Tolerance float_sum_tolerance(std::size_t terms) {
  Tolerance tol;
  tol.rel = 2.0 * static_cast<double>(terms < 1 ? 1 : terms) * std::ldexp(1.0, -24);
  tol.abs = 1e-30;
  return tol;
}

CompareResult compare(const std::vector<float>& got, const std::vector<double>& expected,
                      const Tolerance& tol, const CompareContext& ctx,
                      const std::vector<double>& scale) {
  CompareResult result;
  if (sizes_differ(got.size(), expected.size(), ctx, result)) return result;
  std::ostringstream lines;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i];
    const double e = expected[i];
    const double s = scale.empty() ? std::fabs(e) : scale[i];
    const bool unwritten = is_poison(got[i]);
    const bool good = std::isfinite(g) && std::fabs(g - e) <= tol.abs + tol.rel * s;
    if (good) continue;
    ++result.mismatches;
    if (unwritten) ++result.unwritten;
    if (result.mismatches <= static_cast<std::size_t>(ctx.max_reported)) {
      lines << "  " << where(ctx, i);
      if (unwritten) {
        lines << " was never written (expected " << e << ")\n";
      } else {
        lines << " = " << g << ", expected " << e << "\n";
      }
    }
  }
  finish(result, ctx, lines);
  return result;
}

CompareResult compare_exact(const std::vector<int>& got, const std::vector<int>& expected,
                            const CompareContext& ctx) {
  CompareResult result;
  if (sizes_differ(got.size(), expected.size(), ctx, result)) return result;
  std::ostringstream lines;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == expected[i]) continue;
    ++result.mismatches;
    const bool unwritten = is_poison(got[i]);
    if (unwritten) ++result.unwritten;
    if (result.mismatches <= static_cast<std::size_t>(ctx.max_reported)) {
      lines << "  " << where(ctx, i);
      if (unwritten) {
        lines << " was never written (expected " << expected[i] << ")\n";
      } else {
        lines << " = " << got[i] << ", expected " << expected[i] << "\n";
      }
    }
  }
  finish(result, ctx, lines);
  return result;
}

}  // namespace cml
