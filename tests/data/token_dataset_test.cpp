// A dataset concatenates its files and cuts contiguous windows (doc/data.md): windows
// span file boundaries, the remainder is dropped, and formats may be mixed.
#define BOOST_TEST_MODULE token_dataset
#define BOOST_TEST_DYN_LINK
#include "data/token_dataset.hpp"

#include <boost/test/unit_test.hpp>
#include <numeric>

#include "data/token_writer.hpp"
#include "data_test_support.hpp"

using namespace db::data;
using db::data::test::require_error;
using db::data::test::TempDir;

namespace {

// Files of 5, 7 and 4 tokens holding the global ids 0..15 (each token equals its position in
// the concatenation), written in three different formats.
std::vector<std::string> write_three_files(const TempDir& dir) {
  std::vector<uint32_t> all(16);
  std::iota(all.begin(), all.end(), 100u);
  const std::span<const uint32_t> ids(all);
  write_olmo_raw(dir.file("part0.npy"), ids.subspan(0, 5), 2);
  write_npy(dir.file("part1.npy"), ids.subspan(5, 7), 4);
  write_llmc_bin(dir.file("part2.bin"), ids.subspan(12, 4), 2);
  return {dir.file("part0.npy"), dir.file("part1.npy"), dir.file("part2.bin")};
}

std::vector<int32_t> window(const TokenDataset& dataset, int64_t index) {
  std::vector<int32_t> out(static_cast<std::size_t>(dataset.window_tokens()));
  dataset.read_window(index, out);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(windows_are_contiguous_span_file_boundaries_and_drop_the_remainder) {
  TempDir dir;
  const std::vector<std::string> paths = write_three_files(dir);
  TokenDataset dataset(paths, 3, {TokenFormat::auto_detect, 2, 200});
  BOOST_TEST(dataset.total_tokens() == 16);
  BOOST_TEST(dataset.num_windows() == 5);  // 16 = 5·3 + 1 dropped
  BOOST_TEST(dataset.files() == paths, boost::test_tools::per_element());
  BOOST_TEST(dataset.num_files() == 3u);
  BOOST_TEST(dataset.file(1).num_tokens() == 7);
  for (int64_t w = 0; w < dataset.num_windows(); ++w) {
    const std::vector<int32_t> got = window(dataset, w);
    for (int64_t t = 0; t < 3; ++t) BOOST_TEST(got[t] == 100 + 3 * w + t);
  }
  // Window 1 = tokens 3..5 crosses part0|part1; window 3 = 9..11 ends exactly at part1's end;
  // window 4 = 12..14 lies in part2 and token 15 is the dropped remainder.
  BOOST_TEST(window(dataset, 1) == (std::vector<int32_t>{103, 104, 105}),
             boost::test_tools::per_element());
  BOOST_TEST(window(dataset, 4) == (std::vector<int32_t>{112, 113, 114}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_window_can_span_more_than_two_files) {
  TempDir dir;
  TokenDataset dataset(write_three_files(dir), 14, {});
  BOOST_TEST(dataset.num_windows() == 1);
  const std::vector<int32_t> got = window(dataset, 0);  // 5 from part0, 7 from part1, 2 from part2
  for (int t = 0; t < 14; ++t) BOOST_TEST(got[t] == 100 + t);
}

BOOST_AUTO_TEST_CASE(window_of_exactly_all_tokens_has_no_remainder) {
  TempDir dir;
  TokenDataset dataset(write_three_files(dir), 16, {});
  BOOST_TEST(dataset.num_windows() == 1);
  BOOST_TEST(window(dataset, 0).back() == 115);
}

BOOST_AUTO_TEST_CASE(a_bad_file_in_the_list_stops_the_dataset_naming_that_file) {
  TempDir dir;
  std::vector<std::string> paths = write_three_files(dir);
  paths.push_back(dir.file("missing.npy"));
  require_error([&] { TokenDataset(paths, 3, {}); }, {"missing.npy", "missing"});
  // Vocabulary is checked in every file: part1 holds ids up to 111.
  require_error(
      [&] {
        TokenDataset(write_three_files(dir), 3, {TokenFormat::auto_detect, 2, 110});
      },
      {"part1.npy", "token id 110 at index 5"});
}

BOOST_AUTO_TEST_CASE(dataset_errors_for_empty_lists_short_data_and_bad_requests) {
  TempDir dir;
  const std::vector<std::string> paths = write_three_files(dir);
  require_error([&] { TokenDataset({}, 3, {}); }, {"no files"});
  require_error([&] { TokenDataset(paths, 0, {}); }, {"window"});
  require_error([&] { TokenDataset(paths, 17, {}); }, {"part0.npy", "fewer than one window"});
  TokenDataset dataset(paths, 4, {});
  std::vector<int32_t> out(4), wrong(3);
  require_error([&] { dataset.read_window(4, out); }, {"window 4 out of range"});
  require_error([&] { dataset.read_window(-1, out); }, {"out of range"});
  require_error([&] { dataset.read_window(0, wrong); }, {"output of 3 tokens"});
}
