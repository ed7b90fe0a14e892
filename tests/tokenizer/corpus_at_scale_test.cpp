// Corpus preparation at scale (issue 14, item 3) on one MPI rank: directories and `**`
// patterns, .gz/.zst input made by the real gzip and zstd tools, shards of --shard-tokens,
// llm.c output read back by the trainer's reader, --bos, the seeded split, identical output for
// any thread count, and corrupt compressed input refused. Ranks: tests/tokenizer/mpi_shards.sh.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE corpus at scale
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/token_dataset.hpp"
#include "tokenize_test_support.hpp"
#include "tokenizer/corpus_progress.hpp"
#include "tokenizer/input_files.hpp"
#include "tokenizer/work_plan.hpp"
#include "util/text_file.hpp"

using namespace db::tokenizer::test;

namespace {

void shell(const std::string& command) {
  BOOST_REQUIRE_MESSAGE(std::system(command.c_str()) == 0, command);
}

// Documents of varied length, some non-ASCII, as JSONL lines with an extra member.
std::string jsonl_documents(int file, int count) {
  std::string text;
  for (int i = 0; i < count; ++i)
    text += "{\"id\": " + std::to_string(i) + ", \"text\": \"file " + std::to_string(file) +
            " doc " + std::to_string(i) + " " + std::string(size_t(i % 23), 'x') +
            " caf\\u00e9\"}\n";
  return text;
}

// a/one.jsonl, a/b/two.jsonl.gz, a/b/c/three.jsonl.zst, a/.hidden.jsonl (skipped), and the
// plain text of all three documents for comparison.
fs::path make_corpus(const std::string& name) {
  fs::path dir = scratch(name);
  write(dir / "a" / "one.jsonl", jsonl_documents(1, 150));
  write(dir / "a" / "b" / "two.jsonl", jsonl_documents(2, 200));
  write(dir / "a" / "b" / "c" / "three.jsonl", jsonl_documents(3, 250));
  write(dir / "a" / ".hidden.jsonl", jsonl_documents(4, 10));
  shell("gzip -n " + (dir / "a" / "b" / "two.jsonl").string());
  shell("zstd -q --rm " + (dir / "a" / "b" / "c" / "three.jsonl").string());
  return dir;
}

std::vector<std::string> names_of(const std::vector<db::tokenizer::InputFile>& files) {
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.name);
  return names;
}

// Every shard of `split` in `out`, concatenated in name order, and their sizes.
Ids concatenated(const fs::path& out, const std::string& split, std::vector<size_t>* sizes,
                 int dtype_bytes = 2) {
  std::vector<fs::path> shards;
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.path().filename().string().starts_with(split + "_")) shards.push_back(entry.path());
  std::sort(shards.begin(), shards.end());
  Ids all;
  for (const fs::path& shard : shards) {
    Ids ids = read_ids(shard, dtype_bytes);
    if (sizes) sizes->push_back(ids.size());
    all.insert(all.end(), ids.begin(), ids.end());
  }
  return all;
}

std::string file_text(const fs::path& path) {
  return db::read_text_file(path.string());
}

}  // namespace

BOOST_GLOBAL_FIXTURE(MpiFixture);

BOOST_AUTO_TEST_CASE(directories_and_double_star_patterns_find_every_file_sorted) {
  fs::path dir = make_corpus("inputs");
  using db::tokenizer::expand_inputs;
  const std::vector<std::string> all = {"b/c/three.jsonl.zst", "b/two.jsonl.gz", "one.jsonl"};
  BOOST_TEST(names_of(expand_inputs({(dir / "a").string()})) == all);
  BOOST_TEST(names_of(expand_inputs({(dir / "a" / "**" / "*.jsonl*").string()})) == all);
  BOOST_TEST(names_of(expand_inputs({(dir / "a" / "*" / "*.gz").string()})) ==
             std::vector<std::string>{"b/two.jsonl.gz"});
  BOOST_TEST(names_of(expand_inputs({(dir / "a" / "**" / "*.zst").string()})) ==
             std::vector<std::string>{"b/c/three.jsonl.zst"});
  // The same file twice (a directory and a pattern inside it) is read once.
  BOOST_TEST(expand_inputs({(dir / "a").string(), (dir / "a" / "one.jsonl").string()}).size() ==
             3u);
  // A named hidden file is taken; a pattern matching nothing is an error naming it.
  BOOST_TEST(expand_inputs({(dir / "a" / ".hidden.jsonl").string()}).size() == 1u);
  BOOST_CHECK_EXCEPTION(
      expand_inputs({(dir / "**" / "*.parquet").string()}), db::Error, [](const db::Error& e) {
        return std::string(e.what()).find("*.parquet' matches no file") != std::string::npos;
      });
}

