#include "diag/csv.hpp"

#include "core/error.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/text_file.hpp"

namespace db::diag {
namespace {

[[noreturn]] void fail(const std::string& source, int line, const std::string& reason) {
  throw Error(source + ":" + std::to_string(line) + ": " + reason);
}

}  // namespace

std::vector<CsvRecord> parse_csv(const std::string& text, const std::string& source) {
  std::vector<std::vector<std::string>> rows;
  std::vector<int> row_lines;
  std::vector<std::string> row;
  std::string field;
  int line = 1, row_start = 1;
  size_t i = 0;
  bool field_started = false;  // something (possibly an empty quoted field) was read
  auto end_field = [&] {
    row.push_back(std::move(field));
    field.clear();
    field_started = false;
  };
  auto end_row = [&] {
    end_field();
    if (!(row.size() == 1 && row[0].empty())) {  // blank lines are skipped
      rows.push_back(std::move(row));
      row_lines.push_back(row_start);
    }
    row.clear();
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"') {
      if (field_started || !field.empty()) fail(source, line, "quote inside an unquoted field");
      const int quote_line = line;
      ++i;
      for (;;) {
        if (i >= text.size()) fail(source, quote_line, "unterminated quoted field");
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (text[i] == '\n') ++line;
        field += text[i++];
      }
      field_started = true;
      if (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
        fail(source, line, "text after a closing quote");
      continue;
    }
    if (c == ',') {
      end_field();
      ++i;
    } else if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      ++i;
      end_row();
      ++line;
      row_start = line;
    } else {
      if (field_started) fail(source, line, "text after a closing quote");
      field += c;
      ++i;
    }
  }
  if (field_started || !field.empty() || !row.empty()) end_row();
  if (rows.empty()) fail(source, 1, "empty CSV file (a header row is required)");
  const std::vector<std::string>& header = rows[0];
  std::vector<CsvRecord> records;
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != header.size())
      fail(source, row_lines[r],
           "record has " + std::to_string(rows[r].size()) + " fields, the header has " +
               std::to_string(header.size()));
    CsvRecord record;
    record.line = row_lines[r];
    for (size_t f = 0; f < header.size(); ++f) record.fields[header[f]] = rows[r][f];
    records.push_back(std::move(record));
  }
  return records;
}

std::vector<CsvRecord> read_csv(const std::string& path) {
  std::string text = read_text_file(path);
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 byte-order mark
  return parse_csv(text, path);
}

}  // namespace db::diag
