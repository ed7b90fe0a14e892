// JSON text of a parsed value (util/json.hpp), for the files we rewrite after reading them
// (an exported tokenizer_config.json). Objects come out in key order, indented by two spaces;
// numbers in the fewest digits that read back exactly; strings as json_quote writes them.
#pragma once
#include <string>

#include "util/json.hpp"

namespace db {

std::string json_text(const JsonValue& value, int indent = 0);

}  // namespace db