BOOST_AUTO_TEST_CASE(gzip_and_zstd_input_gives_the_ids_of_the_plain_text) {
  fs::path dir = make_corpus("compressed");
  // The same documents uncompressed, one file each, in the same order as the sorted names.
  write(dir / "plain" / "1.jsonl", jsonl_documents(3, 250));
  write(dir / "plain" / "2.jsonl", jsonl_documents(2, 200));
  write(dir / "plain" / "3.jsonl", jsonl_documents(1, 150));
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "a").string(), "--out",
                  (dir / "out").string()}) == 0);
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "plain").string(), "--out",
                  (dir / "out_plain").string()}) == 0);
  BOOST_TEST(file_text(dir / "out" / "train_000000.npy") ==
             file_text(dir / "out_plain" / "train_000000.npy"));
  auto m = read_manifest(dir / "out" / "manifest.ini");
  BOOST_TEST(m["documents"] == "600");
  BOOST_TEST(m["input_format"] == "jsonl");
  // gzip members one after the other are one stream, as gzip -d reads them.
  shell("cd " + dir.string() + " && gzip -nc plain/1.jsonl > two.jsonl.gz && gzip -nc " +
        "plain/2.jsonl >> two.jsonl.gz");
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "two.jsonl.gz").string(), "--out",
                  (dir / "out_members").string()}) == 0);
  BOOST_TEST(read_manifest(dir / "out_members" / "manifest.ini")["documents"] == "450");
}

BOOST_AUTO_TEST_CASE(corrupt_or_truncated_compressed_input_is_refused_naming_the_file) {
  fs::path dir = make_corpus("corrupt");
  const std::string gz = file_text(dir / "a" / "b" / "two.jsonl.gz");
  std::string flipped = gz;
  for (size_t i = 40; i < 60; ++i) flipped[i] = char(flipped[i] ^ 0x5A);
  write(dir / "bad" / "flipped.jsonl.gz", flipped);
  write(dir / "bad" / "cut.jsonl.gz", gz.substr(0, gz.size() / 2));
  const std::string zst = file_text(dir / "a" / "b" / "c" / "three.jsonl.zst");
  write(dir / "bad" / "cut.jsonl.zst", zst.substr(0, zst.size() - 7));
  for (const std::string name : {"flipped.jsonl.gz", "cut.jsonl.gz", "cut.jsonl.zst"}) {
    const fs::path out = dir / ("out_" + name);
    write(out / "train_000000.npy", "an old shard");  // must not survive as if complete
    try {
      run({"--tokenizer", "bytes", "--input", (dir / "a").string(), (dir / "bad" / name).string(),
           "--out", out.string()});
      BOOST_ERROR("accepted " + name);
    } catch (const db::Error& e) {
      const std::string message = e.what();
      BOOST_TEST_INFO(message);
      BOOST_TEST(message.find(name) != std::string::npos);
      BOOST_TEST((message.find("corrupt") != std::string::npos ||
                  message.find("truncated") != std::string::npos));
    }
    BOOST_TEST(!fs::exists(out / "manifest.ini"));
    BOOST_TEST(fs::is_empty(out));  // no shard, no spool, no .tmp
  }
}

BOOST_AUTO_TEST_CASE(shards_hold_at_most_shard_tokens_and_concatenate_to_the_corpus) {
  fs::path dir = make_corpus("shards");
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "a").string(), "--val-fraction", "0.1",
                  "--out", (dir / "whole").string()}) == 0);
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "a").string(), "--val-fraction", "0.1",
                  "--shard-tokens", "4000", "--out", (dir / "cut").string()}) == 0);
  std::vector<size_t> sizes, val_sizes;
  const Ids whole = read_u16(dir / "whole" / "train_000000.npy");
  BOOST_TEST(concatenated(dir / "cut", "train", &sizes) == whole);
  BOOST_TEST(sizes.size() == (whole.size() + 3999) / 4000);
  for (size_t i = 0; i + 1 < sizes.size(); ++i) BOOST_TEST(sizes[i] == 4000u);
  BOOST_TEST(concatenated(dir / "cut", "val", &val_sizes) ==
             read_u16(dir / "whole" / "val_000000.npy"));
  auto m = read_manifest(dir / "cut" / "manifest.ini");
  BOOST_TEST(m["train_000000.npy"] == "4000");
  BOOST_TEST(m["train_" + std::string(6 - std::to_string(sizes.size() - 1).size(), '0') +
               std::to_string(sizes.size() - 1) + ".npy"] == std::to_string(sizes.back()));
  BOOST_TEST(m["shard_tokens"] == "4000");
}

