// Cutting input files into documents (doc/tokenize.md, "Input formats"). A reader never throws on
// bad content: malformed JSON lines, missing or non-string fields and invalid UTF-8 are counted
// by reason, reported with their location to an optional callback, and the reader moves on.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "tokenizer/byte_stream.hpp"

namespace db::tokenizer {

enum class InputFormat { text, jsonl, fortunes };
InputFormat parse_input_format(const std::string& name);  // "text", "jsonl", "fortunes"
std::string to_string(InputFormat format);

struct DocumentOptions {
  InputFormat format = InputFormat::text;
  std::string text_field = "text";  // jsonl: the member holding the document
  // text: "none" (one document per file), "blank-line", or a line that separates documents.
  // fortunes is text with separator "%".
  std::string doc_separator = "none";
};

// Why lines or documents were dropped or repaired; summed over files and ranks.
struct DocumentCounts {
  int64_t documents = 0;         // handed to the callback
  int64_t empty_documents = 0;   // zero bytes of text: dropped
  int64_t malformed_json = 0;    // jsonl line that does not parse: dropped
  int64_t not_an_object = 0;     // jsonl line that parses to something else: dropped
  int64_t missing_field = 0;     // object without the text field: dropped
  int64_t field_not_string = 0;  // text field of another type: dropped
  int64_t invalid_utf8 = 0;      // documents whose ill-formed bytes became U+FFFD: kept
  int64_t input_bytes = 0;       // bytes of the input files on disk this reader covered

  void add(const DocumentCounts& other);
};

// Called once per document with its (valid UTF-8) text and the offset where it starts in the
// file's (decompressed) content; the offset identifies the document for the validation split.
using DocumentCallback = std::function<void(std::string_view text, int64_t offset)>;

// A line or document that was dropped or repaired, where it is and why.
struct DocumentIssue {
  int64_t line = 0;    // 1-based line in the file; 0 when unknown (a range not at the file's start)
  int64_t offset = 0;  // content offset of the line or document
  std::string reason;  // "malformed JSON (...)", "empty document", ...
};
using IssueCallback = std::function<void(const DocumentIssue& issue)>;

// Reads the documents of `stream`, whose first byte is at content offset `stream_offset`.
// jsonl: the lines starting in [begin, end), the stream opened at begin - 1 (or 0) so that a line
// cut by `begin` is recognised and left to the reader before. Other formats read the whole
// stream (stream_offset 0, begin 0, end unbounded).
void read_documents(ByteStream& stream, int64_t stream_offset, int64_t begin, int64_t end,
                    const DocumentOptions& options, DocumentCounts& counts,
                    const DocumentCallback& callback, const IssueCallback& on_issue = {});

}  // namespace db::tokenizer
