#include "sweep/suite.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "diag/diagnose.hpp"

namespace db::sweep {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text + " ") {
    if (c == ',' || c == ' ' || c == '\t') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  return words;
}

double parse_double(const std::string& key, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw Error(key + ": '" + text + "' is not a number");
}

int parse_int(const std::string& key, const std::string& text) {
  const double v = parse_double(key, text);
  if (v != std::floor(v) || v < 1 || v > 1e6)
    throw Error(key + ": '" + text + "' is not a positive whole number");
  return int(v);
}

std::vector<double> parse_rates(const std::string& key, const std::string& text) {
  std::vector<double> rates;
  for (const std::string& w : split_words(text)) {
    const double lr = parse_double(key, w);
    if (lr <= 0) throw Error(key + ": learning rate " + w + " must be positive");
    rates.push_back(lr);
  }
  if (rates.empty()) throw Error(key + ": empty learning-rate list");
  return rates;
}

bool is_identifier(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// Keys the shape solver and the sweep set per run: a recipe may not override them.
const std::set<std::string> kSolverKeys = {"model.arch",    "model.n_layer",       "model.d_model",
                                           "model.n_head",  "model.n_kv_head",     "model.ff",
                                           "model.qk_norm", "train.learning_rate", "output.dir",
                                           "output.name",   "output.suite"};

struct Line {
  int number;
  std::string key, value;
};

// Sections in file order; each key at most once.
std::map<std::string, std::vector<Line>> read_ini(const std::string& text,
                                                  const std::string& source) {
  std::map<std::string, std::vector<Line>> sections;
  std::istringstream in(text);
  std::string raw, section;
  std::set<std::string> seen;
  for (int number = 1; std::getline(in, raw); ++number) {
    const std::string where = source + ":" + std::to_string(number) + ": ";
    std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty() || line[0] == ';') continue;
    if (line.front() == '[') {
      DB_REQUIRE(line.back() == ']', where + "unclosed section header '" + line + "'");
      section = trim(line.substr(1, line.size() - 2));
      DB_REQUIRE(section == "suite" || section == "learning_rates" || section == "recipe" ||
                     section == "estimate",
                 where + "unknown section [" + section +
                     "] (valid: suite, learning_rates, recipe, estimate)");
      continue;
    }
    const size_t eq = line.find('=');
    DB_REQUIRE(eq != std::string::npos, where + "expected 'key = value', got '" + line + "'");
    DB_REQUIRE(!section.empty(),
               where + "key '" + trim(line.substr(0, eq)) + "' before any [section]");
    Line entry{number, trim(line.substr(0, eq)), trim(line.substr(eq + 1))};
    DB_REQUIRE(!entry.key.empty(), where + "missing key before '='");
    DB_REQUIRE(!entry.value.empty(), where + section + "." + entry.key + " has no value");
    DB_REQUIRE(seen.insert(section + "." + entry.key).second,
               where + section + "." + entry.key + " is given twice");
    sections[section].push_back(entry);
  }
  return sections;
}

