#include "tokenizer/validation_split.hpp"

namespace db::tokenizer {
namespace {

uint64_t fnv1a(std::string_view text, uint64_t hash = 1469598103934665603ULL) {
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ULL;
  return hash;
}

uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

bool is_validation_document(uint64_t seed, std::string_view file_name, int64_t offset,
                            double val_fraction) {
  if (val_fraction <= 0) return false;
  // Seed 0 gives the split of the versions before --seed existed, so their data is reproduced.
  const uint64_t hash =
      mix64(fnv1a(file_name) ^ mix64(static_cast<uint64_t>(offset)) ^ seed * 0x9E3779B97F4A7C15ULL);
  return static_cast<double>(hash >> 11) * 0x1.0p-53 < val_fraction;
}

}  // namespace db::tokenizer
