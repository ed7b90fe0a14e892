// The writers produce exactly the byte layouts of doc/data.md, write atomically through
// PATH.tmp, and refuse ids that do not fit the dtype before writing anything.
#define BOOST_TEST_MODULE token_writer
#define BOOST_TEST_DYN_LINK
#include "data/token_writer.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>

#include "data/npy_header.hpp"
#include "data/token_format.hpp"
#include "data_test_support.hpp"

using namespace db::data;
using db::data::test::little_endian_bytes;
using db::data::test::read_bytes;
using db::data::test::require_error;
using db::data::test::TempDir;

namespace fs = std::filesystem;

BOOST_AUTO_TEST_CASE(olmo_raw_is_exactly_the_little_endian_ids) {
  TempDir dir;
  const std::vector<uint32_t> ids = {1, 0x1234, 65535};
  write_olmo_raw(dir.file("u16.npy"), ids, 2);
  BOOST_TEST(read_bytes(dir.file("u16.npy")) ==
             little_endian_bytes(std::vector<uint16_t>{1, 0x1234, 65535}));
  write_olmo_raw(dir.file("u32.npy"), ids, 4);
  BOOST_TEST(read_bytes(dir.file("u32.npy")) == little_endian_bytes(ids));
}

BOOST_AUTO_TEST_CASE(npy_header_is_version_1_padded_to_64_bytes) {
  TempDir dir;
  write_npy(dir.file("a.npy"), std::vector<uint32_t>{3, 4}, 4);
  const std::string bytes = read_bytes(dir.file("a.npy"));
  const std::string header = make_npy_header("<u4", 2);
  BOOST_TEST(header.size() % 64 == 0u);
  BOOST_TEST(header.back() == '\n');
  BOOST_TEST(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  BOOST_TEST(bytes.substr(0, header.size()) == header);
  BOOST_TEST(header.find("'descr': '<u4', 'fortran_order': False, 'shape': (2,)") !=
             std::string::npos);
  BOOST_TEST(bytes.substr(header.size()) == little_endian_bytes(std::vector<uint32_t>{3, 4}));
}

BOOST_AUTO_TEST_CASE(llmc_header_holds_magic_version_and_count) {
  TempDir dir;
  for (int dtype_bytes : {2, 4}) {
    write_llmc_bin(dir.file("s.bin"), std::vector<uint32_t>{9, 8, 7}, dtype_bytes);
    const std::string bytes = read_bytes(dir.file("s.bin"));
    BOOST_REQUIRE_EQUAL(bytes.size(), 1024u + 3u * dtype_bytes);
    int32_t words[3];
    std::memcpy(words, bytes.data(), sizeof(words));
    BOOST_TEST(words[0] == (dtype_bytes == 2 ? llmc_magic_uint16 : llmc_magic_uint32));
    BOOST_TEST(words[1] == (dtype_bytes == 2 ? 1 : 7));
    BOOST_TEST(words[2] == 3);
    BOOST_TEST(bytes.substr(12, 1012) == std::string(1012, '\0'));
  }
}

BOOST_AUTO_TEST_CASE(writes_replace_the_target_and_leave_no_temporary) {
  TempDir dir;
  const std::string path = dir.file("out.npy");
  write_olmo_raw(path, std::vector<uint32_t>{1, 2, 3}, 2);
  write_olmo_raw(path, std::vector<uint32_t>{4}, 2);  // overwrite
  BOOST_TEST(fs::file_size(path) == 2u);
  BOOST_TEST(!fs::exists(path + ".tmp"));
  // Several chunks of the uint16 narrowing path.
  std::vector<uint32_t> many(200000);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<uint32_t>(i % 65536);
  write_npy(path, many, 2);
  BOOST_TEST(fs::file_size(path) == make_npy_header("<u2", 200000).size() + 400000u);
}

BOOST_AUTO_TEST_CASE(id_too_large_for_uint16_is_refused_and_nothing_is_written) {
  TempDir dir;
  const std::vector<uint32_t> ids = {1, 65535, 65536, 70000};
  for (auto write : {write_olmo_raw, write_npy, write_llmc_bin}) {
    const std::string path = dir.file("big.npy");
    require_error([&] { write(path, ids, 2); },
                  {"big.npy", "token id 65536 at index 2", "does not fit the uint16"});
    BOOST_TEST(!fs::exists(path));
    BOOST_TEST(!fs::exists(path + ".tmp"));
  }
  write_npy(dir.file("wide.npy"), ids, 4);  // uint32 holds them
  require_error([&] { write_olmo_raw(dir.file("three.npy"), ids, 3); }, {"three.npy", "dtype"});
}

BOOST_AUTO_TEST_CASE(unwritable_folder_is_an_error_naming_the_file) {
  TempDir dir;
  require_error([&] { write_npy(dir.file("no/such/folder/x.npy"), std::vector<uint32_t>{1}, 2); },
                {"x.npy", "cannot create"});
}
