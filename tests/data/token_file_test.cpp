// Reading the three token formats of doc/data.md from real files: round trips through our
// writers for every format and dtype, content-based detection, and every validation error.
#define BOOST_TEST_MODULE token_file
#define BOOST_TEST_DYN_LINK
#include "data/token_file.hpp"

#include <boost/test/unit_test.hpp>
#include <numeric>

#include "data/npy_header.hpp"
#include "data/token_writer.hpp"
#include "data_test_support.hpp"

using namespace db::data;
using db::data::test::little_endian_bytes;
using db::data::test::require_error;
using db::data::test::TempDir;
using db::data::test::write_bytes;

namespace {

std::vector<uint32_t> sample_ids(std::size_t count, uint32_t max_id) {
  std::vector<uint32_t> ids(count);
  for (std::size_t i = 0; i < count; ++i)
    ids[i] = static_cast<uint32_t>((i * 7919 + 13) % (max_id + 1));
  ids.back() = max_id;  // the largest value the dtype allows must survive
  return ids;
}

void require_same_tokens(const TokenFile& file, const std::vector<uint32_t>& ids) {
  BOOST_REQUIRE_EQUAL(file.num_tokens(), static_cast<int64_t>(ids.size()));
  std::vector<int32_t> out(ids.size());
  file.read_tokens(0, out);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    BOOST_REQUIRE_EQUAL(static_cast<uint32_t>(out[i]), ids[i]);
    BOOST_REQUIRE_EQUAL(file.token(static_cast<int64_t>(i)), ids[i]);
  }
}

std::string llmc_header(int32_t magic, int32_t version, int32_t count) {
  std::vector<int32_t> words(256, 0);
  words[0] = magic;
  words[1] = version;
  words[2] = count;
  return little_endian_bytes(words);
}

