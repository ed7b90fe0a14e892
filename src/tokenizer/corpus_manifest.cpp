#include "tokenizer/corpus_manifest.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/version.hpp"

namespace db::tokenizer {
namespace {

// A tokenizer file is recorded absolute, so that `export` finds it from any directory;
// "bytes" is a name, not a path.
std::string stored_tokenizer(const std::string& description) {
  std::error_code error;
  if (!std::filesystem::exists(description, error)) return description;
  return std::filesystem::absolute(description).lexically_normal().string();
}

}  // namespace

void write_corpus_manifest(const ManifestContents& m) {
  const CorpusOptions& options = m.options;
  const CorpusSummary& total = m.summary;
  const DocumentCounts& c = total.counts;
  std::ostringstream out;
  out << "# depthbench tokenize manifest: written after every shard was complete\n"
      << "[tokenize]\n"
      << "tokenizer = " << stored_tokenizer(m.tokenizer.description()) << "\n"
      << "vocab_size = " << m.tokenizer.vocab_size() << "\n"
      << "eod_id = " << m.tokenizer.eod_id() << "\n"
      << "bos_id = " << (options.bos_id ? std::to_string(*options.bos_id) : "none") << "\n"
      << "dtype = " << total.dtype << "\n"
      << "output_format = " << data::to_string(options.output_format) << "\n"
      << "shard_tokens = " << options.shard_tokens << "\n"
      << "input_format = " << m.input_format << "\n"
      << "text_field = " << options.documents.text_field << "\n"
      << "val_fraction = " << options.val_fraction << "\n"
      << "seed = " << options.seed << "\n"
      << "ranks = " << m.ranks << "\n"
      << "threads = " << total.threads << "\n"
      << "input_files = " << total.input_files << "\n"
      << "software = depthbench " << software_version() << " (" << git_commit() << ")\n"
      << "\n[counts]\n"
      << "documents = " << c.documents << "\n"
      << "documents_train = " << total.documents_train << "\n"
      << "documents_val = " << total.documents_val << "\n"
      << "tokens_train = " << total.tokens_train << "\n"
      << "tokens_val = " << total.tokens_val << "\n"
      << "input_bytes = " << c.input_bytes << "\n"
      << "seconds = " << total.seconds << "\n"
      << "cpu_seconds = " << total.cpu_seconds << "\n"
      << "\n[bad]\n"
      << "empty_documents = " << c.empty_documents << "\n"
      << "malformed_json = " << c.malformed_json << "\n"
      << "not_an_object = " << c.not_an_object << "\n"
      << "missing_field = " << c.missing_field << "\n"
      << "field_not_string = " << c.field_not_string << "\n"
      << "invalid_utf8_repaired = " << c.invalid_utf8 << "\n"
      << "\n[shards]\n";
  for (const Shard& shard : m.shards) out << shard.name << " = " << shard.end - shard.begin << "\n";
  const std::filesystem::path path = std::filesystem::path(options.out_dir) / "manifest.ini";
  const std::string tmp = path.string() + ".tmp";
  {
    std::ofstream file(tmp, std::ios::binary);
    file << out.str();
    file.close();
    DB_REQUIRE(file.good(), "cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace db::tokenizer
