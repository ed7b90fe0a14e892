// Token files cannot be misread: the manifest beside tokenize's shards, a .u16/.u32 name and a
// sample of the ids decide how a headerless file is read, and every contradiction with the run's
// settings is refused with one line naming both values. Real files in a temporary folder.
#define BOOST_TEST_MODULE manifest_check
#define BOOST_TEST_DYN_LINK
#include "data/manifest_check.hpp"

#include <boost/test/unit_test.hpp>

#include "data/token_dataset.hpp"
#include "data/token_writer.hpp"
#include "data_test_support.hpp"

using namespace db::data;
using db::data::test::require_error;
using db::data::test::TempDir;
using db::data::test::write_bytes;

namespace {

// Ids of a vocabulary above 65 536 ids, most of them small (as in real text).
std::vector<uint32_t> llama_like_ids(std::size_t count) {
  std::vector<uint32_t> ids(count);
  for (std::size_t i = 0; i < count; ++i) ids[i] = static_cast<uint32_t>((i * 7919 + 13) % 30000);
  ids[5] = 128001;  // end of text
  return ids;
}

// The manifest `depthbench tokenize` writes (only the keys the reader needs, plus one count).
void write_manifest(const TempDir& dir, const std::string& shard, int64_t tokens,
                    const std::string& dtype, const std::string& output_format,
                    int64_t vocab_size = 128256, int64_t eod_id = 128001) {
  write_bytes(dir.file("manifest.ini"),
              "# depthbench tokenize manifest\n[tokenize]\ntokenizer = llama3/tokenizer.json\n"
              "vocab_size = " +
                  std::to_string(vocab_size) + "\neod_id = " + std::to_string(eod_id) +
                  "\ndtype = " + dtype + "\noutput_format = " + output_format +
                  "\n\n[counts]\ndocuments = 1\n\n[shards]\n" + shard + " = " +
                  std::to_string(tokens) + "\n");
}

TokenFileOptions run_settings(int dtype_bytes, int64_t vocab_size) {
  TokenFileOptions options;
  options.raw_dtype_bytes = dtype_bytes;
  options.vocab_size = vocab_size;
  return options;
}

}  // namespace

BOOST_AUTO_TEST_CASE(manifest_dtype_is_used_when_the_run_leaves_dtype_unset) {
  TempDir dir;
  const auto ids = llama_like_ids(3000);
  // An old shard: headerless uint32 named .npy, as tokenize wrote them before.
  write_olmo_raw(dir.file("train_rank000.npy"), ids, 4);
  write_manifest(dir, "train_rank000.npy", 3000, "uint32", "olmo");
  TokenFile file = open_token_file(dir.file("train_rank000.npy"), run_settings(0, 128256));
  BOOST_TEST(file.dtype_bytes() == 4);
  BOOST_TEST(file.num_tokens() == 3000);
  BOOST_TEST(file.token(5) == 128001u);
  // The dataset opens its files the same way.
  TokenDataset dataset({dir.file("train_rank000.npy")}, 100, run_settings(0, 128256));
  BOOST_TEST(dataset.total_tokens() == 3000);
}

BOOST_AUTO_TEST_CASE(a_run_dtype_that_contradicts_the_manifest_is_refused_naming_both) {
  TempDir dir;
  write_olmo_raw(dir.file("train_rank000.npy"), llama_like_ids(3000), 4);
  write_manifest(dir, "train_rank000.npy", 3000, "uint32", "olmo");
  require_error([&] { open_token_file(dir.file("train_rank000.npy"), run_settings(2, 128256)); },
                {"train_rank000.npy", "manifest.ini", "dtype uint32", "data.dtype_bytes = 2"});
}

BOOST_AUTO_TEST_CASE(a_manifest_vocabulary_larger_than_the_model_is_refused_naming_both) {
  TempDir dir;
  write_npy(dir.file("train_rank000.npy"), llama_like_ids(3000), 4);
  write_manifest(dir, "train_rank000.npy", 3000, "uint32", "npy");
  require_error([&] { open_token_file(dir.file("train_rank000.npy"), run_settings(0, 50304)); },
                {"train_rank000.npy", "vocab_size 128256", "model.vocab_size = 50304"});
  // A model with more rows than the tokenizer has ids (padding) is fine.
  BOOST_TEST(open_token_file(dir.file("train_rank000.npy"), run_settings(0, 128512)).num_tokens() ==
             3000);
}

