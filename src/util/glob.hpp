// File patterns as the user writes them in configs and on command lines (data.train_files,
// --tokens, --data): training, evaluation, diagnostics and export all expand them the same way.
#pragma once
#include <string>
#include <vector>

namespace db {

// Expands glob patterns in order (each pattern's matches sorted); a pattern with no match is
// an error naming it.
std::vector<std::string> expand_globs(const std::vector<std::string>& patterns);

}  // namespace db
