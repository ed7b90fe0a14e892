// The suite files and the shape solver: every row of the tables in spec suites.md is reproduced
// by input/*.ini, the plan is complete and ordered, and malformed suites are rejected with a
// message that names the key.
#define BOOST_TEST_MODULE suite
#include <algorithm>
#include <boost/test/included/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "sweep/sweep_plan.hpp"
#include "train/memory_estimate.hpp"

using namespace db;
using namespace db::sweep;

namespace {

const std::string kInput = std::string(DEPTHBENCH_SOURCE_DIR) + "/input/";

// One printed table row: L, d, ff, head_dim, d/L (0: not printed), backbone (0: not printed)
// and total as printed in the table's unit.
struct Row {
  int L, d, ff, head_dim;
  double aspect, backbone_m, total_m;
};

// A count printed as `printed` units of `unit` with `decimals` decimals (405M, 1.409B).
bool prints_as(int64_t count, double unit, int decimals, double printed) {
  const double scale = std::pow(10.0, decimals);
  return std::round(double(count) / unit * scale) == std::round(printed * scale);
}

void check_rows(const std::string& file, const std::vector<Row>& rows, double unit = 1e6,
                int decimals = 0) {
  const Suite suite = parse_suite_file(kInput + file);
  const std::vector<Shape> shapes = suite_shapes(suite);
  BOOST_TEST_REQUIRE(shapes.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    const ModelConfig& m = shapes[i].model;
    BOOST_TEST_CONTEXT(file << " row L=" << row.L) {
      BOOST_TEST(m.n_layer == row.L);
      BOOST_TEST(m.d_model == row.d);
      BOOST_TEST(m.ff_dim() == row.ff);
      BOOST_TEST(m.head_dim() == row.head_dim);
      if (row.aspect > 0) BOOST_TEST(std::round(m.aspect_ratio() * 100) / 100 == row.aspect);
      if (row.backbone_m > 0)
        BOOST_TEST(prints_as(shapes[i].counts.backbone, unit, decimals, row.backbone_m));
      BOOST_TEST(prints_as(shapes[i].counts.total, unit, decimals, row.total_m));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(main_suite_reproduces_every_row_of_the_405m_table) {
  check_rows("main400m.ini", {{16, 1216, 3248, 76, 76.00, 284, 407},
                              {20, 1120, 2992, 70, 56.00, 301, 414},
                              {24, 1024, 2736, 64, 42.67, 302, 405},
                              {28, 960, 2560, 60, 34.29, 310, 406},
                              {32, 896, 2400, 56, 28.00, 309, 399},
                              {42, 800, 2144, 50, 19.05, 324, 404},
                              {70, 640, 1712, 40, 9.14, 345, 409}});
}

BOOST_AUTO_TEST_CASE(iso_backbone_suite_reproduces_every_row_of_the_302m_table) {
  check_rows("isobackbone300m.ini", {{16, 1248, 3328, 78, 78.00, 299, 425},
                                     {24, 1024, 2736, 64, 42.67, 302, 405},
                                     {32, 896, 2400, 56, 28.00, 309, 399},
                                     {42, 768, 2048, 48, 18.29, 297, 375},
                                     {70, 608, 1632, 38, 8.69, 312, 373},
                                     {84, 544, 1456, 34, 6.48, 299, 354}});
}

BOOST_AUTO_TEST_CASE(ladder_suites_reproduce_every_row_of_the_multi_scale_table) {
  // Depths in the table's column order (d/L ≈ 28, 43, 75); totals only, in M.
  check_rows("ladder200m.ini", {{24, 672, 1792, 42, 0, 0, 198},
                                {18, 768, 2048, 48, 0, 0, 205},
                                {12, 896, 2400, 56, 0, 0, 206}});
  check_rows("ladder300m.ini", {{28, 800, 2144, 50, 0, 0, 296},
                                {21, 896, 2400, 56, 0, 0, 293},
                                {14, 1056, 2816, 66, 0, 0, 294}});
  check_rows("ladder400m.ini", {{32, 896, 2400, 56, 0, 0, 399},
                                {24, 1024, 2736, 64, 0, 0, 405},
                                {16, 1216, 3248, 76, 0, 0, 407}});
  // 500M: the table prints 502/504/504M; the middle shape has 504 525 280 parameters, which
  // rounds to 505 (the table truncated it). Shapes are checked exactly, that total separately.
  const Suite suite = parse_suite_file(kInput + "ladder500m.ini");
  const std::vector<Shape> shapes = suite_shapes(suite);
  BOOST_TEST_REQUIRE(shapes.size() == 3u);
  const int expected[3][3] = {{34, 992, 2656}, {26, 1120, 2992}, {17, 1344, 3584}};
  for (int i = 0; i < 3; ++i) {
    BOOST_TEST(shapes[i].model.n_layer == expected[i][0]);
    BOOST_TEST(shapes[i].model.d_model == expected[i][1]);
    BOOST_TEST(shapes[i].model.ff_dim() == expected[i][2]);
  }
  BOOST_TEST(std::round(shapes[0].counts.total / 1e6) == 502);
  BOOST_TEST(shapes[1].counts.total == 504525280);
  BOOST_TEST(std::round(shapes[2].counts.total / 1e6) == 504);
}

BOOST_AUTO_TEST_CASE(validation_suite_reproduces_every_row_of_the_1p6b_table) {
  check_rows("validation1p6b.ini",
             {{28, 2048, 6144, 128, 73.14, 1.409, 1.615},
              {40, 1728, 5184, 108, 43.20, 1.433, 1.607},
              {54, 1504, 4512, 94, 27.85, 1.466, 1.617}},
             /*unit=*/1e9, /*decimals=*/3);
}

BOOST_AUTO_TEST_CASE(demo_suite_plans_ten_designs_at_three_shapes_longest_first) {
  const Suite suite = parse_suite_file(kInput + "demo.ini");
  BOOST_TEST(suite.designs.size() == 10u);
  const std::vector<PlannedRun> runs = plan_suite(suite, "out");
  BOOST_TEST(runs.size() == 60u);  // two seeds (suite.seeds = 1 2)
  double low = 1e9, high = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i > 0) BOOST_TEST(runs[i - 1].flops >= runs[i].flops);
    BOOST_TEST(runs[i].counts.total > 300000);
    BOOST_TEST(runs[i].counts.total < 3000000);
    BOOST_TEST(runs[i].config.model.head_dim() % 2 == 0);
    low = std::min(low, runs[i].config.model.aspect_ratio());
    high = std::max(high, runs[i].config.model.aspect_ratio());
  }
  BOOST_TEST(high / low >= 4.0);
}

BOOST_AUTO_TEST_CASE(chinchilla_steps_give_20_tokens_per_parameter) {
  const Suite suite = parse_suite_file(kInput + "main400m.ini");
  const std::vector<PlannedRun> runs = plan_suite(suite, "out");
  BOOST_TEST(runs.size() == 7u * (9 * 4 + 4));
  for (const PlannedRun& run : runs) BOOST_TEST(run.config.recipe.tokens_per_step() == 512 * 2048);
  const Shape shape = solve_shape(405e6, BudgetKind::total, 24, suite.rule, 50280);
  const double want = 20.0 * double(shape.counts.total);
  for (const PlannedRun& run : runs)
    if (run.config.model.n_layer == 24) {
      BOOST_TEST(double(run.tokens) >= want);
      BOOST_TEST(double(run.tokens) < want + 512 * 2048);
    }
}

namespace {

const std::string kGood = R"(
[suite]
name = t
designs = pre_ln, lns
budget = total 1M
depths = 2 4
heads = 4
[learning_rates]
default = 1e-3
lns = 5e-3 1e-2
[recipe]
train.steps = 10
)";

// Parses kGood with `from` replaced by `to`; returns the error message ("" when accepted).
std::string error_of(const std::string& from, const std::string& to) {
  std::string text = kGood;
  const size_t at = text.find(from);
  BOOST_TEST_REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  try {
    plan_suite(parse_suite_text(text, "bad.ini"), "out");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_well_formed_suite_expands_to_shapes_times_rates) {
  const Suite suite = parse_suite_text(kGood, "good.ini");
  BOOST_TEST(plan_suite(suite, "o").size() == 2u * (1 + 2));
  BOOST_TEST(suite.base.recipe.steps == 10);
  BOOST_TEST(suite.steps_fixed);
}

BOOST_AUTO_TEST_CASE(malformed_suites_are_rejected_with_a_message_naming_the_key) {
  const auto check = [](const std::string& from, const std::string& to, const std::string& needle) {
    const std::string message = error_of(from, to);
    BOOST_TEST_CONTEXT("'" << to << "' -> " << message) {
      BOOST_TEST(message.find(needle) != std::string::npos);
      BOOST_TEST(message.find("bad.ini") != std::string::npos);
    }
  };
  check("budget = total 1M", "budget = total lots", "suite.budget");
  check("budget = total 1M", "budget = everything 1M", "suite.budget");
  check("depths = 2 4", "depths = 2 four", "suite.depths");
  check("depths = 2 4", "depths = 2 -4", "suite.depths");
  check("heads = 4", "headz = 4", "suite.headz");
  check("heads = 4", "shape_rule = huge", "suite.shape_rule");
  check("lns = 5e-3 1e-2", "lns = 5e-3 fast", "learning_rates.lns");
  check("lns = 5e-3 1e-2", "hc = 1e-3", "learning_rates.hc");
  check("default = 1e-3", "default = -1e-3", "learning_rates.default");
  check("default = 1e-3\n", "", "learning_rates.default");
  check("train.steps = 10", "train.stepz = 10", "recipe.train.stepz");
  check("train.steps = 10", "train.steps = ten", "train.steps");
  check("train.steps = 10", "model.n_layer = 3", "recipe.model.n_layer");
  check("train.steps = 10", "train.learning_rate = 3", "recipe.train.learning_rate");
  check("name = t", "name = has space", "suite.name");
  check("name = t\n", "", "suite.name");
  check("designs = pre_ln, lns", "designs = pre_ln, pre_ln", "suite.designs");
  check("depths = 2 4\n", "", "suite.depths");
  check("[recipe]", "[recipes]", "[recipes]");
  check("heads = 4", "heads 4", "heads 4");
  check("heads = 4", "heads = 4\nheads = 8", "suite.heads");
  check("depths = 2 4", "shapes = 2x100", "suite.shapes");  // head_dim 25 is odd
  // At L = 100000 the narrowest shape (d = 8) has 100× the 1M budget: refused with the overshoot.
  check("depths = 2 4", "depths = 2 100000", "suite.depths 100000: suite.budget of 1e+06");
  check("depths = 2 4", "depths = 2 100000", "is below the narrowest shape at L = 100000");
}

// Issue 22 lever 6: every run of the GPU suites fits one 141 GB H200 by plan's estimate
// (train/memory_estimate.hpp), with a margin of 10% for what the estimate does not count.
BOOST_AUTO_TEST_CASE(every_run_of_the_gpu_suites_fits_one_h200_with_a_margin) {
  for (const char* file : {"main400m.ini", "validation1p6b.ini"}) {
    const Suite suite = parse_suite_file(kInput + file);
    double largest = 0;
    for (const PlannedRun& run : plan_suite(suite, "out")) {
      const double bytes = estimate_memory(run.config).total();
      largest = std::max(largest, bytes);
      BOOST_TEST(bytes <= 0.9 * 141e9, file << " " << run.config.run_name());
    }
    BOOST_TEST_MESSAGE(file << ": largest run " << largest / double(1 << 30) << " GiB");
  }
}

// Issue 40: a solved shape far from the budget is refused, naming the shape and budgets that
// fit every depth; so is a head_dim below suite.min_head_dim unless the suite lowers it.
BOOST_AUTO_TEST_CASE(shapes_far_from_the_budget_or_with_tiny_heads_are_refused) {
  // The demo's shapes at 1M: L = 8 gets d = 96, 6.4% below. The budgets offered fit.
  std::string demo = kGood;
  demo.replace(demo.find("depths = 2 4"), 12, "depths = 2 4 8");
  demo.replace(demo.find("train.steps = 10"), 16, "train.steps = 10\nmodel.vocab_size = 257");
  std::string far;
  try {
    suite_shapes(parse_suite_text(demo, "demo1m.ini"));
  } catch (const Error& e) {
    far = e.what();
  }
  BOOST_TEST(
      far.find("demo1m.ini: suite.depths 8: the nearest width d_model = 96") != std::string::npos,
      far);
  BOOST_TEST(
      far.find("-6.4% from suite.budget 1M, beyond suite.budget_tolerance 5%") != std::string::npos,
      far);
  const std::string offered = "budgets within it at every depth: ";
  BOOST_TEST_REQUIRE(far.find(offered) != std::string::npos, far);
  std::string budgets = far.substr(far.find(offered) + offered.size());
  budgets = budgets.substr(0, budgets.find(" ("));
  for (const std::string& budget :
       {budgets.substr(0, budgets.find(" or ")), budgets.substr(budgets.find(" or ") + 4)}) {
    std::string fixed = demo;
    fixed.replace(fixed.find("total 1M"), 8, "total " + budget);
    BOOST_TEST_CONTEXT("offered budget " << budget) {
      const Suite suite = parse_suite_text(fixed, "fixed.ini");
      for (const Shape& shape : suite_shapes(suite))
        BOOST_TEST(std::abs(budget_deviation(suite, shape)) <= 0.05);
    }
  }
  // A wider tolerance accepts the same suite.
  BOOST_TEST(error_of("budget = total 1M\ndepths = 2 4",
                      "budget = total 1M\ndepths = 2 4\nbudget_tolerance = 0.5")
                 .empty());
  // Head dim 2 (d = 8 with 4 heads) is refused by default, accepted when the suite says so.
  const std::string tiny = error_of("depths = 2 4", "shapes = 2x8");
  BOOST_TEST(tiny.find("head_dim 2") != std::string::npos, tiny);
  BOOST_TEST(tiny.find("suite.min_head_dim = 8") != std::string::npos, tiny);
  BOOST_TEST(error_of("depths = 2 4", "shapes = 2x8\nmin_head_dim = 2").empty());
  BOOST_TEST(
      error_of("heads = 4", "heads = 4\nbudget_tolerance = 2").find("suite.budget_tolerance") !=
      std::string::npos);
}

// Every shipped suite stays within the default tolerance (its solved shapes are printed in the
// tables of doc/suites.md).
BOOST_AUTO_TEST_CASE(every_shipped_suite_is_iso_parameter_within_five_percent) {
  for (const char* file :
       {"main400m.ini", "isobackbone300m.ini", "ladder200m.ini", "ladder300m.ini", "ladder400m.ini",
        "ladder500m.ini", "validation1p6b.ini", "demo.ini"}) {
    const Suite suite = parse_suite_file(kInput + file);
    BOOST_TEST(suite.budget_tolerance == 0.05);
    double largest = 0;
    for (const Shape& shape : suite_shapes(suite)) {
      largest = std::max(largest, std::abs(budget_deviation(suite, shape)));
      BOOST_TEST(shape.model.head_dim() >= 8);
    }
    BOOST_TEST(largest <= 0.05, file);
    BOOST_TEST_MESSAGE(file << ": largest deviation " << 100 * largest << "%");
  }
}

// Issue 40: seeds are a sweep axis; each seed is a run of its own with the seed in its name.
BOOST_AUTO_TEST_CASE(seeds_multiply_the_runs_and_name_them) {
  std::string text = kGood;
  text.replace(text.find("heads = 4"), 9, "heads = 4\nseeds = 1 2 3");
  const Suite suite = parse_suite_text(text, "seeds.ini");
  const std::vector<PlannedRun> runs = plan_suite(suite, "o");
  BOOST_TEST(runs.size() == 3u * 2u * (1 + 2));
  int with_seed_2 = 0;
  for (const PlannedRun& run : runs) {
    const std::string name = run.config.run_name();
    const std::string suffix = "__s" + std::to_string(run.config.seed);
    BOOST_TEST(name.substr(name.size() - suffix.size()) == suffix, name);
    with_seed_2 += run.config.seed == 2;
  }
  BOOST_TEST(with_seed_2 == 2 * (1 + 2));
  // Without seeds: one run per cell with the recipe's seed and the names as before.
  for (const PlannedRun& run : plan_suite(parse_suite_text(kGood, "good.ini"), "o")) {
    BOOST_TEST(run.config.seed == 1234u);
    BOOST_TEST(run.config.run_name().find("__s") == std::string::npos);
  }
  BOOST_TEST(error_of("heads = 4", "heads = 4\nseeds = 1 1").find("given twice") !=
             std::string::npos);
  BOOST_TEST(error_of("train.steps = 10", "train.steps = 10\ntrain.seed = 5")
                 .empty());  // the recipe's seed alone is fine
  BOOST_TEST(error_of("heads = 4", "heads = 4\nseeds = 1 2").empty());
  std::string both = kGood;
  both.replace(both.find("heads = 4"), 9, "heads = 4\nseeds = 1 2");
  both.replace(both.find("train.steps = 10"), 16, "train.steps = 10\ntrain.seed = 5");
  BOOST_CHECK_EXCEPTION(parse_suite_text(both, "both.ini"), Error, [](const Error& e) {
    return std::string(e.what()).find("suite.seeds and recipe train.seed") != std::string::npos;
  });
}
