#include "data/fortune_corpus.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace db::data {
namespace {

bool is_blank(const std::string& text) {
  return std::all_of(text.begin(), text.end(),
                     [](unsigned char c) { return std::isspace(c) != 0; });
}

}  // namespace

std::vector<std::string> read_fortune_documents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DB_REQUIRE(in.good(), "fortune file '" + path + "': missing or unreadable");
  std::vector<std::string> documents;
  std::string document, line;
  bool first_line = true;
  auto finish_document = [&] {
    if (!is_blank(document)) documents.push_back(document);
    document.clear();
    first_line = true;
  };
  while (std::getline(in, line)) {
    const bool separator = line == "%" || line == "%\r";
    if (separator) {
      finish_document();
      continue;
    }
    if (!first_line) document.push_back('\n');
    document += line;
    first_line = false;
  }
  DB_REQUIRE(!in.bad(), "fortune file '" + path + "': read error");
  finish_document();
  return documents;
}

std::vector<uint32_t> byte_level_encode(const std::vector<std::string>& docs, uint32_t eod_id) {
  DB_REQUIRE(eod_id >= 256, "byte-level encoding: end-of-document id " + std::to_string(eod_id) +
                                " collides with a byte value (need >= 256)");
  std::size_t total = docs.size();
  for (const std::string& doc : docs) total += doc.size();
  std::vector<uint32_t> ids;
  ids.reserve(total);
  for (const std::string& doc : docs) {
    for (unsigned char byte : doc) ids.push_back(byte);
    ids.push_back(eod_id);
  }
  return ids;
}

}  // namespace db::data