BOOST_AUTO_TEST_CASE(output_is_identical_for_any_thread_count) {
  fs::path dir = make_corpus("threads");
  // Enough text for several batches per thread.
  std::string big;
  for (int f = 0; f < 8; ++f) big += jsonl_documents(f, 1500);
  write(dir / "a" / "big.jsonl", big);
  for (const std::string threads : {"1", "3"})
    BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "a").string(), "--val-fraction",
                    "0.2", "--shard-tokens", "50000", "--threads", threads, "--out",
                    (dir / ("t" + threads)).string()}) == 0);
  for (const std::string split : {"train", "val"}) {
    std::vector<size_t> one, three;
    BOOST_TEST(concatenated(dir / "t1", split, &one) == concatenated(dir / "t3", split, &three));
    BOOST_TEST(one == three);
  }
  BOOST_TEST(read_manifest(dir / "t3" / "manifest.ini")["threads"] == "3");
}

BOOST_AUTO_TEST_CASE(seeded_split_is_reproduced_and_another_seed_changes_it) {
  fs::path dir = make_corpus("seed");
  auto split = [&](const std::string& seed, const std::string& out, const std::string& shard) {
    BOOST_TEST(
        run({"--tokenizer", "bytes", "--input", (dir / "a").string(), "--val-fraction", "0.2",
             "--seed", seed, "--shard-tokens", shard, "--out", (dir / out).string()}) == 0);
    return concatenated(dir / out, "val", nullptr);
  };
  const Ids seven = split("7", "s7", "0");
  BOOST_TEST(!seven.empty());
  BOOST_TEST(split("7", "s7_again", "1000") == seven);  // shard size does not change it
  BOOST_TEST(split("8", "s8", "0") != seven);
  BOOST_TEST(read_manifest(dir / "s7" / "manifest.ini")["seed"] == "7");
}

BOOST_AUTO_TEST_CASE(llmc_shards_are_read_back_by_the_trainers_reader) {
  fs::path dir = make_corpus("llmc");
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "a").string(), "--out",
                  (dir / "npy").string()}) == 0);
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "a").string(), "--output-format",
                  "llmc", "--shard-tokens", "5000", "--out", (dir / "llmc").string()}) == 0);
  const Ids expected = read_u16(dir / "npy" / "train_000000.npy");
  std::vector<std::string> shards;
  for (size_t i = 0; fs::exists(dir / "llmc" / ("train_00000" + std::to_string(i) + ".bin")); ++i)
    shards.push_back((dir / "llmc" / ("train_00000" + std::to_string(i) + ".bin")).string());
  BOOST_TEST(shards.size() == (expected.size() + 4999) / 5000);
  db::data::TokenFileOptions options;  // auto: the llm.c magic and the manifest say it all
  options.vocab_size = 257;
  db::data::TokenDataset dataset(shards, 64, options);
  BOOST_REQUIRE(dataset.total_tokens() == int64_t(expected.size()));
  std::vector<int32_t> window(64);
  for (int64_t w : {int64_t(0), dataset.num_windows() / 2, dataset.num_windows() - 1}) {
    dataset.read_window(w, window);
    for (size_t i = 0; i < window.size(); ++i)
      BOOST_TEST(uint32_t(window[i]) == expected[size_t(w) * 64 + i]);
  }
  BOOST_TEST(read_manifest(dir / "llmc" / "manifest.ini")["output_format"] == "llmc");
}

