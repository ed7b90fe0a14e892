// Helpers shared by the data tests: a temporary folder removed at the end of each test, raw
// byte files, and a check that a db::Error message names the file and the problem.
#pragma once
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace db::data::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "depthbench_data_XXXXXX").string();
    BOOST_REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  BOOST_REQUIRE(out.good());
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template <typename T>
std::string little_endian_bytes(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// Runs `action`, requires that it throws db::Error, and that the one-line message contains
// every one of `needles` (typically the file name and the problem word).
inline void require_error(const std::function<void()>& action,
                          const std::vector<std::string>& needles) {
  try {
    action();
  } catch (const db::Error& error) {
    const std::string message = error.what();
    BOOST_TEST_MESSAGE("error: " << message);
    BOOST_TEST(message.find('\n') == std::string::npos, "one line: " << message);
    for (const std::string& needle : needles)
      BOOST_TEST(message.find(needle) != std::string::npos,
                 "'" << needle << "' in '" << message << "'");
    return;
  }
  BOOST_FAIL("expected a db::Error mentioning " << needles.front());
}

}  // namespace db::data::test
