// The embedded demo corpus: fortune files (Debian `fortunes`, `fortunes-min`; spec
// doc/data.md "Small real data reachable here"), turned into byte-level token ids
// (256 byte values + one end-of-document id) that need no vocabulary file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace db::data {

// Splits a fortune file into its documents. Documents are separated by lines that contain only
// "%" (a trailing '\r' is tolerated); a document is its lines joined by '\n' without the final
// newline. Documents that are empty or only whitespace are skipped. Throws db::Error naming the
// file when it cannot be read.
std::vector<std::string> read_fortune_documents(const std::string& path);

// Byte-level ids: each byte of a document becomes its value 0..255, and `eod_id` follows every
// document, as OLMo appends end-of-document after each (doc/data.md). eod_id must be
// >= 256 so that it cannot be mistaken for a byte.
std::vector<uint32_t> byte_level_encode(const std::vector<std::string>& docs, uint32_t eod_id);

}  // namespace db::data
