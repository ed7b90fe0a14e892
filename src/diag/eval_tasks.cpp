#include "diag/eval_tasks.hpp"

#include <cctype>
#include <functional>
#include <sstream>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "diag/csv.hpp"
#include "diag/sha256.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/json.hpp"
#include "util/text_file.hpp"

namespace db::diag {
namespace {

[[noreturn]] void fail(const std::string& path, int line, const std::string& reason) {
  throw Error(path + ":" + std::to_string(line) + ": " + reason);
}

void for_each_jsonl(const std::string& path,
                    const std::function<void(int line, const JsonValue& record)>& visit) {
  const std::string text = read_text_file(path);
  size_t start = 0;
  int line = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line;
    std::string_view row(text.data() + start, end - start);
    start = end + 1;
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    if (row.find_first_not_of(" \t") == std::string_view::npos) continue;
    JsonValue value;
    std::string error;
    if (!try_parse_json(row, value, error)) fail(path, line, error);
    if (!value.is_object()) fail(path, line, "a record must be a JSON object");
    visit(line, value);
  }
}

const std::string& string_field(const std::string& path, int line, const JsonValue& record,
                                const std::string& key) {
  const JsonValue* v = record.find(key);
  if (!v) fail(path, line, "missing field '" + key + "'");
  if (!v->is_string()) fail(path, line, "field '" + key + "' must be a string");
  return v->as_string();
}

std::string id_field(const JsonValue& record, const std::string& key, int line) {
  const JsonValue* v = record.find(key);
  if (v && v->is_string()) return v->as_string();
  if (v && v->is_number()) {
    std::ostringstream s;
    s << v->as_number();
    return s.str();
  }
  return "line " + std::to_string(line);
}

std::vector<std::string> string_array(const std::string& path, int line, const JsonValue& value,
                                      const std::string& what) {
  if (!value.is_array()) fail(path, line, "'" + what + "' must be an array of strings");
  std::vector<std::string> items;
  for (const JsonValue& item : value.as_array()) {
    if (!item.is_string()) fail(path, line, "'" + what + "' must be an array of strings");
    items.push_back(item.as_string());
  }
  return items;
}

std::string trim(const std::string& text) {
  size_t a = 0, b = text.size();
  while (a < b && std::isspace(static_cast<unsigned char>(text[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(text[b - 1]))) --b;
  return text.substr(a, b - a);
}

std::string question_prompt(const std::string& question) {
  return "Question: " + question + "\nAnswer:";
}

std::vector<NllExample> read_mbpp(const std::string& path) {
  std::vector<NllExample> out;
  for_each_jsonl(path, [&](int line, const JsonValue& r) {
    const std::string& text = string_field(path, line, r, "text");
    const std::string& code = string_field(path, line, r, "code");
    const JsonValue* tests = r.find("test_list");
    if (!tests) fail(path, line, "missing field 'test_list'");
    std::vector<std::string> list = string_array(path, line, *tests, "test_list");
    if (list.empty()) fail(path, line, "'test_list' is empty");
    std::string joined;
    for (size_t i = 0; i < list.size() && i < 3; ++i) joined += (i ? "\n" : "") + list[i];
    out.push_back({id_field(r, "task_id", line),
                   "You are an expert Python programmer, and here is your task: " + text +
                       " Your code should pass these tests:\n\n" + joined + "\n[BEGIN]\n",
                   code});
  });
  return out;
}

std::vector<NllExample> read_humaneval(const std::string& path) {
  std::vector<NllExample> out;
  for_each_jsonl(path, [&](int line, const JsonValue& r) {
    out.push_back({id_field(r, "task_id", line), string_field(path, line, r, "prompt"),
                   string_field(path, line, r, "canonical_solution")});
  });
  return out;
}

std::vector<NllExample> read_sciq(const std::string& path) {
  std::vector<NllExample> out;
  for_each_jsonl(path, [&](int line, const JsonValue& r) {
    const std::string& question = string_field(path, line, r, "question");
    const std::string& answer = string_field(path, line, r, "correct_answer");
    const std::string& support = string_field(path, line, r, "support");
    for (const char* key : {"distractor1", "distractor2", "distractor3"})
      string_field(path, line, r,
                   key);  // the public layout has them; a record without is malformed
    out.push_back({"line " + std::to_string(line), question_prompt(question),
                   " " + answer + "\nExplanation: " + support});
  });
  return out;
}

std::vector<NllExample> read_gsm8k(const std::string& path) {
  std::vector<NllExample> out;
  for_each_jsonl(path, [&](int line, const JsonValue& r) {
    out.push_back({"line " + std::to_string(line),
                   question_prompt(string_field(path, line, r, "question")),
                   string_field(path, line, r, "answer")});
  });
  return out;
}

std::vector<NllExample> read_math500(const std::string& path) {
  std::vector<NllExample> out;
  for_each_jsonl(path, [&](int line, const JsonValue& r) {
    const std::string& problem = string_field(path, line, r, "problem");
    const std::string& solution = string_field(path, line, r, "solution");
    string_field(path, line, r, "answer");
    out.push_back(
        {id_field(r, "unique_id", line), "Problem:\n" + problem + "\n\nSolution:", solution});
  });
  return out;
}

std::vector<NllExample> read_gpqa(const std::string& path) {
  std::vector<NllExample> out;
  const char* required[] = {"Question",           "Correct Answer",     "Incorrect Answer 1",
                            "Incorrect Answer 2", "Incorrect Answer 3", "Explanation",
                            "Record ID"};
  for (const CsvRecord& record : read_csv(path)) {
    for (const char* column : required) {
      auto it = record.fields.find(column);
      if (it == record.fields.end()) fail(path, 1, std::string("missing column '") + column + "'");
      if (trim(it->second).empty() && std::string(column) != "Explanation")
        fail(path, record.line, std::string("empty field '") + column + "'");
    }
    const auto& f = record.fields;
    const std::string id = trim(f.at("Record ID"));
    const std::string choices[4] = {trim(f.at("Correct Answer")), trim(f.at("Incorrect Answer 1")),
                                    trim(f.at("Incorrect Answer 2")),
                                    trim(f.at("Incorrect Answer 3"))};
    const std::vector<int> order = gpqa_choice_order(id);
    std::string prompt = trim(f.at("Question")) + "\n";
    for (int k = 0; k < 4; ++k)
      prompt += std::string("(") + char('A' + k) + ") " + choices[order[k]] + "\n";
    prompt += "Answer:";
    out.push_back({id, prompt, choices[0] + "\nExplanation: " + trim(f.at("Explanation"))});
  }
  return out;
}

}  // namespace

std::vector<ArcQuestion> read_arc(const std::string& path) {
  std::vector<ArcQuestion> out;
  for_each_jsonl(path, [&](int line, const JsonValue& r) {
    ArcQuestion q;
    q.id = id_field(r, "id", line);
    std::vector<std::string> texts, labels;
    const JsonValue* question = r.find("question");
    if (!question) fail(path, line, "missing field 'question'");
    std::string stem;
    if (question->is_object()) {  // AI2's original layout
      stem = string_field(path, line, *question, "stem");
      const JsonValue* choices = question->find("choices");
      if (!choices || !choices->is_array()) fail(path, line, "'question.choices' must be an array");
      for (const JsonValue& c : choices->as_array()) {
        if (!c.is_object()) fail(path, line, "every choice must be an object");
        texts.push_back(string_field(path, line, c, "text"));
        labels.push_back(string_field(path, line, c, "label"));
      }
    } else {
      stem = string_field(path, line, r, "question");
      const JsonValue* choices = r.find("choices");
      if (!choices || !choices->is_object()) fail(path, line, "'choices' must be an object");
      const JsonValue* text = choices->find("text");
      const JsonValue* label = choices->find("label");
      if (!text || !label) fail(path, line, "'choices' needs 'text' and 'label'");
      texts = string_array(path, line, *text, "choices.text");
      labels = string_array(path, line, *label, "choices.label");
    }
    if (texts.size() != labels.size())
      fail(path, line, "choices.text and choices.label differ in length");
    if (texts.size() < 2) fail(path, line, "a question needs at least two choices");
    std::string key = string_field(path, line, r, "answerKey");
    int answer = -1;
    for (size_t i = 0; i < labels.size(); ++i)
      if (labels[i] == key) answer = int(i);
    if (answer < 0 && key.size() == 1 && key[0] >= '1' && key[0] <= '4') {
      const std::string letter(1, char('A' + (key[0] - '1')));
      for (size_t i = 0; i < labels.size(); ++i)
        if (labels[i] == letter) answer = int(i);
    }
    if (answer < 0) fail(path, line, "answerKey '" + key + "' is not one of the labels");
    q.prompt = question_prompt(stem);
    for (const std::string& t : texts) q.choices.push_back(" " + t);
    q.answer = answer;
    out.push_back(std::move(q));
  });
  DB_REQUIRE(!out.empty(), path + ": no questions");
  return out;
}

const std::vector<std::string>& nll_task_names() {
  static const std::vector<std::string> names = {"mbpp", "humaneval", "sciq",
                                                 "gpqa", "gsm8k",     "math500"};
  return names;
}

std::vector<NllExample> read_nll_task(const std::string& task, const std::string& path) {
  std::vector<NllExample> examples;
  if (task == "mbpp")
    examples = read_mbpp(path);
  else if (task == "humaneval")
    examples = read_humaneval(path);
  else if (task == "sciq")
    examples = read_sciq(path);
  else if (task == "gpqa")
    examples = read_gpqa(path);
  else if (task == "gsm8k")
    examples = read_gsm8k(path);
  else if (task == "math500")
    examples = read_math500(path);
  else
    throw Error("unknown evaluation task '" + task + "'");
  DB_REQUIRE(!examples.empty(), path + ": no examples");
  return examples;
}

std::string join_target(const std::string& prompt, const std::string& target) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  if (prompt.empty() || target.empty() || space(prompt.back()) || space(target.front()))
    return target;
  return " " + target;
}

std::vector<int> gpqa_choice_order(const std::string& record_id) {
  const std::array<uint8_t, 32> digest = sha256(record_id);
  uint64_t seed = 0;
  for (int i = 0; i < 8; ++i) seed = seed << 8 | digest[i];
  Rng rng(seed);
  std::vector<int> order = {0, 1, 2, 3};
  for (int i = 3; i > 0; --i) std::swap(order[i], order[rng.below(uint64_t(i + 1))]);
  return order;
}

}  // namespace db::diag
