// `depthbench tokenize` end to end through db::app::run_tokenize_command on one MPI rank.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE tokenize command
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/token_dataset.hpp"
#include "tokenize_test_support.hpp"
#include "tokenizer/corpus.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/validation_split.hpp"
#include "util/text_file.hpp"

using namespace db::tokenizer::test;

BOOST_GLOBAL_FIXTURE(MpiFixture);

BOOST_AUTO_TEST_CASE(jsonl_bad_lines_are_counted_and_good_documents_written_with_eod) {
  fs::path dir = scratch("jsonl");
  write(dir / "a.jsonl",
        "{\"text\": \"ab\", \"id\": 1}\n"
        "{\"text\": \"c\\u00e9\\ud83d\\ude00\"}\n"
        "not json at all\n"
        "{\"text\": \"unterminated}\n"
        "\n"
        "[1, 2]\n"
        "{\"body\": \"no text field\"}\n"
        "{\"text\": 42}\n"
        "{\"text\": \"\"}\n"
        "{\"text\": \"bad \xFF byte\"}\n"
        "{\"text\": \"last line without newline\"}");
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "*.jsonl").string(), "--out",
                  (dir / "out").string()}) == 0);
  auto m = read_manifest(dir / "out" / "manifest.ini");
  BOOST_TEST(m["documents"] == "4");
  BOOST_TEST(m["malformed_json"] == "2");
  BOOST_TEST(m["not_an_object"] == "1");
  BOOST_TEST(m["missing_field"] == "1");
  BOOST_TEST(m["field_not_string"] == "1");
  BOOST_TEST(m["empty_documents"] == "1");
  BOOST_TEST(m["invalid_utf8_repaired"] == "1");
  BOOST_TEST(m["vocab_size"] == "257");
  BOOST_TEST(m["eod_id"] == "256");
  BOOST_TEST(m["dtype"] == "uint16");
  Ids expected;
  for (std::string doc :
       {std::string("ab"), std::string("c\xC3\xA9\xF0\x9F\x98\x80"),
        std::string("bad \xEF\xBF\xBD byte"), std::string("last line without newline")}) {
    Ids ids = bytes_then_eod(doc);
    expected.insert(expected.end(), ids.begin(), ids.end());
  }
  BOOST_TEST(read_u16(dir / "out" / "train_000000.npy") == expected);
  BOOST_TEST(m["tokens_train"] == std::to_string(expected.size()));
  BOOST_TEST(!fs::exists(dir / "out" / "train_000000.npy.tmp"));
}

BOOST_AUTO_TEST_CASE(fortunes_documents_split_on_percent_lines_and_npy_has_a_numpy_header) {
  fs::path dir = scratch("fortunes");
  write(dir / "f", "one\ntwo\n%\nthree\n%\n%\nfour");
  // npy is the default output format.
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "f").string(), "--format", "fortunes",
                  "--out", (dir / "out").string()}) == 0);
  std::string file = db::read_text_file((dir / "out" / "train_000000.npy").string());
  BOOST_TEST(file.substr(0, 6) == "\x93NUMPY");
  BOOST_TEST(file.find("'descr': '<u2'") != std::string::npos);
  Ids expected;
  for (std::string doc : {"one\ntwo\n", "three\n", "four"}) {
    Ids ids = bytes_then_eod(doc);
    expected.insert(expected.end(), ids.begin(), ids.end());
  }
  BOOST_TEST(file.find("'shape': (" + std::to_string(expected.size()) + ",)") != std::string::npos);
  BOOST_TEST(read_u16(dir / "out" / "train_000000.npy") == expected);
}

