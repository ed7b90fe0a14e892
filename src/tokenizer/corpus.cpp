#include "tokenizer/corpus.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <thread>

#include "core/error.hpp"
#include "tokenizer/batch_encoder.hpp"
#include "tokenizer/byte_stream.hpp"
#include "tokenizer/corpus_manifest.hpp"
#include "tokenizer/corpus_progress.hpp"
#include "tokenizer/input_files.hpp"
#include "tokenizer/shard_files.hpp"
#include "tokenizer/validation_split.hpp"
#include "tokenizer/work_plan.hpp"

namespace db::tokenizer {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kBatchTextBytes = 256 << 10;  // a batch: about this much text
constexpr int kBatchesPerThread = 4;                // per round, so that threads rarely wait

InputFormat format_of(const InputFile& file, const std::string& format) {
  if (format != "auto") return parse_input_format(format);
  if (file.path == kStandardInput) return InputFormat::jsonl;  // no name to go by
  const std::string inner = without_compression_suffix(file.path);
  const bool json = inner.ends_with(".jsonl") || inner.ends_with(".json");
  return json ? InputFormat::jsonl : InputFormat::text;
}

int dtype_bytes_for(const std::string& dtype, uint32_t vocab_size) {
  if (dtype == "uint16") {
    DB_REQUIRE(vocab_size <= 65536, "--dtype uint16: the vocabulary has " +
                                        std::to_string(vocab_size) + " ids, more than fit");
    return 2;
  }
  if (dtype == "uint32") return 4;
  DB_REQUIRE(dtype == "auto", "--dtype must be auto, uint16 or uint32");
  return vocab_size <= 65536 ? 2 : 4;
}

// Rank 0 clears what a previous run left (manifest first, so the directory never looks
// complete while shards are being replaced); everyone starts after it.
void prepare_out_dir(const fs::path& out_dir, int rank, MPI_Comm comm) {
  if (rank == 0) {
    fs::create_directories(out_dir);
    fs::remove(out_dir / "manifest.ini");
    for (const auto& entry : fs::directory_iterator(out_dir))
      if (is_tokenize_output(entry.path().filename().string())) fs::remove(entry.path());
  }
  MPI_CHECK(MPI_Barrier(comm));
}

// Reads this rank's work items into batches, encodes them a round at a time on the threads and
// appends the ids to the spools in input order.
class RankEncoder {
 public:
  RankEncoder(const CorpusOptions& options, const std::vector<InputFile>& files,
              const std::vector<InputFormat>& formats, BatchEncoder& encoder, TokenSpool& train,
              TokenSpool* val, CorpusProgress* progress)
      : options_(options),
        files_(files),
        formats_(formats),
        encoder_(encoder),
        train_(train),
        val_(val),
        progress_(progress),
        round_(size_t(kBatchesPerThread * encoder.threads())) {}

  void read(const WorkItem& item) {
    const InputFile& file = files_[item.file];
    DocumentOptions documents = options_.documents;
    documents.format = formats_[item.file];
    // A range that starts inside a plain file opens one byte early: the reader needs to see
    // whether a line ends right before it.
    const int64_t stream_offset = std::max<int64_t>(item.begin - 1, 0);
    std::unique_ptr<ByteStream> stream = open_byte_stream(file.path, stream_offset);
    current_ = stream.get();
    read_documents(
        *stream, stream_offset, item.begin, item.end, documents, counts_,
        [&](std::string_view text, int64_t offset) {
          add(text, is_validation_document(options_.seed, file.name, offset, options_.val_fraction),
              shown_name(file) + " (byte " + std::to_string(offset) + ")");
        },
        [&](const DocumentIssue& issue) { note(file, issue); });
    // Standard input's size is known once it is read.
    const int64_t share = item.end != kWholeFile        ? item.end - item.begin
                          : file.path == kStandardInput ? stream->file_bytes_read()
                                                        : file.bytes;
    current_ = nullptr;
    counts_.input_bytes += share;
    bytes_done_ += share;
  }

  void finish() {
    flush();
    if (progress_) progress_->finish(bytes_done_, tokens_);
  }
  const DocumentCounts& counts() const { return counts_; }
  int64_t documents_train() const { return documents_train_; }
  int64_t documents_val() const { return documents_val_; }
  const std::vector<std::string>& issues() const { return issues_; }

