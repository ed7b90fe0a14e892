// Readers of the public evaluation layouts (diagnostics.md §5 and §7) and the prompt/target
// construction of each task. Every reader rejects a malformed record with "FILE:LINE: reason".
#pragma once
#include <string>
#include <vector>

namespace db::diag {

// ARC-Easy (JSONL): id, question, choices{text[], label[]}, answerKey; answer keys "1".."4"
// map to A..D when the labels are letters. AI2's original layout (question{stem, choices[{text,
// label}]}) is accepted too.
struct ArcQuestion {
  std::string id;
  std::string prompt;                // "Question: {question}\nAnswer:"
  std::vector<std::string> choices;  // " {choice}" (the scored continuations)
  int answer = 0;                    // index into choices
};
std::vector<ArcQuestion> read_arc(const std::string& path);

// One completion-only example of a domain NLL task: the summed NLL of `target` given `prompt`.
struct NllExample {
  std::string id;
  std::string prompt, target;
};

// The tasks of §7 by name: mbpp, humaneval, sciq, gpqa, gsm8k, math500.
const std::vector<std::string>& nll_task_names();
std::vector<NllExample> read_nll_task(const std::string& task, const std::string& path);

// Inserts a single space when neither side has whitespace at the join (§7).
std::string join_target(const std::string& prompt, const std::string& target);

// GPQA's choice order: a Fisher–Yates shuffle of {correct, incorrect 1..3} seeded by the first
// 8 bytes (big-endian) of SHA-256(record id). Returns the permutation of the indices 0..3.
std::vector<int> gpqa_choice_order(const std::string& record_id);

}  // namespace db::diag