void read_suite_section(const std::vector<Line>& lines, const std::string& source, Suite& s) {
  std::string rule_name = "sub1b";
  int heads = 16;
  for (const Line& l : lines) {
    const std::string key = "suite." + l.key;
    const std::string where = source + ":" + std::to_string(l.number) + ": ";
    try {
      if (l.key == "name") {
        DB_REQUIRE(is_identifier(l.value),
                   key + ": '" + l.value + "' must use only a-z, 0-9, _ and -");
        s.name = l.value;
      } else if (l.key == "description") {
        s.description = l.value;
      } else if (l.key == "designs") {
        s.designs = split_words(l.value);
        for (const std::string& d : s.designs)
          DB_REQUIRE(is_identifier(d), key + ": '" + d + "' is not a design name");
      } else if (l.key == "budget") {
        const auto words = split_words(l.value);
        DB_REQUIRE(words.size() == 2 && (words[0] == "total" || words[0] == "backbone"),
                   key + ": expected 'total VALUE' or 'backbone VALUE', got '" + l.value + "'");
        s.budget_kind = words[0] == "total" ? BudgetKind::total : BudgetKind::backbone;
        s.budget = parse_parameter_count(key, words[1]);
      } else if (l.key == "depths") {
        for (const std::string& w : split_words(l.value)) s.depths.push_back(parse_int(key, w));
      } else if (l.key == "shapes") {
        for (const std::string& w : split_words(l.value)) {
          const size_t x = w.find('x');
          DB_REQUIRE(x != std::string::npos, key + ": '" + w + "' is not LxD (e.g. 24x1024)");
          s.shapes.emplace_back(parse_int(key, w.substr(0, x)), parse_int(key, w.substr(x + 1)));
        }
      } else if (l.key == "shape_rule") {
        rule_name = l.value;
      } else if (l.key == "heads") {
        heads = parse_int(key, l.value);
      } else if (l.key == "tokens_per_parameter") {
        s.tokens_per_parameter = parse_double(key, l.value);
        DB_REQUIRE(s.tokens_per_parameter > 0, key + " must be positive");
      } else if (l.key == "budget_tolerance") {
        s.budget_tolerance = parse_double(key, l.value);
        DB_REQUIRE(s.budget_tolerance > 0 && s.budget_tolerance < 1,
                   key + " must be in (0, 1), a fraction of the budget (0.05 = 5%)");
      } else if (l.key == "min_head_dim") {
        s.min_head_dim = parse_int(key, l.value);
      } else if (l.key == "seeds") {
        for (const std::string& w : split_words(l.value)) {
          const double v = parse_double(key, w);
          DB_REQUIRE(v >= 0 && v == std::floor(v) && v < 9.007e15,
                     key + ": '" + w + "' is not a whole number >= 0");
          DB_REQUIRE(std::find(s.seeds.begin(), s.seeds.end(), uint64_t(v)) == s.seeds.end(),
                     key + ": seed " + w + " is given twice");
          s.seeds.push_back(uint64_t(v));
        }
        DB_REQUIRE(!s.seeds.empty(), key + ": empty seed list");
      } else if (l.key == "diagnostics") {
        s.diagnostics = split_words(l.value);
        if (s.diagnostics == std::vector<std::string>{"none"}) s.diagnostics.clear();
        const std::vector<std::string> known = diag::diagnostic_names();
        for (const std::string& d : s.diagnostics)
          DB_REQUIRE(d == "all" || std::find(known.begin(), known.end(), d) != known.end(),
                     key + ": unknown diagnostic '" + d + "'");
      } else {
        throw Error(
            "unknown key '" + key +
            "' (valid: suite.name, description, designs, budget, depths, shapes, "
            "shape_rule, heads, tokens_per_parameter, budget_tolerance, min_head_dim, seeds, "
            "diagnostics)");
      }
    } catch (const Error& e) {
      throw Error(where + e.what());
    }
  }
  try {
    s.rule = ShapeRule::named(rule_name, heads);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
}

void read_learning_rates(const std::vector<Line>& lines, const std::string& source, Suite& s) {
  for (const Line& l : lines) {
    const std::string key = "learning_rates." + l.key;
    const std::string where = source + ":" + std::to_string(l.number) + ": ";
    try {
      if (l.key == "default") {
        s.default_learning_rates = parse_rates(key, l.value);
      } else {
        DB_REQUIRE(std::find(s.designs.begin(), s.designs.end(), l.key) != s.designs.end(),
                   "unknown key '" + key + "': '" + l.key + "' is not one of suite.designs");
        s.design_learning_rates[l.key] = parse_rates(key, l.value);
      }
    } catch (const Error& e) {
      throw Error(where + e.what());
    }
  }
}

void read_recipe(const std::vector<Line>& lines, const std::string& source, Suite& s) {
  std::set<std::string> valid;
  for (const auto& [name, help] : run_config_keys()) valid.insert(name);
  std::map<std::string, std::string> by_section;  // section → INI lines
  for (const Line& l : lines) {
    const std::string where = source + ":" + std::to_string(l.number) + ": ";
    DB_REQUIRE(!kSolverKeys.count(l.key),
               where + "recipe." + l.key +
                   " is set per run by the suite (shape, design, learning rate, output)");
    DB_REQUIRE(valid.count(l.key),
               where + "unknown key 'recipe." + l.key +
                   "' (recipe keys are run-config keys such as train.steps, data.train_files; "
                   "see `depthbench train --help`)");
    const size_t dot = l.key.find('.');
    by_section[l.key.substr(0, dot)] += l.key.substr(dot + 1) + " = " + l.value + "\n";
    s.recipe.emplace_back(l.key, l.value);
    if (l.key == "train.steps") s.steps_fixed = true;
  }
  // A sweep keeps the initial weights of every run (diagnostics compare trained with initial
  // weights) unless its recipe says otherwise; `depthbench train` keeps them only when asked.
  if (std::none_of(s.recipe.begin(), s.recipe.end(),
                   [](const auto& kv) { return kv.first == "train.save_initial_weights"; }))
    by_section["train"] += "save_initial_weights = true\n";
  std::string ini;
  for (const auto& [section, body] : by_section) ini += "[" + section + "]\n" + body;
  try {
    s.base = parse_run_config_text(ini);
  } catch (const Error& e) {
    throw Error(source + ": [recipe] " + e.what());
  }
}

void read_estimate(const std::vector<Line>& lines, const std::string& source, Suite& s) {
  for (const Line& l : lines) {
    const std::string key = "estimate." + l.key;
    const std::string where = source + ":" + std::to_string(l.number) + ": ";
    try {
      if (l.key == "mfu") {
        s.estimate.mfu = parse_double(key, l.value);
        DB_REQUIRE(s.estimate.mfu > 0 && s.estimate.mfu <= 1, key + " must be in (0, 1]");
      } else if (l.key == "peak_tflops_per_gpu") {
        s.estimate.peak_tflops_per_gpu = parse_double(key, l.value);
        DB_REQUIRE(s.estimate.peak_tflops_per_gpu > 0, key + " must be positive");
      } else if (l.key == "gpus_per_run") {
        s.estimate.gpus_per_run = parse_int(key, l.value);
      } else if (l.key == "cpu_gflops_per_rank") {
        s.estimate.cpu_gflops_per_rank = parse_double(key, l.value);
        DB_REQUIRE(*s.estimate.cpu_gflops_per_rank > 0, key + " must be positive");
      } else {
        throw Error("unknown key '" + key +
                    "' (valid: estimate.mfu, peak_tflops_per_gpu, gpus_per_run, "
                    "cpu_gflops_per_rank)");
      }
    } catch (const Error& e) {
      throw Error(where + e.what());
    }
  }
}

}  // namespace

