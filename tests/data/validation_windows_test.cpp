// Validation windows are spread evenly over the held-out set (doc/data.md, "Validation windows"):
// the stride reaches the last file, the choice depends on the counts only, and the coverage
// counts the documents whose targets the windows score.
#define BOOST_TEST_MODULE validation_windows
#define BOOST_TEST_DYN_LINK
#include "data/validation_windows.hpp"

#include <boost/test/unit_test.hpp>

#include "data/token_writer.hpp"
#include "data_test_support.hpp"

using namespace db::data;
using db::data::test::TempDir;

BOOST_AUTO_TEST_CASE(windows_are_spread_by_a_fixed_stride_over_all_windows) {
  BOOST_TEST(validation_windows(100, 4) == (std::vector<int64_t>{0, 25, 50, 75}),
             boost::test_tools::per_element());
  BOOST_TEST(validation_windows(10, 3) == (std::vector<int64_t>{0, 3, 6}),
             boost::test_tools::per_element());
  // Not the first n: the last quarter of the set is reached.
  const std::vector<int64_t> w = validation_windows(1000, 32);
  BOOST_TEST(w.size() == 32u);
  BOOST_TEST(w.back() == 31 * 1000 / 32);
  for (size_t k = 1; k < w.size(); ++k) BOOST_TEST(w[k] - w[k - 1] >= 31);
  // Asking for more than there are gives every window once.
  BOOST_TEST(validation_windows(5, 32) == (std::vector<int64_t>{0, 1, 2, 3, 4}),
             boost::test_tools::per_element());
  // The same counts always give the same windows (every run of a suite, and eval).
  BOOST_TEST(validation_windows(123457, 512) == validation_windows(123457, 512));
  BOOST_CHECK_THROW(validation_windows(0, 4), db::Error);
  BOOST_CHECK_THROW(validation_windows(4, 0), db::Error);
}

BOOST_AUTO_TEST_CASE(coverage_counts_tokens_and_the_documents_of_scored_targets) {
  TempDir dir;
  // Two files, 10 documents of 4 tokens each (3 text ids then the end-of-document id 9): 40
  // tokens, then a last document of 2 tokens without its end-of-document id.
  std::vector<uint32_t> ids;
  for (int d = 0; d < 10; ++d) ids.insert(ids.end(), {1, 2, 3, 9});
  ids.insert(ids.end(), {4, 5});
  const std::span<const uint32_t> all(ids);
  write_npy(dir.file("val_0.npy"), all.subspan(0, 20), 2);
  write_npy(dir.file("val_1.npy"), all.subspan(20), 2);
  const TokenDataset data({dir.file("val_0.npy"), dir.file("val_1.npy")}, 8, {});
  BOOST_TEST(data.num_windows() == 5);
  // Windows 0 and 2 (of 5, n = 2: ⌊0⌋, ⌊5/2⌋ = 2): tokens 0–7 and 16–23. Window 0's targets
  // (tokens 1–7) are documents 0 and 1; window 2's (17–23) documents 4 and 5.
  const std::vector<int64_t> windows = validation_windows(data.num_windows(), 2);
  BOOST_TEST(windows == (std::vector<int64_t>{0, 2}), boost::test_tools::per_element());
  const ValidationCoverage c = validation_coverage(data, windows, 9);
  BOOST_TEST(c.windows == 2);
  BOOST_TEST(c.tokens == 16);
  BOOST_TEST(c.documents == 4);
  BOOST_TEST(c.held_out_tokens == 42);
  BOOST_TEST(c.held_out_documents == 11);  // the unterminated tail counts
  // Adjacent windows sharing a document count it once: windows 0 and 1 (tokens 0–15) cover
  // documents 0 … 3.
  BOOST_TEST(validation_coverage(data, {0, 1}, 9).documents == 4);
  // Without an end-of-document id, documents are unknown.
  BOOST_TEST(validation_coverage(data, windows, -1).documents == -1);
  // 4 documents of 11 is thin (fewer than 20): a warning that says how to fix it.
  const std::string warning = thin_validation_warning(c);
  BOOST_TEST(warning.find("4 of 11 documents") != std::string::npos, warning);
  BOOST_TEST(warning.find("train.val_windows") != std::string::npos, warning);
  ValidationCoverage plenty = c;
  plenty.documents = 500;
  plenty.tokens = plenty.held_out_tokens / 10;
  BOOST_TEST(thin_validation_warning(plenty).empty());
}
