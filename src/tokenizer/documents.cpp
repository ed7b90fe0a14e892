#include "tokenizer/documents.hpp"

#include "core/error.hpp"
#include "tokenizer/line_reader.hpp"
#include "util/json.hpp"
#include "util/utf8.hpp"

namespace db::tokenizer {

InputFormat parse_input_format(const std::string& name) {
  if (name == "text") return InputFormat::text;
  if (name == "jsonl") return InputFormat::jsonl;
  if (name == "fortunes") return InputFormat::fortunes;
  DB_REQUIRE(false, "unknown input format '" + name + "' (text, jsonl, fortunes)");
  return InputFormat::text;
}

std::string to_string(InputFormat format) {
  switch (format) {
    case InputFormat::text:
      return "text";
    case InputFormat::jsonl:
      return "jsonl";
    case InputFormat::fortunes:
      return "fortunes";
  }
  return "?";
}

void DocumentCounts::add(const DocumentCounts& o) {
  documents += o.documents;
  empty_documents += o.empty_documents;
  malformed_json += o.malformed_json;
  not_an_object += o.not_an_object;
  missing_field += o.missing_field;
  field_not_string += o.field_not_string;
  invalid_utf8 += o.invalid_utf8;
  input_bytes += o.input_bytes;
}

namespace {

// Where the reader is, for the issue callback: the line number counts only when the reader
// started at the file's first byte.
struct Place {
  int64_t line = 0;  // 0: unknown
  int64_t offset = 0;
};

void report(const IssueCallback& on_issue, const Place& at, std::string reason) {
  if (on_issue) on_issue({at.line, at.offset, std::move(reason)});
}

void emit(std::string_view text, const Place& at, DocumentCounts& counts,
          const DocumentCallback& callback, const IssueCallback& on_issue) {
  if (text.empty()) {
    ++counts.empty_documents;
    report(on_issue, at, "empty document, dropped");
    return;
  }
  ++counts.documents;
  if (is_valid_utf8(text)) {
    callback(text, at.offset);
    return;
  }
  std::string repaired;
  repair_utf8(text, repaired);
  ++counts.invalid_utf8;
  report(on_issue, at, "invalid UTF-8, repaired (ill-formed bytes became U+FFFD)");
  callback(repaired, at.offset);
}

std::string_view without_newline(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  return line;
}

void read_jsonl(LineReader& lines, int64_t begin, int64_t end, const DocumentOptions& options,
                DocumentCounts& counts, const DocumentCallback& callback,
                const IssueCallback& on_issue) {
  JsonValue value;
  std::string error;
  std::string_view line;
  Place at;
  const bool counts_lines = begin == 0;  // a later range opens inside an unknown line
  while (lines.next(line, at.offset) && at.offset < end) {
    if (counts_lines) ++at.line;
    // The owner of a line is the reader whose range holds its first byte.
    if (at.offset < begin) continue;
    line = without_newline(line);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank line
    if (!try_parse_json(line, value, error)) {
      ++counts.malformed_json;
      report(on_issue, at, "malformed JSON, dropped (" + error + ")");
      continue;
    }
    if (!value.is_object()) {
      ++counts.not_an_object;
      report(on_issue, at, "not a JSON object, dropped");
      continue;
    }
    const JsonValue* field = value.find(options.text_field);
    if (!field) {
      ++counts.missing_field;
      report(on_issue, at, "no member '" + options.text_field + "', dropped");
      continue;
    }
    if (!field->is_string()) {
      ++counts.field_not_string;
      report(on_issue, at, "member '" + options.text_field + "' is not a string, dropped");
      continue;
    }
    emit(field->as_string(), at, counts, callback, on_issue);
  }
}

// Documents are runs of lines between separator lines; the text keeps each line's '\n'.
void read_separated(LineReader& lines, const std::string& separator, DocumentCounts& counts,
                    const DocumentCallback& callback, const IssueCallback& on_issue) {
  const bool blank_line = separator == "blank-line";
  std::string document;
  Place document_at, at;
  std::string_view line;
  while (lines.next(line, at.offset)) {
    ++at.line;
    std::string_view bare = without_newline(line);
    if (!bare.empty() && bare.back() == '\r') bare.remove_suffix(1);
    if (blank_line ? bare.empty() : bare == separator) {
      if (!document.empty()) emit(document, document_at, counts, callback, on_issue);
      document.clear();
      continue;
    }
    if (document.empty()) document_at = at;
    document.append(line);
  }
  if (!document.empty()) emit(document, document_at, counts, callback, on_issue);
}

std::string read_all(ByteStream& stream) {
  std::string text;
  std::size_t size = 0;
  for (;;) {
    text.resize(size + (1 << 20));
    const std::size_t n = stream.read(text.data() + size, text.size() - size);
    if (n == 0) break;
    size += n;
  }
  text.resize(size);
  return text;
}

}  // namespace

void read_documents(ByteStream& stream, int64_t stream_offset, int64_t begin, int64_t end,
                    const DocumentOptions& options, DocumentCounts& counts,
                    const DocumentCallback& callback, const IssueCallback& on_issue) {
  if (options.format == InputFormat::jsonl) {
    LineReader lines(stream, stream_offset);
    read_jsonl(lines, begin, end, options, counts, callback, on_issue);
    return;
  }
  DB_REQUIRE(stream_offset == 0 && begin == 0,
             "text and fortunes inputs are split by whole files, not byte ranges");
  if (options.format == InputFormat::fortunes) {
    LineReader lines(stream, 0);
    read_separated(lines, "%", counts, callback, on_issue);
  } else if (options.doc_separator == "none" || options.doc_separator.empty()) {
    emit(read_all(stream), Place{}, counts, callback, on_issue);  // the whole file
  } else {
    LineReader lines(stream, 0);
    read_separated(lines, options.doc_separator, counts, callback, on_issue);
  }
}

}  // namespace db::tokenizer
