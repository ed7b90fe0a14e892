// RFC 4180 CSV (GPQA's public layout): a header row, fields separated by commas, quoted fields
// may hold commas, newlines and doubled quotes. Errors name the file and the line.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace db::diag {

struct CsvRecord {
  int line = 0;  // line on which the record starts (1-based; the header is line 1)
  std::map<std::string, std::string> fields;  // by header name
};

// Throws db::Error "FILE:LINE: reason" for an unterminated quote, a stray quote inside an
// unquoted field, or a record whose field count differs from the header's.
std::vector<CsvRecord> read_csv(const std::string& path);
std::vector<CsvRecord> parse_csv(const std::string& text, const std::string& source);

}  // namespace db::diag
