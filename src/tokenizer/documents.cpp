#include "tokenizer/documents.hpp"

#include "core/error.hpp"
#include "tokenizer/json.hpp"
#include "tokenizer/utf8.hpp"

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

void emit(std::string_view text, int64_t offset, DocumentCounts& counts,
          const DocumentCallback& callback) {
  if (text.empty()) {
    ++counts.empty_documents;
    return;
  }
  ++counts.documents;
  if (is_valid_utf8(text)) {
    callback(text, offset);
    return;
  }
  std::string repaired;
  repair_utf8(text, repaired);
  ++counts.invalid_utf8;
  callback(repaired, offset);
}

void read_jsonl(std::string_view file, int64_t begin, int64_t end, const DocumentOptions& options,
                DocumentCounts& counts, const DocumentCallback& callback) {
  // The owner of a line is the rank whose range holds its first byte.
  size_t pos = static_cast<size_t>(begin);
  if (pos > 0 && file[pos - 1] != '\n') {
    size_t newline = file.find('\n', pos);
    pos = newline == std::string_view::npos ? file.size() : newline + 1;
  }
  JsonValue value;
  std::string error;
  while (pos < file.size() && static_cast<int64_t>(pos) < end) {
    size_t newline = file.find('\n', pos);
    size_t line_end = newline == std::string_view::npos ? file.size() : newline;
    std::string_view line = file.substr(pos, line_end - pos);
    int64_t offset = static_cast<int64_t>(pos);
    pos = line_end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank line
    if (!try_parse_json(line, value, error)) {
      ++counts.malformed_json;
      continue;
    }
    if (!value.is_object()) {
      ++counts.not_an_object;
      continue;
    }
    const JsonValue* field = value.find(options.text_field);
    if (!field) {
      ++counts.missing_field;
      continue;
    }
    if (!field->is_string()) {
      ++counts.field_not_string;
      continue;
    }
    emit(field->as_string(), offset, counts, callback);
  }
}

// Documents are runs of lines between separator lines; the text keeps each line's '\n'.
void read_separated(std::string_view file, const std::string& separator, DocumentCounts& counts,
                    const DocumentCallback& callback) {
  const bool blank_line = separator == "blank-line";
  size_t pos = 0, doc_start = 0;
  auto flush = [&](size_t doc_end) {
    if (doc_end > doc_start)
      emit(file.substr(doc_start, doc_end - doc_start), int64_t(doc_start), counts, callback);
  };
  while (pos < file.size()) {
    size_t newline = file.find('\n', pos);
    size_t line_end = newline == std::string_view::npos ? file.size() : newline;
    std::string_view line = file.substr(pos, line_end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t next = newline == std::string_view::npos ? file.size() : newline + 1;
    if (blank_line ? line.empty() : line == separator) {
      flush(pos);
      doc_start = next;
    }
    pos = next;
  }
  flush(file.size());
}

}  // namespace

void read_documents(std::string_view file, int64_t begin, int64_t end,
                    const DocumentOptions& options, DocumentCounts& counts,
                    const DocumentCallback& callback) {
  counts.input_bytes += end - begin;
  if (options.format == InputFormat::jsonl) {
    read_jsonl(file, begin, end, options, counts, callback);
    return;
  }
  DB_REQUIRE(begin == 0 && end == static_cast<int64_t>(file.size()),
             "text and fortunes inputs are split by whole files, not byte ranges");
  if (options.format == InputFormat::fortunes) {
    read_separated(file, "%", counts, callback);
  } else if (options.doc_separator == "none" || options.doc_separator.empty()) {
    emit(file, 0, counts, callback);
  } else {
    read_separated(file, options.doc_separator, counts, callback);
  }
}

}  // namespace db::tokenizer
