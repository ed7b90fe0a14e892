// The tokenizers of `depthbench tokenize` (doc/tokenize.md): a BPE loaded from a Hugging Face
// tokenizer.json (byte-level or SentencePiece-style) or GPT-2's encoder.json + vocab.bpe, and the
// 257-id byte vocabulary of the embedded demo.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe.hpp"
#include "tokenizer/pretokenizer_sequence.hpp"

namespace db::tokenizer {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Appends the ids of `text`, which must be valid UTF-8 (see repair_utf8). Not const: the BPE
  // cache is updated.
  virtual void encode(std::string_view text, std::vector<uint32_t>& ids) = 0;
  // The bytes the ids stand for (special tokens as their text).
  virtual std::string decode(std::span<const uint32_t> ids) const = 0;
  // One past the largest id the tokenizer can emit.
  virtual uint32_t vocab_size() const = 0;
  // The end-of-document id appended after every document.
  virtual uint32_t eod_id() const = 0;
  virtual std::string description() const = 0;
  // The id `tokenize --bos` puts before every document: the special token a tokenizer.json's
  // post-processor puts before a sequence (Llama-3: <|begin_of_text|>), else the bos_token of the
  // tokenizer_config.json beside it; none when neither names one.
  virtual std::optional<uint32_t> bos_id() const { return std::nullopt; }
  // An independent copy for another thread: encode() updates caches and scratch space.
  virtual std::unique_ptr<Tokenizer> clone() const = 0;

  std::vector<uint32_t> encode(std::string_view text) {
    std::vector<uint32_t> ids;
    encode(text, ids);
    return ids;
  }
};

// The most ids a vocabulary may have: 2^22 = 4,194,304, sixteen times the largest vocabularies
// in use (262,144). Tables are sized by the largest id, so every id of a vocabulary file is held
// to it first: a stray id such as 2^31 − 1 would otherwise ask for tens of gigabytes.
inline constexpr uint32_t kMaxVocabularySize = uint32_t(1) << 22;

// A token matched in the text before pre-tokenization (Hugging Face "added_tokens").
struct AddedToken {
  std::string content;  // the text it stands for, as written in the file (never byte-level spelled)
  uint32_t id = 0;
  bool special = false;
  bool normalized = false;  // matched after normalization instead of on the raw text
  bool lstrip = false, rstrip = false, single_word = false;
};

enum class Normalization { none, nfc, nfkc, nfd, nfkd };

// One step of a tokenizer.json normalizer, applied in order to the text between added tokens.
struct NormalizerStep {
  enum class Kind { unicode, prepend, replace } kind = Kind::unicode;
  Normalization form = Normalization::none;  // unicode: NFC, NFKC, NFD or NFKD (ICU)
  std::string text;                          // prepend: put before non-empty text; replace: the
                                             // literal replaced everywhere
  std::string replacement;                   // replace
};