BOOST_AUTO_TEST_CASE(a_shard_whose_size_contradicts_its_manifest_count_is_refused) {
  TempDir dir;
  write_npy(dir.file("val_rank000.npy"), llama_like_ids(2999), 4);
  write_manifest(dir, "val_rank000.npy", 3000, "uint32", "npy");
  require_error([&] { open_token_file(dir.file("val_rank000.npy"), run_settings(0, 128256)); },
                {"val_rank000.npy", "holds 2999 tokens", "lists 3000"});
  // The header's dtype must be the manifest's too.
  write_npy(dir.file("val_rank000.npy"), std::vector<uint32_t>(3000, 7), 2);
  require_error([&] { open_token_file(dir.file("val_rank000.npy"), run_settings(0, 128256)); },
                {"holds uint16 ids", "says uint32"});
}

BOOST_AUTO_TEST_CASE(a_manifest_that_does_not_list_the_file_is_not_applied) {
  TempDir dir;
  write_olmo_raw(dir.file("other.u16"), std::vector<uint32_t>(100, 3), 2);
  write_manifest(dir, "train_rank000.npy", 3000, "uint32", "olmo");
  BOOST_TEST(open_token_file(dir.file("other.u16"), run_settings(0, 257)).dtype_bytes() == 2);
}

BOOST_AUTO_TEST_CASE(u16_and_u32_names_declare_the_dtype_of_headerless_files) {
  TempDir dir;
  const auto ids = llama_like_ids(500);
  write_olmo_raw(dir.file("shard.u32"), ids, 4);
  TokenFile file(dir.file("shard.u32"), run_settings(0, 128256));
  BOOST_TEST(file.dtype_bytes() == 4);
  BOOST_TEST(file.token(5) == 128001u);
  require_error([&] { TokenFile(dir.file("shard.u32"), run_settings(2, 128256)); },
                {"shard.u32", "its name says uint32", "data.dtype_bytes = 2"});
  write_olmo_raw(dir.file("shard.u16"), std::vector<uint32_t>(64, 9), 2);
  BOOST_TEST(TokenFile(dir.file("shard.u16"), run_settings(0, 257)).num_tokens() == 64);
}

BOOST_AUTO_TEST_CASE(uint32_ids_read_as_uint16_are_refused_by_their_zero_high_halves) {
  TempDir dir;
  // No manifest, no telling name, the default dtype: every second uint16 is 0.
  write_olmo_raw(dir.file("old.npy"), llama_like_ids(3000), 4);
  require_error([&] { TokenFile(dir.file("old.npy"), run_settings(0, 128256)); },
                {"old.npy", "every second id", "uint32 file"});
  // Real uint16 text never looks like that, even with many small ids.
  std::vector<uint32_t> small(3000);
  for (std::size_t i = 0; i < small.size(); ++i) small[i] = i % 3 == 0 ? 0 : 200 + i % 50;
  write_olmo_raw(dir.file("fine.npy"), small, 2);
  BOOST_TEST(TokenFile(dir.file("fine.npy"), run_settings(0, 257)).num_tokens() == 3000);
}

BOOST_AUTO_TEST_CASE(uint16_ids_read_as_uint32_or_a_cut_file_are_refused_with_the_reason) {
  TempDir dir;
  write_olmo_raw(dir.file("text.npy"), std::vector<uint32_t>(1000, 300), 2);
  require_error([&] { TokenFile(dir.file("text.npy"), run_settings(4, 50304)); },
                {"text.npy", ">= vocab_size 50304", "a uint16 file read as uint32"});
  write_bytes(dir.file("cut.u32"), std::string(4 * 100 + 2, '\1'));
  require_error([&] { TokenFile(dir.file("cut.u32"), run_settings(0, 50304)); },
                {"cut.u32", "not a multiple of the 4-byte uint32 dtype"});
}

BOOST_AUTO_TEST_CASE(training_and_validation_shards_of_two_tokenizers_are_refused) {
  TempDir train_dir, val_dir, same_dir;
  write_npy(train_dir.file("train_rank000.npy"), llama_like_ids(100), 4);
  write_manifest(train_dir, "train_rank000.npy", 100, "uint32", "npy");
  write_npy(val_dir.file("val_rank000.npy"), llama_like_ids(100), 4);
  write_manifest(val_dir, "val_rank000.npy", 100, "uint32", "npy", 151669, 151643);
  require_error(
      [&] {
        require_one_tokenization(
            {train_dir.file("train_rank000.npy"), val_dir.file("val_rank000.npy")});
      },
      {"two tokenizations", "vocab_size 128256", "vocab_size 151669"});
  write_npy(same_dir.file("val_rank000.npy"), llama_like_ids(100), 4);
  write_manifest(same_dir, "val_rank000.npy", 100, "uint32", "npy");
  require_one_tokenization({train_dir.file("train_rank000.npy"), same_dir.file("val_rank000.npy")});
}