BOOST_AUTO_TEST_CASE(bos_comes_from_the_post_processor_or_the_option_and_is_refused_without) {
  fs::path dir = scratch("bos");
  write(dir / "d.jsonl", "{\"text\": \"ab\"}\n{\"text\": \"c\"}\n");
  const std::string input = (dir / "d.jsonl").string();
  // The byte vocabulary has no beginning-of-sequence token: --bos alone is refused.
  try {
    run({"--tokenizer", "bytes", "--input", input, "--bos", "--out", (dir / "none").string()});
    BOOST_ERROR("--bos accepted without a BOS token");
  } catch (const db::Error& e) {
    BOOST_TEST(std::string(e.what()).find("has no beginning-of-sequence token") !=
               std::string::npos);
  }
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", input, "--bos-id", "2", "--out",
                  (dir / "id").string()}) == 0);
  BOOST_TEST(read_u16(dir / "id" / "train_000000.npy") == (Ids{2, 'a', 'b', 256, 2, 'c', 256}));
  BOOST_TEST(read_manifest(dir / "id" / "manifest.ini")["bos_id"] == "2");
  // A tokenizer.json whose post-processor puts <|padding|> (id 1) before a text, as Llama-3's
  // puts <|begin_of_text|>.
  std::string json =
      file_text(DEPTHBENCH_SOURCE_DIR "/tests/tokenizer/fixtures/neox_tiny_tokenizer.json");
  const std::string byte_level = "\"post_processor\": {\n  \"type\": \"ByteLevel\"";
  const size_t at = json.find(byte_level);
  BOOST_REQUIRE(at != std::string::npos);
  json.replace(at, byte_level.size(),
               "\"post_processor\": {\"type\": \"Sequence\", \"processors\": [{\"type\": "
               "\"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<|padding|>\", "
               "\"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [], "
               "\"special_tokens\": {}}, {\"type\": \"ByteLevel\"");
  const size_t close = json.find("},", json.find("use_regex", at));
  json.insert(close + 1, "]}");
  write(dir / "tokenizer.json", json);
  BOOST_TEST(run({"--tokenizer", (dir / "tokenizer.json").string(), "--input", input, "--bos",
                  "--out", (dir / "hf").string()}) == 0);
  const Ids ids = read_u16(dir / "hf" / "train_000000.npy");
  BOOST_TEST(ids.front() == 1u);
  BOOST_TEST(read_manifest(dir / "hf" / "manifest.ini")["bos_id"] == "1");
  // A post-processor that names none: the tokenizer_config.json beside the file does.
  fs::create_directories(dir / "config");
  fs::copy_file(DEPTHBENCH_SOURCE_DIR "/tests/tokenizer/fixtures/neox_tiny_tokenizer.json",
                dir / "config" / "tokenizer.json");
  write(dir / "config" / "tokenizer_config.json",
        "{\"bos_token\": {\"content\": \"<|padding|>\", \"lstrip\": false}}");
  BOOST_TEST(run({"--tokenizer", (dir / "config" / "tokenizer.json").string(), "--input", input,
                  "--bos", "--out", (dir / "from_config").string()}) == 0);
  BOOST_TEST(read_u16(dir / "from_config" / "train_000000.npy").front() == 1u);
  write(dir / "config" / "tokenizer_config.json",
        "{\"add_bos_token\": false, \"bos_token\": \"<|padding|>\"}");
  BOOST_CHECK_THROW(run({"--tokenizer", (dir / "config" / "tokenizer.json").string(), "--input",
                         input, "--bos", "--out", (dir / "off").string()}),
                    db::Error);
}

BOOST_AUTO_TEST_CASE(ranks_share_the_bytes_in_input_order_and_every_line_has_one_owner) {
  using db::tokenizer::kWholeFile;
  // Two plain JSONL files (cut anywhere) around three whole files (compressed or text).
  const std::vector<int64_t> bytes = {1000, 300, 2000, 0, 700};
  const std::vector<bool> splittable = {true, false, true, false, false};
  for (int ranks = 1; ranks <= 5; ++ranks) {
    std::vector<int64_t> covered(bytes.size(), 0);
    std::vector<int> whole_owners(bytes.size(), 0);
    std::size_t last_file = 0;
    for (int rank = 0; rank < ranks; ++rank) {
      for (const auto& item : db::tokenizer::plan_work(bytes, splittable, rank, ranks)) {
        BOOST_TEST(item.file >= last_file);  // rank after rank, the files stay in input order
        last_file = item.file;
        if (item.end == kWholeFile) {
          ++whole_owners[item.file];
        } else {
          BOOST_TEST(item.begin == covered[item.file]);  // consecutive ranges, no gap
          covered[item.file] = item.end;
        }
      }
    }
    for (std::size_t f = 0; f < bytes.size(); ++f) {
      if (splittable[f])
        BOOST_TEST(covered[f] == bytes[f]);
      else
        BOOST_TEST(whole_owners[f] == 1);
    }
  }
}

BOOST_AUTO_TEST_CASE(progress_line_gives_share_done_rate_and_eta) {
  std::FILE* sink = std::tmpfile();
  db::tokenizer::CorpusProgress progress(sink, 2'000'000, 4);
  const std::string line = progress.line(500'000, 1'234'567);
  BOOST_TEST_INFO(line);
  BOOST_TEST(line.find("tokenize: 25.0% of 2.0MB (rank 0's share of 4), 1.2M tokens") == 0u);
  BOOST_TEST(line.find("tokens/s") != std::string::npos);
  BOOST_TEST(line.find("ETA ") != std::string::npos);
  BOOST_TEST(progress.line(2'000'000, 5'000'000).find("ETA") == std::string::npos);  // done
  std::fclose(sink);
}