 private:
  static std::string shown_name(const InputFile& file) {
    return file.path == kStandardInput ? "standard input" : file.path;
  }

  // A dropped or repaired line: its location is kept (the first few), or ends the run (strict).
  void note(const InputFile& file, const DocumentIssue& issue) {
    std::string where = shown_name(file);
    // Appended piece by piece: `where += ":" + std::to_string(n)` trips GCC 12's -Wrestrict
    // false positive (its bug 105329).
    if (issue.line > 0) {
      where += ':';
      where += std::to_string(issue.line);
    } else if (issue.offset > 0) {
      where += " (byte ";
      where += std::to_string(issue.offset);
      where += ')';
    }
    if (options_.strict)
      throw Error(where + ": " + issue.reason +
                  " (--strict stops at the first dropped or repaired line)");
    if (issues_.size() < options_.issues_kept) issues_.push_back(where + ": " + issue.reason);
  }

  void add(std::string_view text, bool validation, std::string origin) {
    DocumentBatch& batch = round_[used_];
    batch.add(text, validation, std::move(origin));
    ++(validation ? documents_val_ : documents_train_);
    if (batch.text.size() < kBatchTextBytes) return;
    if (++used_ == round_.size()) flush();
  }

  void flush() {
    if (used_ < round_.size() && round_[used_].documents() > 0) ++used_;
    round_.resize(used_);
    encoder_.encode(round_);
    for (DocumentBatch& batch : round_) {
      train_.append(batch.train_ids);
      if (val_) val_->append(batch.val_ids);
      tokens_ += int64_t(batch.train_ids.size() + batch.val_ids.size());
      batch.clear();
    }
    round_.resize(size_t(kBatchesPerThread * encoder_.threads()));
    used_ = 0;
    if (progress_) {
      const int64_t in_file = current_ ? current_->file_bytes_read() : 0;
      progress_->update(bytes_done_ + in_file, tokens_);
    }
  }

