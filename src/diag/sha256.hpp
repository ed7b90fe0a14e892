// SHA-256 (FIPS 180-4), for the GPQA choice-shuffle seed (diagnostics.md §7): small, no
// dependency.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace db::diag {

std::array<uint8_t, 32> sha256(std::string_view data);
std::string sha256_hex(std::string_view data);

}  // namespace db::diag
