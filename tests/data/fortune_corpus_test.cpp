// The demo corpus: fortune files split at "%" lines, byte-level ids with end-of-document after
// each document, and the real Debian fortunes file carried through writer, reader and windows.
#define BOOST_TEST_MODULE fortune_corpus
#define BOOST_TEST_DYN_LINK
#include "data/fortune_corpus.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>

#include "data/token_dataset.hpp"
#include "data/token_writer.hpp"
#include "data_test_support.hpp"

using namespace db::data;
using db::data::test::require_error;
using db::data::test::TempDir;
using db::data::test::write_bytes;

BOOST_AUTO_TEST_CASE(documents_are_split_at_percent_lines_and_empty_ones_skipped) {
  TempDir dir;
  write_bytes(dir.file("f"),
              "First line\n  second line\n%\n%\n   \n%\nA 50% discount\n%%\n%\r\nLast, "
              "no final separator");
  const std::vector<std::string> docs = read_fortune_documents(dir.file("f"));
  BOOST_REQUIRE_EQUAL(docs.size(), 3u);
  BOOST_TEST(docs[0] == "First line\n  second line");
  BOOST_TEST(docs[1] == "A 50% discount\n%%");  // only a line of exactly "%" separates
  BOOST_TEST(docs[2] == "Last, no final separator");
}

BOOST_AUTO_TEST_CASE(byte_level_encoding_appends_eod_after_every_document) {
  const std::vector<uint32_t> ids = byte_level_encode({"ab", std::string("\xff\n", 2)}, 256);
  BOOST_TEST(ids == (std::vector<uint32_t>{'a', 'b', 256, 255, '\n', 256}),
             boost::test_tools::per_element());
  require_error([] { byte_level_encode({"x"}, 255); }, {"end-of-document id 255", "collides"});
}

BOOST_AUTO_TEST_CASE(missing_fortune_file_is_an_error_naming_it) {
  TempDir dir;
  require_error([&] { read_fortune_documents(dir.file("nofortune")); }, {"nofortune", "missing"});
}

BOOST_AUTO_TEST_CASE(real_fortunes_file_becomes_a_readable_byte_level_dataset) {
  const std::string fortunes = "/usr/share/games/fortunes/fortunes";
  if (!std::filesystem::exists(fortunes)) {
    BOOST_TEST_MESSAGE("skipped: " << fortunes << " not installed");
    return;
  }
  const std::vector<std::string> docs = read_fortune_documents(fortunes);
  BOOST_TEST(docs.size() > 100u);
  for (const std::string& doc : docs) BOOST_REQUIRE(doc.find("\n%\n") == std::string::npos);
  const std::vector<uint32_t> ids = byte_level_encode(docs, 256);
  TempDir dir;
  write_olmo_raw(dir.file("fortunes.npy"), ids, 2);
  TokenDataset dataset({dir.file("fortunes.npy")}, 128, {TokenFormat::auto_detect, 2, 257});
  BOOST_TEST(dataset.total_tokens() == static_cast<int64_t>(ids.size()));
  BOOST_TEST(dataset.num_windows() == static_cast<int64_t>(ids.size()) / 128);
  std::vector<int32_t> out(128);
  dataset.read_window(dataset.num_windows() - 1, out);
  const std::size_t first = static_cast<std::size_t>(dataset.num_windows() - 1) * 128;
  for (std::size_t t = 0; t < 128; ++t)
    BOOST_REQUIRE_EQUAL(static_cast<uint32_t>(out[t]), ids[first + t]);
}