  const CorpusOptions& options_;
  const std::vector<InputFile>& files_;
  const std::vector<InputFormat>& formats_;
  BatchEncoder& encoder_;
  TokenSpool& train_;
  TokenSpool* val_;
  CorpusProgress* progress_;
  std::vector<DocumentBatch> round_;
  std::size_t used_ = 0;  // batches of round_ that are full
  const ByteStream* current_ = nullptr;
  DocumentCounts counts_;
  std::vector<std::string> issues_;
  int64_t documents_train_ = 0, documents_val_ = 0, tokens_ = 0, bytes_done_ = 0;
};

// Waits for every rank without spinning: a rank done early must not take a core from one still
// encoding (MPI_Barrier busy-polls in Open MPI, which halves a 2-rank run on 2 busy cores).
void wait_for_all_ranks(MPI_Comm comm) {
  MPI_Request request;
  MPI_CHECK(MPI_Ibarrier(comm, &request));
  for (int done = 0;;) {
    MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Rank 0 receives the issue lines every rank kept, in rank order.
std::vector<std::string> gather_issues(const std::vector<std::string>& mine, int rank, int ranks,
                                       MPI_Comm comm) {
  std::string joined;
  for (const std::string& line : mine) joined += line + '\n';
  int length = int(joined.size());
  std::vector<int> lengths(static_cast<size_t>(ranks), 0), starts(static_cast<size_t>(ranks), 0);
  MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm));
  std::string all;
  if (rank == 0) {
    for (int r = 1; r < ranks; ++r)
      starts[size_t(r)] = starts[size_t(r) - 1] + lengths[size_t(r) - 1];
    all.resize(size_t(starts.back() + lengths.back()));
  }
  MPI_CHECK(MPI_Gatherv(joined.data(), length, MPI_CHAR, all.data(), lengths.data(), starts.data(),
                        MPI_CHAR, 0, comm));
  std::vector<std::string> lines;
  for (std::size_t start = 0, end; (end = all.find('\n', start)) != std::string::npos;
       start = end + 1)
    lines.push_back(all.substr(start, end - start));
  return lines;
}

// Per-rank figures exchanged after encoding, in one fixed order.
std::vector<int64_t> pack(const DocumentCounts& c, const RankEncoder& e, int64_t train_tokens,
                          int64_t val_tokens) {
  return {c.documents,         c.empty_documents,  c.malformed_json, c.not_an_object,
          c.missing_field,     c.field_not_string, c.invalid_utf8,   c.input_bytes,
          e.documents_train(), e.documents_val(),  train_tokens,     val_tokens};
}
constexpr int kTrainTokens = 10, kValTokens = 11;

void unpack(const std::vector<int64_t>& v, CorpusSummary& s) {
  DocumentCounts& c = s.counts;
  c.documents = v[0], c.empty_documents = v[1], c.malformed_json = v[2], c.not_an_object = v[3];
  c.missing_field = v[4], c.field_not_string = v[5], c.invalid_utf8 = v[6], c.input_bytes = v[7];
  s.documents_train = v[8], s.documents_val = v[9], s.tokens_train = v[10], s.tokens_val = v[11];
}

// Cuts each split's ids — the spools of all ranks, in rank order — into shards; this rank writes
// every ranks-th of them. Returns every shard of both splits.
std::vector<Shard> write_shards(const CorpusOptions& options, const ShardLayout& layout,
                                const std::vector<int64_t>& per_rank, int fields, int rank,
                                int ranks, CorpusSummary& summary) {
  std::vector<Shard> shards;
  for (const std::string split : {"train", "val"}) {
    if (split == "val" && options.val_fraction <= 0) continue;
    const int field = split == "train" ? kTrainTokens : kValTokens;
    std::vector<int64_t> starts{0};
    std::vector<std::string> spools;
    for (int r = 0; r < ranks; ++r) {
      starts.push_back(starts.back() + per_rank[size_t(r) * fields + field]);
      spools.push_back(spool_path(options.out_dir, split, r, layout.dtype_bytes));
    }
    const std::vector<Shard> planned = plan_shards(split, starts.back(), layout);
    for (std::size_t k = 0; k < planned.size(); ++k)
      if (int(k % size_t(ranks)) == rank)
        write_shard(planned[k], options.out_dir, layout, spools, starts);
    (split == "train" ? summary.shards_train : summary.shards_val) = int64_t(planned.size());
    shards.insert(shards.end(), planned.begin(), planned.end());
  }
  return shards;
}

}  // namespace

int default_thread_count(MPI_Comm comm) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const int hardware = std::max(1, int(std::thread::hardware_concurrency()));
  const int cpus =
      sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed) : hardware;
  if (cpus < hardware) return std::max(1, cpus);  // bound by the launcher: these cores are ours
  MPI_Comm node;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int ranks_on_node = 1;
  MPI_CHECK(MPI_Comm_size(node, &ranks_on_node));
  MPI_CHECK(MPI_Comm_free(&node));
  return std::max(1, cpus / ranks_on_node);
}

