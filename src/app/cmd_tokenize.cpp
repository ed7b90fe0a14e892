// `depthbench tokenize`: text files -> token shards the trainer reads (doc/tokenize.md).
#include <mpi.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <limits>

#include "app/command_line.hpp"
#include "app/commands.hpp"
#include "core/error.hpp"
#include "tokenizer/corpus.hpp"
#include "tokenizer/tokenizer.hpp"

namespace db::app {
namespace po = boost::program_options;
namespace {

// A token given by number or by its text; -1 when neither was given.
int64_t chosen_token(const tokenizer::Tokenizer& tok, const po::variables_map& vm,
                     const char* id_option, const char* text_option) {
  if (vm.count(text_option)) {
    const std::string text = vm[text_option].as<std::string>();
    auto* bpe = dynamic_cast<const tokenizer::BpeTokenizer*>(&tok);
    DB_REQUIRE(bpe, std::string("--") + text_option + " applies to BPE tokenizers");
    const int64_t id = bpe->token_id(text);
    DB_REQUIRE(id >= 0,
               std::string("--") + text_option + " '" + text + "' is not in the vocabulary");
    return id;
  }
  if (!vm.count(id_option)) return -1;
  const int64_t id = vm[id_option].as<int64_t>();
  DB_REQUIRE(id >= 0 && id < int64_t(tok.vocab_size()),
             std::string("--") + id_option + " " + std::to_string(id) +
                 " is outside the vocabulary (" + std::to_string(tok.vocab_size()) + " ids)");
  return id;
}

// Where the dropped or repaired lines are: the first few, or all with --verbose.
void print_issues(const std::vector<std::string>& issues, const tokenizer::DocumentCounts& c,
                  bool verbose) {
  const int64_t total = c.malformed_json + c.not_an_object + c.missing_field + c.field_not_string +
                        c.empty_documents + c.invalid_utf8;
  const std::size_t shown = verbose ? issues.size() : std::min<std::size_t>(issues.size(), 5);
  for (std::size_t i = 0; i < shown; ++i) std::printf("tokenize:   %s\n", issues[i].c_str());
  if (int64_t(shown) < total)
    std::printf(
        "tokenize:   ... %lld more (--verbose lists every one; --strict stops at the "
        "first)\n",
        (long long)(total - int64_t(shown)));
}

}  // namespace

int run_tokenize_command(int argc, char** argv) {
  tokenizer::CorpusOptions options;
  std::string tokenizer_spec, output_format;
  bool bos = false, quiet = false, verbose = false;
  po::options_description described("depthbench tokenize options");
  described.add_options()("help,h", "print this help")(
      "tokenizer", po::value(&tokenizer_spec)->required(),
      "'bytes' (256 byte ids + end-of-document 256), a Hugging Face tokenizer.json, a GPT-2 "
      "encoder.json (vocab.bpe beside it), or a directory holding either")(
      "input", po::value(&options.inputs)->required()->multitoken(),
      "files, directories (every file below, recursively) or quoted glob patterns "
      "('data/**/*.jsonl.gz'); may repeat. *.gz and *.zst are decompressed on the fly. '-' "
      "alone: standard input (JSONL unless --format says otherwise)")(
      "format", po::value(&options.format)->default_value("auto"),
      "text, jsonl, fortunes, or auto (per file: jsonl for *.jsonl/*.json, also compressed, "
      "else text)")("text-field", po::value(&options.documents.text_field)->default_value("text"),
                    "jsonl: the member that holds the document text")(
      "doc-separator", po::value(&options.documents.doc_separator)->default_value("none"),
      "text: 'none' (one document per file), 'blank-line', or a line that separates documents")(
      "val-fraction", po::value(&options.val_fraction)->default_value(0.0),
      "share of documents written to the val shards (chosen by a hash of seed, file and "
      "position)")("seed", po::value(&options.seed)->default_value(0),
                   "seed of the validation split")(
      "output-format", po::value(&output_format)->default_value("npy"),
      "npy (NumPy .npy, *.npy), olmo (headerless ids, *.u16/*.u32) or llmc (llm.c shards, "
      "*.bin)")("dtype", po::value(&options.dtype)->default_value("auto"),
                "auto (uint16 when the vocabulary fits, else uint32), uint16 or uint32")(
      "shard-tokens", po::value(&options.shard_tokens)->default_value(0),
      "at most this many tokens per shard (0: one shard per split; llmc: 100000000)")(
      "bos", po::bool_switch(&bos),
      "put the tokenizer's beginning-of-sequence token before every document")(
      "bos-id", po::value<int64_t>(), "--bos with this id")("bos-token", po::value<std::string>(),
                                                            "--bos with the token of this text")(
      "eod-id", po::value<int64_t>(),
      "end-of-document id (default: <|endoftext|>, <|end_of_text|>, </s>, <eos> or DeepSeek's "
      "end of sentence, whichever the tokenizer has)")("eod-token", po::value<std::string>(),
                                                       "end-of-document token given by its text")(
      "threads", po::value(&options.threads)->default_value(0),
      "encoding threads per rank (0: the cores the rank may use)")("quiet", po::bool_switch(&quiet),
                                                                   "no progress line")(
      "verbose", po::bool_switch(&verbose),
      "list every dropped or repaired line with its location (default: the first 5)")(
      "strict", po::bool_switch(&options.strict),
      "stop with an error at the first dropped or repaired line, naming its file and line")(
      "out", po::value(&options.out_dir)->required(), "output directory");
  po::variables_map vm;
  if (const auto stop = parse_command_line("tokenize", argc, argv, described, vm)) return *stop;
  options.output_format = data::parse_token_format(output_format);
  DB_REQUIRE(options.output_format != data::TokenFormat::auto_detect,
             "--output-format must be npy, olmo or llmc");
  options.progress = !quiet;
  if (verbose) options.issues_kept = std::numeric_limits<std::size_t>::max();

  std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::load_tokenizer(tokenizer_spec);
  if (const int64_t eod = chosen_token(*tok, vm, "eod-id", "eod-token"); eod >= 0) {
    auto* bpe = dynamic_cast<tokenizer::BpeTokenizer*>(tok.get());
    DB_REQUIRE(bpe, "--eod-id/--eod-token apply to BPE tokenizers; 'bytes' always uses 256");
    bpe->set_eod_id(static_cast<uint32_t>(eod));
  }
  if (const int64_t id = chosen_token(*tok, vm, "bos-id", "bos-token"); id >= 0) {
    options.bos_id = static_cast<uint32_t>(id);
  } else if (bos) {
    options.bos_id = tok->bos_id();
    DB_REQUIRE(options.bos_id.has_value(),
               "--bos: " + tok->description() +
                   " has no beginning-of-sequence token (neither its post_processor nor a "
                   "tokenizer_config.json beside it names one); give one with --bos-id or "
                   "--bos-token");
  }

  tokenizer::CorpusSummary s = tokenizer::tokenize_corpus(options, *tok, MPI_COMM_WORLD);
  int rank = 0, ranks = 1;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &ranks));
  if (rank == 0) {
    const auto& c = s.counts;
    int64_t tokens = s.tokens_train + s.tokens_val;
    std::printf(
        "tokenize: %lld files, %lld documents (%lld train, %lld val), %lld tokens (%lld train, "
        "%lld val), %s, vocab %u, eod %u, bos %s\n",
        (long long)s.input_files, (long long)c.documents, (long long)s.documents_train,
        (long long)s.documents_val, (long long)tokens, (long long)s.tokens_train,
        (long long)s.tokens_val, s.dtype.c_str(), tok->vocab_size(), tok->eod_id(),
        options.bos_id ? std::to_string(*options.bos_id).c_str() : "none");
    std::printf(
        "tokenize: dropped: %lld malformed JSON, %lld not an object, %lld missing field, %lld "
        "field not a string, %lld empty; repaired invalid UTF-8: %lld\n",
        (long long)c.malformed_json, (long long)c.not_an_object, (long long)c.missing_field,
        (long long)c.field_not_string, (long long)c.empty_documents, (long long)c.invalid_utf8);
    print_issues(s.issues, c, verbose);
    std::printf(
        "tokenize: %.3f s on %d rank(s) x %d thread(s), tokens_per_second %.0f (%.0f per CPU "
        "second), %lld train + %lld val shard(s), wrote %s/manifest.ini\n",
        s.seconds, ranks, s.threads, s.seconds > 0 ? tokens / s.seconds : 0.0,
        s.cpu_seconds > 0 ? tokens / s.cpu_seconds : 0.0, (long long)s.shards_train,
        (long long)s.shards_val, options.out_dir.c_str());
  }
  return 0;
}

}  // namespace db::app
