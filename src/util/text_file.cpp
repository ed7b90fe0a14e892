#include "util/text_file.hpp"

#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace db {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DB_REQUIRE(in.good(), "cannot open " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  DB_REQUIRE(!in.bad(), "cannot read " + path);
  return buffer.str();
}

}  // namespace db
