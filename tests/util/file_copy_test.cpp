#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE file copy
#include "util/file_copy.hpp"

#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "core/error.hpp"
#include "util/text_file.hpp"

using namespace db;
namespace fs = std::filesystem;

namespace {
struct Folder {
  fs::path path = fs::temp_directory_path() / ("file_copy_test." + std::to_string(::getpid()));
  Folder() { fs::create_directories(path); }
  ~Folder() { fs::remove_all(path); }
};

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}
}  // namespace

BOOST_AUTO_TEST_CASE(copies_every_byte_over_a_longer_file) {
  Folder folder;
  std::string bytes(3 * 1024 * 1024 + 17, '\0');  // more than one chunk of the copy loop
  std::mt19937 rng(7);
  for (char& c : bytes) c = char(rng());
  write(folder.path / "from", bytes);
  write(folder.path / "to", std::string(4 * 1024 * 1024, 'x'));
  copy_file_contents((folder.path / "from").string(), (folder.path / "to").string());
  BOOST_TEST((read_text_file((folder.path / "to").string()) == bytes));
}

BOOST_AUTO_TEST_CASE(a_missing_source_is_an_error_naming_it_not_a_fault_of_the_machine) {
  Folder folder;
  const std::string missing = (folder.path / "missing").string();
  try {
    copy_file_contents(missing, (folder.path / "to").string());
    BOOST_FAIL("no error");
  } catch (const EnvironmentError&) {
    BOOST_FAIL("reported as a fault of the machine");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("cannot open " + missing) != std::string::npos);
  }
}

// /dev/full refuses every write with ENOSPC, as a full disk does: the error names the file being
// written and the real cause (std::filesystem::copy_file said "Input/output error" and named the
// source when a disk filled up during the copy).
BOOST_AUTO_TEST_CASE(a_full_disk_is_reported_as_no_space_naming_the_destination) {
  if (!fs::exists("/dev/full")) {
    BOOST_TEST_MESSAGE("no /dev/full: skipped");
    return;
  }
  Folder folder;
  write(folder.path / "from", std::string(1000, 'a'));
  try {
    copy_file_contents((folder.path / "from").string(), "/dev/full");
    BOOST_FAIL("no error");
  } catch (const EnvironmentError& e) {
    BOOST_TEST(std::string(e.what()) == "No space left on device: /dev/full");
  }
}
