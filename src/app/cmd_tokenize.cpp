// `depthbench tokenize`: text files -> token shards the trainer reads (doc/tokenize.md).
#include <mpi.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "app/command_line.hpp"
#include "app/commands.hpp"
#include "core/error.hpp"
#include "tokenizer/corpus.hpp"
#include "tokenizer/tokenizer.hpp"

namespace db::app {

int run_tokenize_command(int argc, char** argv) {
  namespace po = boost::program_options;
  tokenizer::CorpusOptions options;
  std::string tokenizer_spec, output_format;
  int64_t eod_id = -1;
  std::string eod_token;
  po::options_description described("depthbench tokenize options");
  described.add_options()("help,h", "print this help")(
      "tokenizer", po::value(&tokenizer_spec)->required(),
      "'bytes' (256 byte ids + end-of-document 256), a Hugging Face tokenizer.json, a GPT-2 "
      "encoder.json (vocab.bpe beside it), or a directory holding either")(
      "input", po::value(&options.inputs)->required()->multitoken(),
      "input files or quoted glob patterns ('data/*.jsonl'); may repeat")(
      "format", po::value(&options.format)->default_value("auto"),
      "text, jsonl, fortunes, or auto (jsonl for *.jsonl/*.json, else text)")(
      "text-field", po::value(&options.documents.text_field)->default_value("text"),
      "jsonl: the member that holds the document text")(
      "doc-separator", po::value(&options.documents.doc_separator)->default_value("none"),
      "text: 'none' (one document per file), 'blank-line', or a line that separates documents")(
      "val-fraction", po::value(&options.val_fraction)->default_value(0.0),
      "share of documents written to the val_rankRRR shards (chosen by a hash of file name and "
      "offset)")("output-format", po::value(&output_format)->default_value("npy"),
                 "npy (NumPy .npy with header, *.npy) or olmo (headerless ids, *.u16/*.u32)")(
      "dtype", po::value(&options.dtype)->default_value("auto"),
      "auto (uint16 when the vocabulary fits, else uint32), uint16 or uint32")(
      "eod-id", po::value(&eod_id), "end-of-document id (default: the <|endoftext|> token)")(
      "eod-token", po::value(&eod_token), "end-of-document token given by its text")(
      "out", po::value(&options.out_dir)->required(), "output directory");
  po::variables_map vm;
  if (const auto stop = parse_command_line("tokenize", argc, argv, described, vm)) return *stop;
  options.output_format = tokenizer::parse_output_format(output_format);

  std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::load_tokenizer(tokenizer_spec);
  if (vm.count("eod-id") || vm.count("eod-token")) {
    auto* bpe = dynamic_cast<tokenizer::BpeTokenizer*>(tok.get());
    DB_REQUIRE(bpe, "--eod-id/--eod-token apply to BPE tokenizers; 'bytes' always uses 256");
    if (!eod_token.empty()) {
      int64_t id = bpe->token_id(eod_token);
      DB_REQUIRE(id >= 0, "--eod-token '" + eod_token + "' is not in the vocabulary");
      eod_id = id;
    }
    DB_REQUIRE(eod_id >= 0, "--eod-id must be >= 0");
    bpe->set_eod_id(static_cast<uint32_t>(eod_id));
  }

  tokenizer::CorpusSummary s = tokenizer::tokenize_corpus(options, *tok, MPI_COMM_WORLD);
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  if (rank == 0) {
    const auto& c = s.counts;
    int64_t tokens = s.tokens_train + s.tokens_val;
    std::printf(
        "tokenize: %lld files, %lld documents (%lld train, %lld val), %lld tokens (%lld train, "
        "%lld val), %s, vocab %u, eod %u\n",
        (long long)s.input_files, (long long)c.documents, (long long)s.documents_train,
        (long long)s.documents_val, (long long)tokens, (long long)s.tokens_train,
        (long long)s.tokens_val, s.dtype.c_str(), tok->vocab_size(), tok->eod_id());
    std::printf(
        "tokenize: dropped: %lld malformed JSON, %lld not an object, %lld missing field, %lld "
        "field not a string, %lld empty; repaired invalid UTF-8: %lld\n",
        (long long)c.malformed_json, (long long)c.not_an_object, (long long)c.missing_field,
        (long long)c.field_not_string, (long long)c.empty_documents, (long long)c.invalid_utf8);
    std::printf("tokenize: %.3f s, tokens_per_second %.0f, wrote %s/manifest.ini\n", s.seconds,
                s.seconds > 0 ? tokens / s.seconds : 0.0, options.out_dir.c_str());
  }
  return 0;
}

}  // namespace db::app