std::string npy_with_header_dict(const std::string& dict, const std::string& data) {
  std::string padded = dict;
  while ((10 + padded.size() + 1) % 64 != 0) padded.push_back(' ');
  padded.push_back('\n');
  std::string bytes(npy_magic);
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(padded.size() & 0xff);
  bytes += static_cast<char>(padded.size() >> 8);
  return bytes + padded + data;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_format_and_dtype_round_trips_through_writer_and_reader) {
  TempDir dir;
  for (int dtype_bytes : {2, 4}) {
    const uint32_t max_id = dtype_bytes == 2 ? 65535u : 4000000000u;
    const std::vector<uint32_t> ids = sample_ids(1001, max_id);
    struct Case {
      TokenFormat format;
      std::string name;
      void (*write)(const std::string&, std::span<const uint32_t>, int);
    };
    for (const Case& c : {Case{TokenFormat::olmo_raw, "raw.npy", write_olmo_raw},
                          Case{TokenFormat::npy, "real.npy", write_npy},
                          Case{TokenFormat::llmc_bin, "shard.bin", write_llmc_bin}}) {
      BOOST_TEST_CONTEXT(c.name << " dtype " << dtype_bytes) {
        const std::string path = dir.file(std::to_string(dtype_bytes) + c.name);
        c.write(path, ids, dtype_bytes);
        // Forced format.
        TokenFileOptions forced{c.format, dtype_bytes, 0};
        TokenFile file(path, forced);
        BOOST_TEST((file.format() == c.format));
        BOOST_TEST(file.dtype_bytes() == dtype_bytes);
        BOOST_TEST(file.path() == path);
        if (dtype_bytes == 2) require_same_tokens(file, ids);
        // Auto-detected format (raw files need the configured dtype).
        TokenFileOptions detected{TokenFormat::auto_detect, dtype_bytes, 0};
        TokenFile again(path, detected);
        BOOST_TEST((again.format() == c.format));
        BOOST_TEST(again.dtype_bytes() == dtype_bytes);
        BOOST_REQUIRE_EQUAL(again.num_tokens(), static_cast<int64_t>(ids.size()));
        for (std::size_t i = 0; i < ids.size(); ++i)
          BOOST_REQUIRE_EQUAL(again.token(static_cast<int64_t>(i)), ids[i]);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(auto_detect_uses_magic_not_the_configured_raw_dtype) {
  TempDir dir;
  const std::vector<uint32_t> ids = {5, 6, 70000};
  write_llmc_bin(dir.file("a.bin"), ids, 4);
  write_npy(dir.file("a.npy"), ids, 4);
  // raw_dtype_bytes = 2 must not matter: the header says uint32.
  const TokenFileOptions options{TokenFormat::auto_detect, 2, 0};
  TokenFile llmc(dir.file("a.bin"), options);
  TokenFile npy(dir.file("a.npy"), options);
  BOOST_TEST((llmc.format() == TokenFormat::llmc_bin));
  BOOST_TEST((npy.format() == TokenFormat::npy));
  BOOST_TEST(llmc.token(2) == 70000u);
  BOOST_TEST(npy.token(2) == 70000u);
  BOOST_TEST(llmc.llmc_version() == 7);
}

BOOST_AUTO_TEST_CASE(raw_bytes_are_read_as_little_endian_uint16_and_uint32) {
  TempDir dir;
  write_bytes(dir.file("u16.npy"), std::string("\x01\x02\x03\x04", 4));
  TokenFile u16(dir.file("u16.npy"), {TokenFormat::auto_detect, 2, 0});
  BOOST_TEST((u16.format() == TokenFormat::olmo_raw));
  BOOST_TEST(u16.num_tokens() == 2);
  BOOST_TEST(u16.token(0) == 0x0201u);
  BOOST_TEST(u16.token(1) == 0x0403u);
  TokenFile u32(dir.file("u16.npy"), {TokenFormat::olmo_raw, 4, 0});
  BOOST_TEST(u32.num_tokens() == 1);
  BOOST_TEST(u32.token(0) == 0x04030201u);
}

BOOST_AUTO_TEST_CASE(npy_version_2_header_and_double_quoted_keys_are_parsed) {
  TempDir dir;
  std::string dict = "{\"descr\": \"<u2\", \"fortran_order\": False, \"shape\": (3,)}";
  while ((12 + dict.size() + 1) % 64 != 0) dict.push_back(' ');
  dict.push_back('\n');
  std::string bytes(npy_magic);
  bytes += std::string("\x02\x00", 2);
  const uint32_t length = static_cast<uint32_t>(dict.size());
  bytes += little_endian_bytes(std::vector<uint32_t>{length});
  bytes += dict + little_endian_bytes(std::vector<uint16_t>{7, 8, 9});
  write_bytes(dir.file("v2.npy"), bytes);
  TokenFile file(dir.file("v2.npy"), {});
  BOOST_TEST((file.format() == TokenFormat::npy));
  BOOST_TEST(file.num_tokens() == 3);
  BOOST_TEST(file.token(2) == 9u);
}

BOOST_AUTO_TEST_CASE(moved_token_file_still_reads_its_mapping) {
  TempDir dir;
  write_npy(dir.file("m.npy"), std::vector<uint32_t>{1, 2, 3}, 2);
  TokenFile first(dir.file("m.npy"), {});
  TokenFile second(std::move(first));
  BOOST_TEST(second.token(1) == 2u);
  std::vector<TokenFile> files;
  files.push_back(std::move(second));
  files.emplace_back(dir.file("m.npy"), TokenFileOptions{});
  BOOST_TEST(files[0].token(2) == 3u);
}

BOOST_AUTO_TEST_CASE(missing_file_is_an_error_naming_the_file) {
  TempDir dir;
  require_error([&] { TokenFile(dir.file("absent.npy"), {}); }, {"absent.npy", "missing"});
}

BOOST_AUTO_TEST_CASE(empty_file_and_zero_token_headers_are_errors) {
  TempDir dir;
  write_bytes(dir.file("empty.npy"), "");
  require_error([&] { TokenFile(dir.file("empty.npy"), {}); }, {"empty.npy", "empty"});
  write_bytes(dir.file("zero.bin"), llmc_header(llmc_magic_uint16, 1, 0));
  require_error([&] { TokenFile(dir.file("zero.bin"), {}); }, {"zero.bin", "empty"});
  write_npy(dir.file("zero.npy"), std::vector<uint32_t>{}, 2);
  require_error([&] { TokenFile(dir.file("zero.npy"), {}); }, {"zero.npy", "empty"});
}

BOOST_AUTO_TEST_CASE(raw_size_not_a_multiple_of_the_dtype_is_an_error) {
  TempDir dir;
  write_bytes(dir.file("odd.npy"), std::string(7, '\1'));
  require_error(
      [&] {
        TokenFile(dir.file("odd.npy"), {TokenFormat::olmo_raw, 2, 0});
      },
      {"odd.npy", "not a multiple", "uint16"});
  write_bytes(dir.file("six.npy"), std::string(6, '\1'));
  require_error(
      [&] {
        TokenFile(dir.file("six.npy"), {TokenFormat::auto_detect, 4, 0});
      },
      {"six.npy", "not a multiple", "uint32"});
}

BOOST_AUTO_TEST_CASE(llmc_count_larger_than_the_data_is_truncated) {
  TempDir dir;
  write_bytes(dir.file("short.bin"), llmc_header(llmc_magic_uint16, 1, 10) +
                                         little_endian_bytes(std::vector<uint16_t>(9, 1)));
  require_error([&] { TokenFile(dir.file("short.bin"), {}); }, {"short.bin", "truncated", "10"});
  write_bytes(dir.file("header.bin"), llmc_header(llmc_magic_uint32, 7, 1).substr(0, 100));
  require_error([&] { TokenFile(dir.file("header.bin"), {}); }, {"header.bin", "truncated"});
}

BOOST_AUTO_TEST_CASE(llmc_data_beyond_the_count_is_trailing_bytes) {
  TempDir dir;
  write_bytes(dir.file("long.bin"), llmc_header(llmc_magic_uint32, 7, 2) +
                                        little_endian_bytes(std::vector<uint32_t>(3, 1)));
  require_error([&] { TokenFile(dir.file("long.bin"), {}); }, {"long.bin", "trailing bytes"});
}

BOOST_AUTO_TEST_CASE(npy_shape_larger_than_the_data_is_truncated) {
  TempDir dir;
  write_bytes(dir.file("short.npy"),
              npy_with_header_dict("{'descr': '<u4', 'fortran_order': False, 'shape': (5,), }",
                                   little_endian_bytes(std::vector<uint32_t>(4, 1))));
  require_error([&] { TokenFile(dir.file("short.npy"), {}); }, {"short.npy", "truncated", "(5,)"});
  // A header length pointing past the end of the file.
  std::string cut =
      npy_with_header_dict("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", "");
  write_bytes(dir.file("cut.npy"), cut.substr(0, 40));
  require_error([&] { TokenFile(dir.file("cut.npy"), {}); }, {"cut.npy", "truncated"});
}

BOOST_AUTO_TEST_CASE(npy_with_a_non_token_dtype_is_wrong_dtype) {
  TempDir dir;
  int case_index = 0;
  for (const std::string descr : {"<i8", "<f4", ">u2", "<i4", "|u1"}) {
    BOOST_TEST_CONTEXT(descr) {
      const std::string path = dir.file("bad" + std::to_string(case_index++) + ".npy");
      write_bytes(path, npy_with_header_dict(
                            "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2,), }",
                            std::string(16, '\0')));
      require_error([&] { TokenFile(path, {}); }, {path, "wrong dtype", descr});
    }
  }
}

BOOST_AUTO_TEST_CASE(npy_that_is_not_one_dimensional_or_fortran_ordered_is_refused) {
  TempDir dir;
  write_bytes(dir.file("matrix.npy"),
              npy_with_header_dict("{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }",
                                   std::string(12, '\0')));
  require_error([&] { TokenFile(dir.file("matrix.npy"), {}); }, {"matrix.npy", "not 1-D"});
  write_bytes(dir.file("scalar.npy"),
              npy_with_header_dict("{'descr': '<u2', 'fortran_order': False, 'shape': (), }",
                                   std::string(2, '\0')));
  require_error([&] { TokenFile(dir.file("scalar.npy"), {}); }, {"scalar.npy", "not 1-D"});
  write_bytes(dir.file("fortran.npy"),
              npy_with_header_dict("{'descr': '<u2', 'fortran_order': True, 'shape': (1,), }",
                                   std::string(2, '\0')));
  require_error([&] { TokenFile(dir.file("fortran.npy"), {}); }, {"fortran.npy", "fortran_order"});
  write_bytes(dir.file("garbled.npy"),
              npy_with_header_dict("{'descr': '<u2', 'shape': [1], }", std::string(2, '\0')));
  require_error([&] { TokenFile(dir.file("garbled.npy"), {}); }, {"garbled.npy", "malformed"});
}

BOOST_AUTO_TEST_CASE(forced_format_on_the_wrong_content_is_an_error) {
  TempDir dir;
  write_olmo_raw(dir.file("raw.npy"), sample_ids(600, 1000), 2);
  require_error(
      [&] {
        TokenFile(dir.file("raw.npy"), {TokenFormat::llmc_bin, 2, 0});
      },
      {"raw.npy", "bad llm.c magic", "wrong dtype"});
  require_error(
      [&] {
        TokenFile(dir.file("raw.npy"), {TokenFormat::npy, 2, 0});
      },
      {"raw.npy", "not a .npy file"});
  require_error(
      [&] {
        TokenFile(dir.file("raw.npy"), {TokenFormat::olmo_raw, 3, 0});
      },
      {"raw.npy", "dtype"});
}

BOOST_AUTO_TEST_CASE(id_at_or_above_vocab_size_names_the_first_offending_index_and_value) {
  TempDir dir;
  // Long enough to span several scan blocks; two bad ids, the first must be reported.
  std::vector<uint32_t> ids = sample_ids(300000, 49999);
  ids[150001] = 50280;
  ids[250000] = 60000;
  for (int dtype_bytes : {2, 4}) {
    write_npy(dir.file("v.npy"), ids, dtype_bytes);
    require_error(
        [&] {
          TokenFile(dir.file("v.npy"), {TokenFormat::auto_detect, 2, 50280});
        },
        {"v.npy", "token id 50280 at index 150001", ">= vocab_size 50280"});
  }
  // vocab_size = 60001 accepts everything; the largest id is exactly V - 1.
  TokenFile ok(dir.file("v.npy"), {TokenFormat::auto_detect, 2, 60001});
  BOOST_TEST(ok.num_tokens() == 300000);
  // Index 0 is reported as index 0.
  write_olmo_raw(dir.file("first.npy"), std::vector<uint32_t>{256, 1, 2}, 2);
  require_error(
      [&] {
        TokenFile(dir.file("first.npy"), {TokenFormat::auto_detect, 2, 256});
      },
      {"first.npy", "token id 256 at index 0"});
}

BOOST_AUTO_TEST_CASE(reading_outside_the_file_is_an_error) {
  TempDir dir;
  write_olmo_raw(dir.file("r.npy"), std::vector<uint32_t>{1, 2, 3}, 2);
  TokenFile file(dir.file("r.npy"), {});
  std::vector<int32_t> out(2);
  file.read_tokens(1, out);
  BOOST_TEST(out[1] == 3);
  require_error([&] { file.read_tokens(2, out); }, {"r.npy", "out of range"});
  require_error([&] { file.token(-1); }, {"r.npy", "out of range"});
}

BOOST_AUTO_TEST_CASE(format_names_parse_and_print) {
  for (TokenFormat format :
       {TokenFormat::auto_detect, TokenFormat::olmo_raw, TokenFormat::npy, TokenFormat::llmc_bin})
    BOOST_TEST((parse_token_format(to_string(format)) == format));
  require_error([] { parse_token_format("parquet"); }, {"parquet", "unknown token format"});
}
