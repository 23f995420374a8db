// A bench's declaration (CML_BENCH, cml/bench.hpp): the options it declares are parsed with
// their defaults, anything else is refused with the usage, and the usage is made from the
// declaration. All on the host: nothing here runs a bench.
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cml/bench.hpp"
#include "cml/catch.hpp"

// What the build defines for a lab's bench; CML_BENCH reads them.
#define CML_LAB "99_probe"
#define CML_VARIANT "solution"

namespace {

void probe(cml::BenchContext&) {}

CML_BENCH(probe)
    .param("n", 4096, "N", "the matrices' size")
    .option("stretch", 1, "0|1", "the bonus ladder")
    .option("tile", "T", "the tile (default: chosen for this GPU)")
    .param("probe-iterations", 16, "I", "loads per probe")
    .choice("only", {"odd", "multiple"}, "one comparison only (default: both)")
    .check([](const cml::BenchArgs& args) -> std::string {
      return args.get_int("n") % 32 == 0 ? "" : "--n must be a multiple of 32";
    });

const cml::BenchDeclaration& declared() {
  for (const auto& bench : cml::declared_benches()) {
    if (bench.name() == "probe") return bench;
  }
  throw std::logic_error("CML_BENCH(probe) declared no bench named probe");
}

cml::BenchArgs parse(const std::vector<std::string>& words) {
  std::vector<const char*> argv = {"lab99_bench_solution"};
  for (const auto& w : words) argv.push_back(w.c_str());
  return declared().parse(static_cast<int>(argv.size()), argv.data());
}

// The status and text of the BenchExit that parsing `words` ends with ({-1, ""}: none).
std::pair<int, std::string> exit_of(const std::vector<std::string>& words) {
  try {
    parse(words);
  } catch (const cml::BenchExit& exit) {
    return {exit.status(), exit.what()};
  }
  return {-1, ""};
}

}  // namespace

TEST_CASE("CML_BENCH declares the bench of the lab and variant the build names",
          "[harness][host][bench]") {
  const cml::BenchDeclaration& bench = declared();
  CHECK(bench.lab() == "99_probe");
  CHECK(bench.variant() == "solution");
  REQUIRE(bench.options().size() == 5);
  CHECK(bench.options()[0].name == "n");
  CHECK(bench.options()[4].name == "only");
}

TEST_CASE("A bench's options are parsed, each absent one with its declared default",
          "[harness][host][bench]") {
  const cml::BenchArgs defaults = parse({});
  CHECK(defaults.get_int("n") == 4096);
  CHECK(defaults.get_int("stretch") == 1);
  CHECK(defaults.get_int("probe-iterations") == 16);
  CHECK_FALSE(defaults.has("tile"));  // no default: the bench decides
  CHECK(defaults.get_int("tile", 24) == 24);
  CHECK_FALSE(defaults.has("only"));
  CHECK_THROWS_AS(defaults.get_int("tile"), std::out_of_range);

  const cml::BenchArgs given = parse({"--n", "1024", "--tile", "32", "--only", "multiple", "--seed",
                                      "7", "--quick", "--json", "out.json"});
  CHECK(given.get_int("n") == 1024);
  CHECK(given.get_int("tile") == 32);
  CHECK(given.get("only", "") == "multiple");
  CHECK(given.get_int("stretch") == 1);
  CHECK(given.seed == 7);
  CHECK(given.timing.seed == 7);
  CHECK(given.timing.min_samples == 1);
  CHECK(given.timing.max_samples == 1);
  CHECK(given.json_path == "out.json");
}

TEST_CASE("A bench refuses what it does not declare, with why and the usage",
          "[harness][host][bench]") {
  const std::string usage = declared().usage();
  const auto unknown = exit_of({"--n", "1024", "--bogus", "1"});
  CHECK(unknown.first == 2);
  CHECK(unknown.second == "unknown option: --bogus\n" + usage);

  const auto not_integer = exit_of({"--n", "12abc"});
  CHECK(not_integer.first == 2);
  CHECK(not_integer.second == "bad value for --n: 12abc\n" + usage);

  CHECK(exit_of({"--n"}).second == "bad argument: --n\n" + usage);  // no value
  CHECK(exit_of({"n", "5"}).second == "bad argument: n\n" + usage);

  const auto choice = exit_of({"--only", "even"});
  CHECK(choice.first == 2);
  CHECK(choice.second == "--only takes odd or multiple, not 'even'");

  const auto rule = exit_of({"--n", "1000"});  // the declaration's own check
  CHECK(rule.first == 2);
  CHECK(rule.second == "--n must be a multiple of 32");
  CHECK(exit_of({"--n", "1024"}).first == -1);
}

TEST_CASE("The usage lists every declared option with its help and default",
          "[harness][host][bench]") {
  const cml::BenchDeclaration& bench = declared();
  const std::string usage = bench.usage();
  INFO(usage);
  CHECK(usage.rfind("usage: lab99 bench [--n N] [--stretch 0|1] [--tile T] [--probe-iterations I] "
                    "[--only odd|multiple]",
                    0) == 0);
  for (const auto& option : bench.options()) {
    CHECK(usage.find("\n  --" + option.name + " " + option.placeholder + " ") != std::string::npos);
    CHECK(usage.find(option.help) != std::string::npos);
  }
  CHECK(usage.find("the matrices' size (default 4096)") != std::string::npos);
  CHECK(usage.find("the tile (default: chosen for this GPU)\n") != std::string::npos);
  CHECK(usage.find("common options: --json PATH") != std::string::npos);

  const auto help = exit_of({"--n", "64", "--help"});
  CHECK(help.first == 0);
  CHECK(help.second == usage);
}

TEST_CASE("Params are the options declared as such, recorded with '_' for '-'",
          "[harness][host][bench]") {
  std::vector<std::string> recorded;
  for (const auto& option : declared().options()) {
    if (option.recorded) recorded.push_back(option.param_name());
  }
  CHECK(recorded == std::vector<std::string>{"n", "probe_iterations"});
}

TEST_CASE("A declaration refuses a name twice and a common option's name",
          "[harness][host][bench]") {
  cml::BenchDeclaration bench("twice", probe, "99_probe", "student");
  bench.param("n", 1, "N", "a size");
  CHECK_THROWS_AS(bench.option("n", 2, "N", "again"), std::logic_error);
  CHECK_THROWS_AS(bench.option("seed", 2, "N", "the harness's"), std::logic_error);
  CHECK_THROWS_AS(bench.option("--m", 2, "M", "with its dashes"), std::logic_error);
  CHECK_THROWS_AS(bench.choice("only", {}, "nothing to choose"), std::logic_error);
  CHECK(bench.options().size() == 1);
}

TEST_CASE("The start gate's descriptor is a common option", "[harness][host][bench]") {
  CHECK(parse({}).start_fd == -1);  // no gate: the bench starts at once
  CHECK(parse({"--start-fd", "9", "--n", "64"}).start_fd == 9);
  CHECK(exit_of({"--start-fd", "nine"}).first == 2);
  CHECK(declared().usage().find("--start-fd N") != std::string::npos);
}