CorpusSummary tokenize_corpus(const CorpusOptions& options_in, Tokenizer& tokenizer,
                              MPI_Comm comm) {
  int rank = 0, ranks = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &ranks));
  CorpusOptions options = options_in;
  DB_REQUIRE(options.val_fraction >= 0 && options.val_fraction < 1,
             "--val-fraction must be in [0, 1)");
  DB_REQUIRE(!options.out_dir.empty(), "--out is required");
  DB_REQUIRE(options.shard_tokens >= 0, "--shard-tokens must be positive (0: one shard)");
  DB_REQUIRE(options.threads >= 0, "--threads must be positive (0: one per core)");
  if (options.output_format == data::TokenFormat::llmc_bin && options.shard_tokens == 0)
    options.shard_tokens = 100'000'000;  // llm.c's own shard size

  std::vector<InputFile> files = expand_inputs(options.inputs);
  if (options.format == "fortunes") {
    // strfile(1) writes a binary index NAME.dat beside every fortunes file NAME: not text.
    std::erase_if(files, [](const InputFile& f) { return f.path.ends_with(".dat"); });
    DB_REQUIRE(!files.empty(), "no fortunes files (only .dat indexes) among the inputs");
  }
  std::vector<InputFormat> formats;
  std::vector<int64_t> bytes;
  std::vector<bool> splittable;
  for (const InputFile& file : files) {
    formats.push_back(format_of(file, options.format));
    bytes.push_back(file.bytes);
    splittable.push_back(formats.back() == InputFormat::jsonl &&
                         compression_of(file.path) == Compression::none);
  }
  const bool mixed =
      std::adjacent_find(formats.begin(), formats.end(), std::not_equal_to<>()) != formats.end();
  options.documents.format = formats.front();

  CorpusSummary summary;
  const ShardLayout layout{options.output_format,
                           dtype_bytes_for(options.dtype, tokenizer.vocab_size()),
                           options.shard_tokens};
  summary.dtype = layout.dtype_bytes == 2 ? "uint16" : "uint32";
  summary.input_files = static_cast<int64_t>(files.size());
  summary.threads = options.threads > 0 ? options.threads : default_thread_count(comm);
  if (options.bos_id)
    DB_REQUIRE(*options.bos_id < tokenizer.vocab_size(),
               "--bos id " + std::to_string(*options.bos_id) + " is outside the vocabulary");

  const fs::path out_dir(options.out_dir);
  prepare_out_dir(out_dir, rank, comm);
  // Standard input is one stream: rank 0 reads it, the other ranks have nothing to do.
  const bool standard_input = files.front().path == kStandardInput;
  const std::vector<WorkItem> work =
      standard_input ? (rank == 0 ? std::vector<WorkItem>{WorkItem{0, 0, kWholeFile}}
                                  : std::vector<WorkItem>{})
                     : plan_work(bytes, splittable, rank, ranks);

  const double start = MPI_Wtime();
  const std::clock_t cpu_start = std::clock();  // this process: all its threads
  std::vector<int64_t> all;                     // per rank, then summed
  {
    TokenSpool train(options.out_dir, "train", rank, layout.dtype_bytes);
    std::unique_ptr<TokenSpool> val;
    if (options.val_fraction > 0)
      val = std::make_unique<TokenSpool>(options.out_dir, "val", rank, layout.dtype_bytes);
    int64_t share_bytes = 0;
    for (const WorkItem& item : work)
      share_bytes += item.end == kWholeFile ? bytes[item.file] : item.end - item.begin;
    std::unique_ptr<CorpusProgress> progress;
    if (rank == 0 && options.progress)
      progress = std::make_unique<CorpusProgress>(stderr, share_bytes, ranks);

    BatchEncoder encoder(tokenizer, summary.threads, options.bos_id);
    RankEncoder reader(options, files, formats, encoder, train, val.get(), progress.get());
    for (const WorkItem& item : work) reader.read(item);
    reader.finish();
    train.finish();
    if (val) val->finish();

    // Every rank learns where each spool sits in its split, then writes its share of shards.
    wait_for_all_ranks(comm);
    std::vector<int64_t> mine =
        pack(reader.counts(), reader, train.tokens(), val ? val->tokens() : 0);
    const int fields = static_cast<int>(mine.size());
    all.resize(size_t(fields) * ranks);
    MPI_CHECK(
        MPI_Allgather(mine.data(), fields, MPI_INT64_T, all.data(), fields, MPI_INT64_T, comm));
    const std::vector<Shard> shards =
        write_shards(options, layout, all, fields, rank, ranks, summary);
    MPI_CHECK(MPI_Barrier(comm));  // every shard is written before any spool goes

    std::vector<int64_t> sum(size_t(fields), 0);
    for (int r = 0; r < ranks; ++r)
      for (int i = 0; i < fields; ++i) sum[size_t(i)] += all[size_t(r) * fields + i];
    unpack(sum, summary);
    summary.issues = gather_issues(reader.issues(), rank, ranks, comm);
    double seconds = MPI_Wtime() - start;
    double cpu_seconds = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    MPI_CHECK(MPI_Allreduce(&seconds, &summary.seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
    MPI_CHECK(MPI_Allreduce(&cpu_seconds, &summary.cpu_seconds, 1, MPI_DOUBLE, MPI_SUM, comm));
    if (rank == 0)
      write_corpus_manifest({options, tokenizer, summary,
                             mixed ? "mixed" : to_string(options.documents.format), ranks, shards});
  }
  MPI_CHECK(MPI_Barrier(comm));
  return summary;
}

}  // namespace db::tokenizer
