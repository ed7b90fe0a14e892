// Paths that one command writes into a file and another command reads back, possibly from
// another directory (doc/hdf5-schema.md, "Paths stored in files"). A run file stores its token
// file patterns absolute, so `export` and `diagnose` find the data wherever they are run from.
#pragma once
#include <string>
#include <vector>

namespace db {

// `pattern` made absolute against the current directory (a glob's wildcards are kept).
std::string absolute_pattern(const std::string& pattern);

// The files matching patterns that were stored in `stored_in`. Absolute patterns are expanded
// as they are; a relative one (run files written before patterns were stored absolute) is
// tried against the current directory, then against the folder of `stored_in` and each folder
// above it. Patterns that match nothing are left out: the caller decides whether that is fatal.
std::vector<std::string> expand_stored_globs(const std::vector<std::string>& patterns,
                                             const std::string& stored_in);

}  // namespace db