BOOST_AUTO_TEST_CASE(text_with_blank_line_separator_and_validation_split_partitions_documents) {
  fs::path dir = scratch("val");
  std::string text;
  for (int i = 0; i < 400; ++i) text += "paragraph " + std::to_string(i) + "\nline two\n\n";
  write(dir / "t.txt", text);
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "t.txt").string(), "--doc-separator",
                  "blank-line", "--val-fraction", "0.1", "--out", (dir / "out").string()}) == 0);
  auto m = read_manifest(dir / "out" / "manifest.ini");
  BOOST_TEST(m["documents"] == "400");
  int val = std::stoi(m["documents_val"]), train = std::stoi(m["documents_train"]);
  BOOST_TEST(val + train == 400);
  BOOST_TEST(val > 20);  // about 40 expected
  BOOST_TEST(val < 70);
  Ids t = read_u16(dir / "out" / "train_000000.npy"), v = read_u16(dir / "out" / "val_000000.npy");
  BOOST_TEST(t.size() + v.size() == text.size());  // each blank line dropped, one eod added
  // Deterministic: the same run chooses the same documents.
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "t.txt").string(), "--doc-separator",
                  "blank-line", "--val-fraction", "0.1", "--out", (dir / "out2").string()}) == 0);
  BOOST_TEST(read_u16(dir / "out2" / "val_000000.npy") == v);
}

BOOST_AUTO_TEST_CASE(hf_tokenizer_json_drives_the_command_and_picks_its_eod) {
  fs::path dir = scratch("hf");
  write(dir / "d.jsonl", "{\"content\": \"hello the\"}\n");
  std::string fixture = DEPTHBENCH_SOURCE_DIR "/tests/tokenizer/fixtures/neox_tiny_tokenizer.json";
  BOOST_TEST(run({"--tokenizer", fixture, "--input", (dir / "d.jsonl").string(), "--text-field",
                  "content", "--out", (dir / "out").string()}) == 0);
  BOOST_TEST(read_u16(dir / "out" / "train_000000.npy") == (Ids{263, 260, 0}));
  BOOST_TEST(run({"--tokenizer", fixture, "--input", (dir / "d.jsonl").string(), "--text-field",
                  "content", "--eod-token", "<|padding|>", "--dtype", "uint32", "--out",
                  (dir / "out32").string()}) == 0);
  std::string npy = db::read_text_file((dir / "out32" / "train_000000.npy").string());
  BOOST_TEST(npy.find("'descr': '<u4'") != std::string::npos);
  BOOST_TEST(npy.size() == 128u + 12u);
  BOOST_TEST(static_cast<unsigned char>(npy[128 + 8]) == 1u);
}

BOOST_AUTO_TEST_CASE(headerless_shards_are_named_by_their_dtype_never_npy) {
  fs::path dir = scratch("olmo");
  write(dir / "t.txt", "abc");
  for (std::string dtype : {"uint16", "uint32"}) {
    fs::path out = dir / dtype;
    BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "t.txt").string(), "--output-format",
                    "olmo", "--dtype", dtype, "--out", out.string()}) == 0);
    std::string name = dtype == "uint16" ? "train_000000.u16" : "train_000000.u32";
    BOOST_TEST(fs::file_size(out / name) == (dtype == "uint16" ? 8u : 16u));
    BOOST_TEST(!fs::exists(out / "train_000000.npy"));
    auto m = read_manifest(out / "manifest.ini");
    BOOST_TEST(m[name] == "4");
    BOOST_TEST(m["output_format"] == "olmo");
  }
  // A later run in npy removes the headerless shards it replaces.
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "t.txt").string(), "--out",
                  (dir / "uint16").string()}) == 0);
  BOOST_TEST(!fs::exists(dir / "uint16" / "train_000000.u16"));
  BOOST_TEST(fs::exists(dir / "uint16" / "train_000000.npy"));
}

