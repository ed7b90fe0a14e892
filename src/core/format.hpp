// Short human-readable figures for console lines.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace db {

// 75 s → "1m15s", 4000 s → "1h06m".
inline std::string format_duration(double seconds) {
  char text[32];
  const long s = long(seconds + 0.5);
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  return text;
}

// A tensor shape for messages: "[2, 3]".
inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t n : shape) s += (s.empty() ? "" : ", ") + std::to_string(n);
  return "[" + s + "]";
}

// The shortest decimal text that reads back as the same double ("1e-06", not
// "9.9999999999999995e-07"), for numbers in files that other tools read.
inline std::string exact_number_text(double value) {
  char text[32];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

}  // namespace db