struct BpeTokenizerConfig {
  // Model vocabulary per id: raw bytes for a byte-level model, else the entry's text; empty for
  // an id the model never produces (e.g. DeepSeek's special tokens, reached as added tokens).
  std::vector<std::string> id_to_bytes;
  std::vector<std::pair<std::string, std::string>> merges;  // same spelling, rank order
  // Text for decode() of the ids whose id_to_bytes is empty; "" for none.
  std::vector<std::string> id_to_text;
  std::vector<AddedToken> added_tokens;
  std::vector<NormalizerStep> normalizer;
  PreTokenizerConfig pre_tokenizer;  // default: ByteLevel with the GPT-2 expression
  BpeModelOptions model;             // byte-level or characters, ignore_merges, byte_fallback...
  int64_t eod_id = -1;
  std::string description;
};

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(BpeTokenizerConfig config);
  using Tokenizer::encode;
  std::unique_ptr<Tokenizer> clone() const override;
  void encode(std::string_view text, std::vector<uint32_t>& ids) override;
  std::string decode(std::span<const uint32_t> ids) const override;
  uint32_t vocab_size() const override { return vocab_size_; }
  // Throws db::Error when the vocabulary has no <|endoftext|> and none was set.
  uint32_t eod_id() const override;
  std::string description() const override { return description_; }
  void set_eod_id(uint32_t id);
  std::optional<uint32_t> bos_id() const override { return bos_id_; }
  void set_bos_id(uint32_t id);
  // Id of a token given in its text form: an added token's content or a vocabulary entry's
  // raw bytes; -1 when absent.
  int64_t token_id(std::string_view text) const;
  BpeModel& model() { return model_; }

 private:
  // A token to find in the text: the added token's content, or for a normalized one its content
  // after the normalizer (what Hugging Face's AddedVocabulary matches).
  struct AddedPattern {
    std::string text;
    const AddedToken* token;
  };
  using PatternIndex = std::vector<std::vector<AddedPattern>>;  // by first byte, longest first
  // Splits `text` on the patterns of `index`, appends their ids, and hands every part between
  // them to `rest(part, starts_text)`.
  template <typename Rest>
  void split_on_added(std::string_view text, const PatternIndex& index, std::vector<uint32_t>& ids,
                      Rest&& rest);
  // Applies the normalizer steps; returns `text` itself or a view of `buffer`.
  std::string_view normalize(std::string_view text, std::string& buffer) const;
  // `at_document_start`: the part begins the document (Metaspace's prepend_scheme "first").
  void encode_plain(std::string_view text, bool at_document_start, std::vector<uint32_t>& ids);
  // Clones share the configuration they are built from.
  explicit BpeTokenizer(std::shared_ptr<const BpeTokenizerConfig> config);

  std::shared_ptr<const BpeTokenizerConfig> config_;

  BpeModel model_;
  std::vector<AddedToken> added_tokens_;
  // Added tokens with normalized = false are found in the raw text first, those with
  // normalized = true in the normalized parts between them, as Hugging Face does.
  PatternIndex raw_added_, normalized_added_;
  std::vector<std::string> id_to_text_;  // for decode
  std::vector<NormalizerStep> normalizer_;
  PreTokenizerSequence pre_tokenizer_;
  bool has_raw_added_ = false, has_normalized_added_ = false;
  uint32_t vocab_size_ = 0;
  int64_t eod_id_ = -1;
  std::optional<uint32_t> bos_id_;
  std::string description_;
  std::vector<std::string_view> pieces_;  // scratch
};

// The byte vocabulary of the demo: ids 0..255 are the bytes, 256 is end-of-document (V = 257).
class ByteTokenizer final : public Tokenizer {
 public:
  using Tokenizer::encode;
  void encode(std::string_view text, std::vector<uint32_t>& ids) override;
  std::string decode(std::span<const uint32_t> ids) const override;
  uint32_t vocab_size() const override { return 257; }
  uint32_t eod_id() const override { return 256; }
  std::string description() const override { return "bytes"; }
  std::unique_ptr<Tokenizer> clone() const override { return std::make_unique<ByteTokenizer>(); }
};

// Hugging Face tokenizer.json of a BPE: byte-level (GPT-2, GPT-NeoX, OLMo, Llama-3, Qwen, GPT-4o,
// DeepSeek) or SentencePiece-style (Llama-2, Mistral, Gemma); every other setting is refused by
// name. End-of-document: the first of "<|endoftext|>", "<|end_of_text|>" (Llama-3), "</s>"
// (Llama-2, Mistral), "<eos>" (Gemma), "<｜end▁of▁sentence｜>" (DeepSeek) the file has.
std::unique_ptr<BpeTokenizer> load_hf_tokenizer(const std::string& path);

// GPT-2's encoder.json + vocab.bpe; end-of-document "<|endoftext|>" (50256). Like OpenAI's
// encoder.py, "<|endoftext|>" in the text is encoded as ordinary text.
std::unique_ptr<BpeTokenizer> load_gpt2_tokenizer(const std::string& encoder_json,
                                                  const std::string& vocab_bpe);

// `spec` is "bytes", a tokenizer.json, an encoder.json (vocab.bpe beside it), or a directory
// holding either. Throws db::Error naming the file when it cannot be used.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec);

}  // namespace db::tokenizer