BOOST_AUTO_TEST_CASE(the_reader_takes_the_dtype_from_the_manifest_and_refuses_a_contradiction) {
  // The issue's case: uint32 shards (as a vocabulary above 65 536 ids gets) read by a run that
  // leaves data.dtype_bytes at its default, and by one that says 2.
  fs::path dir = scratch("manifest");
  std::string text(3000, 'x');
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>('a' + i % 26);
  write(dir / "t.txt", text);
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "t.txt").string(), "--output-format",
                  "olmo", "--dtype", "uint32", "--out", (dir / "out").string()}) == 0);
  // Renamed the way older versions named headerless shards: only the manifest tells the dtype.
  fs::rename(dir / "out" / "train_000000.u32", dir / "out" / "train_000000.npy");
  std::string manifest = db::read_text_file((dir / "out" / "manifest.ini").string());
  manifest.replace(manifest.find("train_000000.u32"), 16, "train_000000.npy");
  write(dir / "out" / "manifest.ini", manifest);
  const std::string shard = (dir / "out" / "train_000000.npy").string();
  db::data::TokenFileOptions defaults;
  defaults.vocab_size = 257;
  db::data::TokenDataset dataset({shard}, 100, defaults);
  std::vector<int32_t> window(100);
  dataset.read_window(0, window);
  BOOST_TEST(window[0] == 'a');
  BOOST_TEST(window[1] == 'b');
  BOOST_TEST(dataset.total_tokens() == 3001);
  db::data::TokenFileOptions two_bytes = defaults;
  two_bytes.raw_dtype_bytes = 2;
  try {
    db::data::TokenDataset misread({shard}, 100, two_bytes);
    BOOST_ERROR("a uint32 shard was read as uint16");
  } catch (const db::Error& e) {
    BOOST_TEST(std::string(e.what()).find("says dtype uint32, but the run has "
                                          "data.dtype_bytes = 2") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(usage_errors_return_nonzero_without_writing_a_manifest) {
  fs::path dir = scratch("usage");
  BOOST_TEST(run({"--tokenizer", "bytes"}) == 2);
  BOOST_CHECK_THROW(run({"--tokenizer", "bytes", "--input", (dir / "none*.txt").string(), "--out",
                         (dir / "out").string()}),
                    std::exception);
  BOOST_TEST(!fs::exists(dir / "out" / "manifest.ini"));
}

BOOST_AUTO_TEST_CASE(validation_choice_depends_on_seed_and_document_identity_only) {
  using db::tokenizer::is_validation_document;
  int chosen = 0, same_with_other_seed = 0;
  for (int64_t offset = 0; offset < 100000; offset += 10) {
    const bool val = is_validation_document(0, "shard_00.jsonl", offset, 0.05);
    chosen += val;
    same_with_other_seed += val && is_validation_document(1, "shard_00.jsonl", offset, 0.05);
  }
  BOOST_TEST(chosen > 400);  // 10000 documents, about 500 expected
  BOOST_TEST(chosen < 600);
  BOOST_TEST(same_with_other_seed < 60);  // another seed: an independent choice (about 25)
  BOOST_TEST(!is_validation_document(0, "x", 0, 0.0));
}

namespace {
// The corpus of the test above, in a file of its own, tokenised with the library call.
db::tokenizer::CorpusSummary tokenize_bad_lines(const fs::path& dir, bool strict,
                                                std::size_t kept) {
  write(dir / "bad.jsonl",
        "{\"text\": \"ab\"}\n"
        "not json at all\n"
        "{\"text\": \"\"}\n"
        "\n"
        "{\"text\": \"bad \xFF byte\"}\n"
        "{\"body\": \"no text field\"}\n");
  db::tokenizer::CorpusOptions options;
  options.inputs = {(dir / "bad.jsonl").string()};
  options.out_dir = (dir / "out").string();
  options.progress = false;
  options.strict = strict;
  options.issues_kept = kept;
  const auto tok = db::tokenizer::load_tokenizer("bytes");
  return db::tokenizer::tokenize_corpus(options, *tok, MPI_COMM_WORLD);
}
}  // namespace

BOOST_AUTO_TEST_CASE(dropped_and_repaired_lines_are_reported_with_file_and_line) {
  const fs::path dir = scratch("issues");
  const std::string file = (dir / "bad.jsonl").string();
  const auto summary = tokenize_bad_lines(dir, false, 100);
  BOOST_TEST_REQUIRE(summary.issues.size() == 4u);
  BOOST_TEST(summary.issues[0].starts_with(file + ":2: malformed JSON, dropped"));
  BOOST_TEST(summary.issues[1] == file + ":3: empty document, dropped");
  BOOST_TEST(summary.issues[2].starts_with(file + ":5: invalid UTF-8, repaired"));
  BOOST_TEST(summary.issues[3] == file + ":6: no member 'text', dropped");
  // Without --verbose each rank keeps only the first few.
  BOOST_TEST(tokenize_bad_lines(scratch("issues_kept"), false, 2).issues.size() == 2u);
}

BOOST_AUTO_TEST_CASE(strict_stops_at_the_first_bad_line_naming_it) {
  const fs::path dir = scratch("strict");
  try {
    tokenize_bad_lines(dir, true, 5);
    BOOST_FAIL("--strict accepted a malformed line");
  } catch (const db::Error& e) {
    const std::string message = e.what();
    BOOST_TEST(message.starts_with((dir / "bad.jsonl").string() + ":2: malformed JSON"));
    BOOST_TEST(message.find("--strict") != std::string::npos);
  }
}

// A byte-level vocabulary without the token of a byte the corpus holds: the run stops with one
// line naming the document (file and byte offset) and the byte; nothing is published.
BOOST_AUTO_TEST_CASE(a_byte_without_a_token_stops_the_run_naming_the_document) {
  fs::path dir = scratch("missing_byte");
  std::string json = db::read_text_file(DEPTHBENCH_SOURCE_DIR
                                        "/tests/tokenizer/fixtures/neox_tiny_tokenizer.json");
  json.replace(json.find("\"a\": 99,"), 8, "");  // byte 0x61 loses its token
  write(dir / "tokenizer.json", json);
  write(dir / "d.jsonl", "{\"text\": \"hello\"}\n{\"text\": \"a cat\"}\n");
  try {
    run({"--tokenizer", (dir / "tokenizer.json").string(), "--input", (dir / "d.jsonl").string(),
         "--out", (dir / "out").string()});
    BOOST_ERROR("tokenized a byte without a token");
  } catch (const std::exception& e) {
    const std::string message = e.what();
    BOOST_TEST(message.find("d.jsonl (byte 18)") != std::string::npos, message);
    BOOST_TEST(message.find("no token for byte 0x61") != std::string::npos, message);
  }
  BOOST_TEST(!fs::exists(dir / "out" / "manifest.ini"));
}

namespace {
// Runs `tokenize` with `path` as its standard input, restored afterwards.
int run_with_stdin(const fs::path& path, std::vector<std::string> args) {
  const int saved = ::dup(STDIN_FILENO);
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::dup2(fd, STDIN_FILENO);
  ::close(fd);
  int status = -1;
  try {
    status = run(std::move(args));
  } catch (...) {
    ::dup2(saved, STDIN_FILENO);
    ::close(saved);
    throw;
  }
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
  return status;
}
}  // namespace

// `--input -` reads JSONL (the default) or text from standard input: the same shards as the
// same bytes in a file.
BOOST_AUTO_TEST_CASE(standard_input_is_read_as_jsonl_or_text) {
  fs::path dir = scratch("stdin");
  write(dir / "d.jsonl",
        "{\"text\": \"ab\"}\n{\"text\": \"c\\u00e9\"}\nnot json\n{\"text\": \"z\"}\n");
  BOOST_TEST(run({"--tokenizer", "bytes", "--input", (dir / "d.jsonl").string(), "--out",
                  (dir / "file").string()}) == 0);
  BOOST_TEST(run_with_stdin(dir / "d.jsonl", {"--tokenizer", "bytes", "--input", "-", "--out",
                                              (dir / "piped").string()}) == 0);
  const Ids ids = read_u16(dir / "piped" / "train_000000.npy");
  BOOST_TEST(ids == read_u16(dir / "file" / "train_000000.npy"));
  Ids expected = bytes_then_eod("ab");
  for (const char* doc : {"c\xC3\xA9", "z"}) {
    Ids more = bytes_then_eod(doc);
    expected.insert(expected.end(), more.begin(), more.end());
  }
  BOOST_TEST(ids == expected);
  auto m = read_manifest(dir / "piped" / "manifest.ini");
  BOOST_TEST(m["malformed_json"] == "1");
  BOOST_TEST(m["input_bytes"] == std::to_string(fs::file_size(dir / "d.jsonl")));

  write(dir / "t.txt", "one\n\ntwo\n");
  BOOST_TEST(run_with_stdin(dir / "t.txt", {"--tokenizer", "bytes", "--input", "-", "--format",
                                            "text", "--doc-separator", "blank-line", "--out",
                                            (dir / "text").string()}) == 0);
  Ids text = bytes_then_eod("one\n"), two = bytes_then_eod("two\n");
  text.insert(text.end(), two.begin(), two.end());
  BOOST_TEST(read_u16(dir / "text" / "train_000000.npy") == text);
  BOOST_CHECK_THROW(run({"--tokenizer", "bytes", "--input", "-", (dir / "t.txt").string(), "--out",
                         (dir / "both").string()}),
                    std::exception);
}
