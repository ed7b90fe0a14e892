// Which documents form the validation split (doc/tokenize.md, "Validation split").
#pragma once
#include <cstdint>
#include <string_view>

namespace db::tokenizer {

// True for about `val_fraction` of documents: a hash of (seed, the file's name below its input
// root, the document's offset in the file's content) below the fraction. It depends on nothing
// else — not the ranks, threads or other files — so a split is reproduced exactly.
bool is_validation_document(uint64_t seed, std::string_view file_name, int64_t offset,
                            double val_fraction);

}  // namespace db::tokenizer
