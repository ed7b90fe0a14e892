// Copying a file with the real reason of a failure. std::filesystem::copy_file (libstdc++) copies
// with sendfile and reports a short copy, which is what a disk that fills up mid-copy gives, as
// "Input/output error" naming the source; this copy names the file being written and the errno
// the write returned (ENOSPC, EDQUOT, ...), as every other write of a run does.
#pragma once
#include <string>

namespace db {

// Copies `from` over `to` (created or truncated). A failure of the environment (full disk, quota,
// I/O error, read-only) throws db::EnvironmentError naming the file; any other a db::Error.
void copy_file_contents(const std::string& from, const std::string& to);

}  // namespace db