double parse_parameter_count(const std::string& key, const std::string& text) {
  double scale = 1;
  std::string number = text;
  if (!number.empty() && (number.back() == 'M' || number.back() == 'B' || number.back() == 'K')) {
    scale = number.back() == 'K' ? 1e3 : number.back() == 'M' ? 1e6 : 1e9;
    number.pop_back();
  }
  const double v = parse_double(key, number) * scale;
  DB_REQUIRE(v >= 1, key + ": parameter count '" + text + "' must be positive");
  return v;
}

const std::vector<double>& Suite::learning_rates(const std::string& design) const {
  auto it = design_learning_rates.find(design);
  return it != design_learning_rates.end() ? it->second : default_learning_rates;
}

Suite parse_suite_text(const std::string& text, const std::string& source) {
  const auto sections = read_ini(text, source);
  Suite s;
  s.source = source;
  auto section = [&](const char* name) {
    auto it = sections.find(name);
    return it == sections.end() ? std::vector<Line>{} : it->second;
  };
  DB_REQUIRE(sections.count("suite"), source + ": missing [suite] section");
  read_suite_section(section("suite"), source, s);
  read_learning_rates(section("learning_rates"), source, s);
  read_recipe(section("recipe"), source, s);
  read_estimate(section("estimate"), source, s);

  DB_REQUIRE(!s.name.empty(), source + ": suite.name is required");
  DB_REQUIRE(!s.designs.empty(), source + ": suite.designs is required (a list of design names)");
  std::set<std::string> unique(s.designs.begin(), s.designs.end());
  DB_REQUIRE(unique.size() == s.designs.size(), source + ": suite.designs names a design twice");
  DB_REQUIRE(!s.depths.empty() || !s.shapes.empty(),
             source + ": suite.depths or suite.shapes is required");
  DB_REQUIRE(
      s.depths.empty() || s.budget_kind,
      source +
          ": suite.depths needs suite.budget (e.g. 'budget = total 405M') to solve the widths");
  DB_REQUIRE(
      s.seeds.empty() || std::none_of(s.recipe.begin(), s.recipe.end(),
                                      [](const auto& kv) { return kv.first == "train.seed"; }),
      source + ": suite.seeds and recipe train.seed both set the seed: keep one");
  for (const std::string& d : s.designs)
    DB_REQUIRE(!s.learning_rates(d).empty(), source +
                                                 ": learning_rates.default is required (design '" +
                                                 d + "' has no rates of its own)");
  return s;
}

Suite parse_suite_file(const std::string& path) {
  std::ifstream in(path);
  DB_REQUIRE(in, "cannot open suite file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_suite_text(text.str(), path);
}

}  // namespace db::sweep
