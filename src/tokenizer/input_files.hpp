// Which files `depthbench tokenize --input` reads (doc/tokenize.md, "Inputs"): plain files,
// directories (every file under them) and glob patterns with `**`, expanded the same way on
// every rank.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace db::tokenizer {

// `--input -`: standard input, read as one stream by rank 0 (doc/tokenize.md, "Inputs").
inline constexpr const char* kStandardInput = "-";

struct InputFile {
  std::string path;  // canonical: symbolic links resolved
  // The path below the directory or the pattern's literal part it was found under (the file
  // name for a plain file): the document identity of the validation split, unchanged when the
  // corpus moves.
  std::string name;
  int64_t bytes = 0;  // on disk (compressed size for .gz/.zst)
};

// Expands every entry: a file is itself; a directory is every regular file below it,
// recursively; a pattern matches with fnmatch(3) per path component, `**` standing for any
// number of directories, and a directory it matches counts whole. Names starting with '.' are
// skipped unless named. Duplicates (also through symbolic links) are removed and the list is
// sorted bytewise by path. An entry that yields no file is an error. "-" (standard input) must be
// the only entry; it gives one InputFile named "-" of unknown size (0 bytes).
std::vector<InputFile> expand_inputs(const std::vector<std::string>& entries);

}  // namespace db::tokenizer
