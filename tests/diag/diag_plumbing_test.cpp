// The diagnostics' plumbing: evaluation readers against hand-written fixtures in the public
// layouts (malformed records name file and line), bootstrap intervals against a direct
// computation, SHA-256 test vectors, and the atomic replace of diagnostics in a run file.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE diagnostics plumbing
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>

#include "core/rng.hpp"
#include "diag/csv.hpp"
#include "diag/diag_file.hpp"
#include "diag/eval_tasks.hpp"
#include "diag/sha256.hpp"
#include "diag_test_support.hpp"
#include "io/hdf5_handle.hpp"
#include "io/run_file.hpp"
#include "util/bootstrap.hpp"

using namespace db;
using namespace db::diag;
using namespace db::diag::test;

namespace {

// The call throws a db::Error whose message contains every fragment.
template <class F>
void expect_error(F call, std::vector<std::string> fragments) {
  try {
    call();
    BOOST_ERROR("no error thrown; expected " << fragments[0]);
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& f : fragments)
      BOOST_TEST(message.find(f) != std::string::npos, "'" << message << "' lacks '" << f << "'");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(arc_reader_builds_prompts_choices_and_maps_numeric_answer_keys) {
  TempDir dir;
  const std::string path = dir.write(
      "arc.jsonl",
      R"({"id": "q1", "question": "Which is a gas?", "choices": {"text": ["rock", "steam"], "label": ["A", "B"]}, "answerKey": "B"})"
      "\n\n"
      R"({"id": "q2", "question": "Pick 3", "choices": {"text": ["1", "2", "3", "4"], "label": ["A", "B", "C", "D"]}, "answerKey": "3"})"
      "\n"
      R"({"id": "q3", "question": {"stem": "Old layout?", "choices": [{"text": "yes", "label": "1"}, {"text": "no", "label": "2"}]}, "answerKey": "1"})"
      "\n");
  const std::vector<ArcQuestion> q = read_arc(path);
  BOOST_TEST(q.size() == 3u);
  BOOST_TEST(q[0].prompt == "Question: Which is a gas?\nAnswer:");
  BOOST_TEST(q[0].choices[1] == " steam");
  BOOST_TEST(q[0].answer == 1);
  BOOST_TEST(q[1].answer == 2);  // "3" → C
  BOOST_TEST(q[2].answer == 0);  // numeric labels match directly
  BOOST_TEST(q[2].prompt == "Question: Old layout?\nAnswer:");
}

BOOST_AUTO_TEST_CASE(arc_reader_rejects_malformed_records_with_file_and_line) {
  TempDir dir;
  const std::string good =
      R"({"id": "q1", "question": "Q", "choices": {"text": ["a", "b"], "label": ["A", "B"]}, "answerKey": "A"})";
  auto write = [&](const std::string& bad) {
    return dir.write("arc.jsonl", good + "\n" + bad + "\n");
  };
  expect_error([&] { read_arc(write("{not json")); }, {"arc.jsonl:2:"});
  expect_error(
      [&] {
        read_arc(
            write(R"({"id": "q", "choices": {"text": ["a"], "label": ["A"]}, "answerKey": "A"})"));
      },
      {"arc.jsonl:2:", "question"});
  expect_error(
      [&] {
        read_arc(write(
            R"({"question": "Q", "choices": {"text": ["a", "b"], "label": ["A"]}, "answerKey": "A"})"));
      },
      {"arc.jsonl:2:", "differ in length"});
  expect_error(
      [&] {
        read_arc(write(
            R"({"question": "Q", "choices": {"text": ["a", "b"], "label": ["A", "B"]}, "answerKey": "E"})"));
      },
      {"arc.jsonl:2:", "answerKey"});
  expect_error([&] { read_arc(write("[1, 2]")); }, {"arc.jsonl:2:", "object"});
}

BOOST_AUTO_TEST_CASE(nll_readers_build_the_prompts_and_targets_of_the_spec) {
  TempDir dir;
  auto mbpp = read_nll_task(
      "mbpp",
      dir.write(
          "mbpp.jsonl",
          R"({"task_id": 2, "text": "Add.", "code": "def f(a,b):\n    return a+b", "test_list": ["assert f(1,2)==3", "assert f(0,0)==0", "assert f(2,2)==4", "assert f(9,1)==10"]})"
          "\n"));
  BOOST_TEST(
      mbpp[0].prompt ==
      "You are an expert Python programmer, and here is your task: Add. Your code should "
      "pass these tests:\n\nassert f(1,2)==3\nassert f(0,0)==0\nassert f(2,2)==4\n[BEGIN]\n");
  BOOST_TEST(mbpp[0].target == "def f(a,b):\n    return a+b");
  BOOST_TEST(join_target(mbpp[0].prompt, mbpp[0].target) == mbpp[0].target);  // "\n" at the join
  BOOST_TEST(mbpp[0].id == "2");

  auto he = read_nll_task(
      "humaneval",
      dir.write(
          "he.jsonl",
          R"({"task_id": "HumanEval/0", "prompt": "def g():\n", "canonical_solution": "    return 1\n", "test": "", "entry_point": "g"})"
          "\n"));
  BOOST_TEST(he[0].prompt == "def g():\n");
  BOOST_TEST(he[0].target == "    return 1\n");

  auto sciq = read_nll_task(
      "sciq",
      dir.write(
          "sciq.jsonl",
          R"({"question": "What melts?", "distractor1": "a", "distractor2": "b", "distractor3": "c", "correct_answer": "ice", "support": "Heat melts ice."})"
          "\n"));
  BOOST_TEST(sciq[0].prompt == "Question: What melts?\nAnswer:");
  BOOST_TEST(sciq[0].target == " ice\nExplanation: Heat melts ice.");

  auto gsm = read_nll_task(
      "gsm8k", dir.write("gsm.jsonl", R"({"question": "1+1?", "answer": "1+1=2\n#### 2"})"
                                      "\n"));
  BOOST_TEST(gsm[0].prompt == "Question: 1+1?\nAnswer:");
  BOOST_TEST(join_target(gsm[0].prompt, gsm[0].target) == " 1+1=2\n#### 2");  // space inserted

  auto math = read_nll_task(
      "math500",
      dir.write(
          "math.jsonl",
          R"({"problem": "2x=4", "solution": "x=2", "answer": "2", "subject": "Algebra", "level": 1, "unique_id": "test/a.json"})"
          "\n"));
  BOOST_TEST(math[0].prompt == "Problem:\n2x=4\n\nSolution:");
  BOOST_TEST(math[0].target == "x=2");
  BOOST_TEST(math[0].id == "test/a.json");
}

BOOST_AUTO_TEST_CASE(nll_readers_reject_malformed_records_with_file_and_line) {
  TempDir dir;
  expect_error(
      [&] {
        read_nll_task("mbpp", dir.write("m.jsonl", R"({"text": "t", "code": "c", "test_list": "x"})"
                                                   "\n"));
      },
      {"m.jsonl:1:", "test_list"});
  expect_error(
      [&] {
        read_nll_task("humaneval", dir.write("h.jsonl",
                                             "\n"
                                             R"({"prompt": "p"})"
                                             "\n"));
      },
      {"h.jsonl:2:", "canonical_solution"});
  expect_error(
      [&] {
        read_nll_task(
            "sciq", dir.write("s.jsonl", R"({"question": "q", "correct_answer": 3, "support": "s"})"
                                         "\n"));
      },
      {"s.jsonl:1:", "correct_answer"});
  expect_error(
      [&] {
        read_nll_task("gsm8k", dir.write("g.jsonl", R"({"question": "q", "answer": "a"})"
                                                    "\n{\"question\": \n"));
      },
      {"g.jsonl:2:"});
  expect_error(
      [&] {
        read_nll_task("math500", dir.write("x.jsonl", R"({"problem": "p", "solution": "s"})"
                                                      "\n"));
      },
      {"x.jsonl:1:", "answer"});
}

BOOST_AUTO_TEST_CASE(gpqa_reader_parses_quoted_csv_and_shuffles_by_the_record_id) {
  TempDir dir;
  const std::string csv =
      "Pre-Revision Question,Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,"
      "Incorrect Answer 3,Explanation,Record ID\n"
      "x,\"What is \"\"2+2\"\",\nexactly?\",4 , 3,5,22,\"Count, then add.\",recABC\n"
      "y,Plain?,yes,no,maybe,never,Because.,recXYZ\n";
  auto ex = read_nll_task("gpqa", dir.write("gpqa.csv", csv));
  BOOST_TEST(ex.size() == 2u);
  const std::vector<int> order = gpqa_choice_order("recABC");
  const std::string choices[4] = {"4", "3", "5", "22"};
  std::string prompt = "What is \"2+2\",\nexactly?\n";
  for (int k = 0; k < 4; ++k)
    prompt += std::string("(") + char('A' + k) + ") " + choices[order[k]] + "\n";
  BOOST_TEST(ex[0].prompt == prompt + "Answer:");
  BOOST_TEST(ex[0].target == "4\nExplanation: Count, then add.");
  BOOST_TEST(ex[0].id == "recABC");
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  BOOST_TEST(sorted == std::vector<int>({0, 1, 2, 3}));
  BOOST_TEST(gpqa_choice_order("recABC") == order);  // deterministic
}

BOOST_AUTO_TEST_CASE(gpqa_reader_rejects_malformed_csv_with_file_and_line) {
  TempDir dir;
  const std::string header =
      "Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3,"
      "Explanation,Record ID\n";
  expect_error(
      [&] { read_nll_task("gpqa", dir.write("g.csv", header + "q,a,b,c,d,e,r1\nq,a,b\n")); },
      {"g.csv:3:", "3 fields"});
  expect_error(
      [&] {
        read_nll_task("gpqa", dir.write("g.csv", header + "q,a,b,c,d,e,r1\n\"open,a,b,c,d,e,r\n"));
      },
      {"g.csv:3:", "unterminated"});
  expect_error([&] { read_nll_task("gpqa", dir.write("g.csv", header + "q,,b,c,d,e,r1\n")); },
               {"g.csv:2:", "Correct Answer"});
  expect_error([&] { read_nll_task("gpqa", dir.write("g.csv", "Question,Record ID\nq,r\n")); },
               {"g.csv:1:", "missing column"});
}

BOOST_AUTO_TEST_CASE(sha256_matches_the_fips_test_vectors) {
  BOOST_TEST(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  BOOST_TEST(sha256_hex("abc") ==
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

BOOST_AUTO_TEST_CASE(bootstrap_ratio_interval_matches_a_direct_computation) {
  // Fixture: 7 documents with summed NLL and token counts.
  const std::vector<double> nll = {10.0, 4.5, 30.0, 2.0, 8.0, 15.5, 1.0};
  const std::vector<double> tokens = {5, 3, 12, 1, 4, 9, 2};
  const int B = 1000;
  const uint64_t seed = 42;
  const Interval ci = bootstrap_ratio(BootstrapDraws(7, B, seed), 1, nll, tokens);
  // Direct: the same draws, written out, then NumPy's linear percentile.
  Rng rng(seed, "bootstrap");
  std::vector<double> ratios;
  for (int b = 0; b < B; ++b) {
    double n = 0, t = 0;
    for (int i = 0; i < 7; ++i) {
      const uint64_t u = rng.below(7);
      n += nll[u];
      t += tokens[u];
    }
    ratios.push_back(n / t);
  }
  std::sort(ratios.begin(), ratios.end());
  auto linear = [&](double q) {
    const double pos = q * (B - 1);
    const int lo = int(std::floor(pos));
    return ratios[lo] + (pos - lo) * (ratios[lo + 1] - ratios[lo]);
  };
  BOOST_TEST(std::fabs(ci.low[0] - linear(0.025)) < 1e-12);
  BOOST_TEST(std::fabs(ci.high[0] - linear(0.975)) < 1e-12);
  const double point = 71.0 / 36.0;
  BOOST_TEST(ci.low[0] < point);
  BOOST_TEST(ci.high[0] > point);
  // Constant per-unit values: the interval collapses onto the value.
  const Interval flat =
      bootstrap_ratio(BootstrapDraws(5, 200, 1), 1, {2, 2, 2, 2, 2}, {1, 1, 1, 1, 1});
  BOOST_TEST(flat.low[0] == 2.0);
  BOOST_TEST(flat.high[0] == 2.0);
  BOOST_TEST(percentile({1, 2, 3, 4}, 0.5) == 2.5);
}

BOOST_AUTO_TEST_CASE(commit_replaces_diagnostics_and_leaves_other_groups_untouched) {
  TempDir dir;
  const std::string path = dir.file("run.h5");
  {
    RunFile run = RunFile::create(path);
    run.set_attribute("status", std::string("completed"));
    run.append({1, 64, 3.0, 1e-3, 0.5, 0.1, 640, 0});
    run.set_final("val_loss", 2.5);
    run.publish();
  }
  DiagnosticDataset a = DiagnosticDataset::vector("pruning_loss_delta", {1, 2, 3});
  a.attributes["definition"] = std::string("first");
  a.attributes["windows"] = int64_t(8);
  DiagnosticDataset dead = DiagnosticDataset::scalar("dead_segment", 2);
  dead.integer = true;
  commit_diagnostics(path, {a, dead});
  DiagnosticDataset b = DiagnosticDataset::matrix("pruning_loss_delta", 2, 2, {4, 5, 6, 7});
  commit_diagnostics(path, {b});
  BOOST_TEST(!std::filesystem::exists(path + ".diag.tmp"));
  const DiagnosticDataset back = read_diagnostic(path, "pruning_loss_delta");
  BOOST_TEST(back.shape == std::vector<int64_t>({2, 2}));
  BOOST_TEST(back.values == std::vector<double>({4, 5, 6, 7}));
  BOOST_TEST(read_diagnostic(path, "dead_segment").values == std::vector<double>({2}));
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  BOOST_TEST(read_string_attribute(file.get(), "status") == "completed");
  BOOST_TEST(read_double_dataset(file.get(), "curves/train_loss") == std::vector<double>({3.0}));
}
