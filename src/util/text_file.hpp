// Reading a whole file into memory: tokenizer files, JSON headers, evaluation task files.
#pragma once
#include <string>

namespace db {

// Whole file as a string (bytes as stored); throws db::Error naming the file.
std::string read_text_file(const std::string& path);

}  // namespace db
