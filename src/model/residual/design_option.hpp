// A design's own config keys (spec: "every such choice is a config value"), with the values
// each accepts. The run config, suites and `depthbench designs` read them from the registry
// entry, so a value out of range is refused when the config is read, naming the key and range.
#pragma once
#include <limits>
#include <string>
#include <vector>

namespace db {

struct OptionValues {
  enum class Kind { text, integer, real, boolean, choice };
  Kind kind = Kind::text;  // text: any value (an option that declares nothing)
  // integer, real: inclusive bounds, the lower one exclusive when min_exclusive.
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  // choice: the valid words; integer, real: words accepted besides numbers ("auto", "").
  std::vector<std::string> words;

  static OptionValues integer_at_least(double min, std::vector<std::string> words = {});
  static OptionValues real_at_least(double min, std::vector<std::string> words = {});
  static OptionValues real_above(double min, std::vector<std::string> words = {});
  static OptionValues boolean();
  static OptionValues one_of(std::vector<std::string> words);
};

struct DesignOption {
  std::string key;
  std::string default_value;
  std::string help;
  OptionValues values;
};

const char* kind_name(OptionValues::Kind kind);
// "integer ≥ 1", "real > 0 or auto", "true | false", "layernorm | rmsnorm", "any text".
std::string describe_values(const OptionValues& values);
// Empty when `text` is a valid value of the option, else why not.
std::string option_value_problem(const DesignOption& option, const std::string& text);

}  // namespace db
