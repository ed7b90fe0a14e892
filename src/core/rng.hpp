// Deterministic random numbers that do not depend on the C++ library: SplitMix64 for bits,
// Box-Muller for normals. Every stream is keyed by (seed, name) so that, e.g., a parameter's
// init does not change when another parameter is added.
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>

namespace db {

inline uint64_t hash_string(std::string_view text, uint64_t seed = 1469598103934665603ull) {
  uint64_t h = seed;  // FNV-1a
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  Rng(uint64_t seed, std::string_view stream)
      : state_(hash_string(stream, seed ^ 0x9e3779b97f4a7c15ull)) {}

  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return (next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return next_u64() % n; }
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  // N(0, std²) truncated at ±3·std by rejection (spec §0 init).
  double truncated_normal(double std) {
    for (;;) {
      double z = normal();
      if (std::fabs(z) <= 3.0) return z * std;
    }
  }
  uint64_t state() const { return state_; }
  void set_state(uint64_t state) { state_ = state; }

 private:
  uint64_t state_;
};

}  // namespace db
