// The pre-tokenizer of a BPE as tokenizer.json describes it: zero or more `Split` steps (each
// cuts every piece further), then optionally
// - `ByteLevel`, which with add_prefix_space puts a space before every piece that lacks one,
//   then with use_regex=true cuts once more with the GPT-2 expression (GPT-2, GPT-NeoX) and
//   with use_regex=false leaves the pieces as they are (Llama-3, Qwen). Its byte-to-character
//   mapping needs no step here: a byte-level model works on raw bytes.
// - `Metaspace` (Mistral): spaces become U+2581 ("▁"), a "▁" is put before the text (always, or
//   only before the document's first piece, or never), and with `split` each "▁" starts a new
//   piece.
// No step at all (Llama-2, whose normalizer does what Metaspace would) leaves the text one piece.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex_split.hpp"

namespace db::tokenizer {

struct SplitStep {
  std::string pattern;
  bool is_regex = true;  // false: a literal string
  SplitBehavior behavior = SplitBehavior::isolated;
  bool invert = false;
};

enum class PrependScheme { always, first, never };

struct MetaspaceStep {
  std::string replacement = "\xE2\x96\x81";  // U+2581
  PrependScheme prepend_scheme = PrependScheme::always;
  bool split = true;
};

struct PreTokenizerConfig {
  std::vector<SplitStep> splits;  // in order, before ByteLevel or Metaspace
  bool byte_level_regex = true;   // ByteLevel use_regex (false also when there is no ByteLevel)
  bool add_prefix_space = false;  // ByteLevel add_prefix_space
  std::optional<MetaspaceStep> metaspace;
};

class PreTokenizerSequence {
 public:
  explicit PreTokenizerSequence(const PreTokenizerConfig& config);  // compiles the expressions

  // Replaces `pieces` by the pre-tokens of `text` (valid UTF-8), as views into `text` or into
  // this object's buffer (valid until the next call). `at_document_start`: `text` begins the
  // document (Metaspace's "first" scheme puts its "▁" only there).
  void run(std::string_view text, std::vector<std::string_view>& pieces,
           bool at_document_start = true);

 private:
  void run_metaspace(std::string_view text, bool at_document_start,
                     std::vector<std::string_view>& pieces);
  void add_prefix_spaces(std::vector<std::string_view>& pieces);

  std::vector<RegexSplit> splits_;
  bool byte_level_regex_, add_prefix_space_;
  std::optional<MetaspaceStep> metaspace_;
  std::vector<std::string_view> scratch_;
  std::string prefixed_text_;                             // ByteLevel's prefixed pieces
  std::vector<std::pair<size_t, size_t>> prefixed_cut_;   // [begin, end) in prefixed_text_
  std::string metaspace_text_;                            // Metaspace's rewritten pieces
  std::vector<std::pair<size_t, size_t>> metaspace_cut_;  // [begin, end) in metaspace_text_
};

}  // namespace db::tokenizer
