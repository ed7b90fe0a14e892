#include "tokenizer/corpus.hpp"

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/version.hpp"

namespace db::tokenizer {
namespace fs = std::filesystem;
namespace {

// Read-only memory map of a whole file (spec: files are memory-mapped, never copied whole).
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    DB_REQUIRE(fd >= 0, "cannot open " + path + ": " + std::strerror(errno));
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
      ::close(fd);
      DB_REQUIRE(false, "cannot stat " + path);
    }
    size_ = static_cast<size_t>(info.st_size);
    if (size_ > 0) {
      data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      ::close(fd);
      DB_REQUIRE(data_ != MAP_FAILED, "cannot map " + path + ": " + std::strerror(errno));
      ::madvise(data_, size_, MADV_SEQUENTIAL);
    } else {
      ::close(fd);
    }
  }
  ~MappedFile() {
    if (size_ > 0) ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view view() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// A part of one input file that one rank reads.
struct WorkItem {
  size_t file;
  int64_t begin, end;
};

// jsonl: the concatenated bytes of all files are cut into `ranks` equal ranges (a line belongs
// to the range holding its first byte). Other formats: whole files, largest first, each to the
// rank with the fewest bytes so far (ties: lowest rank).
std::vector<WorkItem> plan_work(const std::vector<int64_t>& sizes, bool byte_ranges, int rank,
                                int ranks) {
  std::vector<WorkItem> items;
  if (byte_ranges) {
    int64_t total = 0;
    for (int64_t s : sizes) total += s;
    int64_t lo = total * rank / ranks, hi = total * (rank + 1) / ranks, start = 0;
    for (size_t f = 0; f < sizes.size(); ++f) {
      int64_t b = std::max(lo, start), e = std::min(hi, start + sizes[f]);
      if (b < e) items.push_back({f, b - start, e - start});
      start += sizes[f];
    }
    return items;
  }
  std::vector<size_t> order(sizes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::vector<int64_t> load(ranks, 0);
  std::vector<int> owner(sizes.size());
  for (size_t f : order) {
    int best = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[f] = best;
    load[best] += sizes[f];
  }
  for (size_t f = 0; f < sizes.size(); ++f)  // a rank reads its files in list order
    if (owner[f] == rank) items.push_back({f, 0, sizes[f]});
  return items;
}

// `.npy` only for real NumPy files; a headerless array says its dtype in its name instead, so
// neither np.load nor the trainer can misread it (doc/tokenize.md, "Output").
std::string shard_name(const char* split, int rank, OutputFormat format, int dtype_bytes) {
  char name[64];
  std::snprintf(name, sizeof name, "%s_rank%03d%s", split, rank,
                shard_extension(format, dtype_bytes).c_str());
  return name;
}

bool is_old_shard(const std::string& name) {
  if (!name.starts_with("train_rank") && !name.starts_with("val_rank")) return false;
  std::string base = name.ends_with(".tmp") ? name.substr(0, name.size() - 4) : name;
  return base.ends_with(".npy") || base.ends_with(".u16") || base.ends_with(".u32");
}

uint64_t fnv1a(std::string_view text, uint64_t hash = 1469598103934665603ULL) {
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ULL;
  return hash;
}

uint64_t mix64(uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Counters exchanged between ranks, in one fixed order.
std::vector<int64_t> pack(const DocumentCounts& c, const CorpusSummary& s) {
  return {c.documents,       c.empty_documents,  c.malformed_json, c.not_an_object,
          c.missing_field,   c.field_not_string, c.invalid_utf8,   c.input_bytes,
          s.documents_train, s.documents_val,    s.tokens_train,   s.tokens_val};
}

void unpack(const int64_t* v, DocumentCounts& c, CorpusSummary& s) {
  c.documents = v[0], c.empty_documents = v[1], c.malformed_json = v[2], c.not_an_object = v[3];
  c.missing_field = v[4], c.field_not_string = v[5], c.invalid_utf8 = v[6], c.input_bytes = v[7];
  s.documents_train = v[8], s.documents_val = v[9], s.tokens_train = v[10], s.tokens_val = v[11];
}

void write_manifest(const CorpusOptions& options, const Tokenizer& tokenizer,
                    const CorpusSummary& total, const std::vector<int64_t>& per_rank, int ranks,
                    int fields, const std::vector<std::string>& files) {
  std::ostringstream m;
  const DocumentCounts& c = total.counts;
  m << "# depthbench tokenize manifest: written after every shard was complete\n"
    << "[tokenize]\n"
    << "tokenizer = " << tokenizer.description() << "\n"
    << "vocab_size = " << tokenizer.vocab_size() << "\n"
    << "eod_id = " << tokenizer.eod_id() << "\n"
    << "dtype = " << total.dtype << "\n"
    << "output_format = " << to_string(options.output_format) << "\n"
    << "input_format = " << to_string(options.documents.format) << "\n"
    << "text_field = " << options.documents.text_field << "\n"
    << "val_fraction = " << options.val_fraction << "\n"
    << "ranks = " << ranks << "\n"
    << "input_files = " << files.size() << "\n"
    << "software = depthbench " << software_version() << " (" << git_commit() << ")\n"
    << "\n[counts]\n"
    << "documents = " << c.documents << "\n"
    << "documents_train = " << total.documents_train << "\n"
    << "documents_val = " << total.documents_val << "\n"
    << "tokens_train = " << total.tokens_train << "\n"
    << "tokens_val = " << total.tokens_val << "\n"
    << "input_bytes = " << c.input_bytes << "\n"
    << "seconds = " << total.seconds << "\n"
    << "\n[bad]\n"
    << "empty_documents = " << c.empty_documents << "\n"
    << "malformed_json = " << c.malformed_json << "\n"
    << "not_an_object = " << c.not_an_object << "\n"
    << "missing_field = " << c.missing_field << "\n"
    << "field_not_string = " << c.field_not_string << "\n"
    << "invalid_utf8_repaired = " << c.invalid_utf8 << "\n"
    << "\n[shards]\n";
  const int dtype_bytes = total.dtype == "uint16" ? 2 : 4;
  for (int r = 0; r < ranks; ++r) {
    const int64_t* v = per_rank.data() + size_t(r) * fields;
    m << shard_name("train", r, options.output_format, dtype_bytes) << " = " << v[10] << "\n";
    if (options.val_fraction > 0)
      m << shard_name("val", r, options.output_format, dtype_bytes) << " = " << v[11] << "\n";
  }
  fs::path path = fs::path(options.out_dir) / "manifest.ini";
  std::string tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << m.str();
    out.close();
    DB_REQUIRE(out.good(), "cannot write " + tmp);
  }
  fs::rename(tmp, path);
}

}  // namespace

bool is_validation_document(const std::string& file_name, int64_t offset, double val_fraction) {
  if (val_fraction <= 0) return false;
  uint64_t hash = mix64(fnv1a(file_name) ^ mix64(static_cast<uint64_t>(offset)));
  return static_cast<double>(hash >> 11) * 0x1.0p-53 < val_fraction;
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& patterns) {
  std::vector<std::string> files;
  for (const std::string& pattern : patterns) {
    glob_t matches{};
    int status = ::glob(pattern.c_str(), 0, nullptr, &matches);
    if (status == 0) {
      for (size_t i = 0; i < matches.gl_pathc; ++i) {
        std::string path = matches.gl_pathv[i];
        // A symbolic link is read once, under its target's name (Debian's fortunes ships
        // `art.u8 -> art`): the same text twice would leak between training and validation.
        if (fs::is_regular_file(path)) files.push_back(fs::canonical(path).string());
      }
    }
    globfree(&matches);
    DB_REQUIRE(status == 0 || status == GLOB_NOMATCH, "cannot expand input '" + pattern + "'");
    DB_REQUIRE(status == 0, "input '" + pattern + "' matches no file");
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  DB_REQUIRE(!files.empty(), "no input files");
  return files;
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
  std::vector<std::string> files = expand_inputs(options.inputs);
  if (options.format == "auto") {
    const std::string& first = files.front();
    bool json = first.ends_with(".jsonl") || first.ends_with(".json");
    options.documents.format = json ? InputFormat::jsonl : InputFormat::text;
  } else {
    options.documents.format = parse_input_format(options.format);
  }
  if (options.documents.format == InputFormat::fortunes) {
    // strfile(1) writes a binary index NAME.dat beside every fortunes file NAME: not text.
    std::erase_if(files, [](const std::string& f) { return f.ends_with(".dat"); });
    DB_REQUIRE(!files.empty(), "no fortunes files (only .dat indexes) among the inputs");
  }

  CorpusSummary summary;
  const uint32_t vocab_size = tokenizer.vocab_size();
  const uint32_t eod = tokenizer.eod_id();
  int dtype_bytes = vocab_size <= 65536 ? 2 : 4;
  if (options.dtype == "uint16") {
    DB_REQUIRE(vocab_size <= 65536, "--dtype uint16: the vocabulary has " +
                                        std::to_string(vocab_size) + " ids, more than fit");
    dtype_bytes = 2;
  } else if (options.dtype == "uint32") {
    dtype_bytes = 4;
  } else {
    DB_REQUIRE(options.dtype == "auto", "--dtype must be auto, uint16 or uint32");
  }
  summary.dtype = dtype_bytes == 2 ? "uint16" : "uint32";
  summary.input_files = static_cast<int64_t>(files.size());

  // Rank 0 clears what a previous run left (manifest first, so the directory never looks
  // complete while shards are being replaced); everyone starts after it.
  fs::path out_dir(options.out_dir);
  if (rank == 0) {
    fs::create_directories(out_dir);
    fs::remove(out_dir / "manifest.ini");
    for (const auto& entry : fs::directory_iterator(out_dir)) {
      if (is_old_shard(entry.path().filename().string())) fs::remove(entry.path());
    }
  }
  MPI_CHECK(MPI_Barrier(comm));

  std::vector<int64_t> sizes;
  for (const std::string& f : files) sizes.push_back(static_cast<int64_t>(fs::file_size(f)));
  const std::vector<WorkItem> work =
      plan_work(sizes, options.documents.format == InputFormat::jsonl, rank, ranks);

  const double start = MPI_Wtime();
  TokenShardWriter train(
      (out_dir / shard_name("train", rank, options.output_format, dtype_bytes)).string(),
      options.output_format, dtype_bytes);
  std::unique_ptr<TokenShardWriter> val;
  if (options.val_fraction > 0)
    val = std::make_unique<TokenShardWriter>(
        (out_dir / shard_name("val", rank, options.output_format, dtype_bytes)).string(),
        options.output_format, dtype_bytes);
  std::vector<uint32_t> ids;
  DocumentCounts counts;
  for (const WorkItem& item : work) {
    MappedFile file(files[item.file]);
    const std::string file_name = fs::path(files[item.file]).filename().string();
    read_documents(file.view(), item.begin, item.end, options.documents, counts,
                   [&](std::string_view text, int64_t offset) {
                     ids.clear();
                     tokenizer.encode(text, ids);
                     ids.push_back(eod);
                     if (val && is_validation_document(file_name, offset, options.val_fraction)) {
                       val->append(ids);
                       ++summary.documents_val;
                     } else {
                       train.append(ids);
                       ++summary.documents_train;
                     }
                   });
  }
  summary.tokens_train = train.tokens();
  summary.tokens_val = val ? val->tokens() : 0;
  train.commit();
  if (val) val->commit();
  double seconds = MPI_Wtime() - start;

  // Totals on every rank; the per-rank table for the manifest on rank 0.
  std::vector<int64_t> mine = pack(counts, summary);
  const int fields = static_cast<int>(mine.size());
  std::vector<int64_t> all(size_t(fields) * ranks);
  MPI_CHECK(MPI_Allgather(mine.data(), fields, MPI_INT64_T, all.data(), fields, MPI_INT64_T, comm));
  std::vector<int64_t> sum(fields, 0);
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < fields; ++i) sum[i] += all[size_t(r) * fields + i];
  unpack(sum.data(), summary.counts, summary);
  MPI_CHECK(MPI_Allreduce(&seconds, &summary.seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
  if (rank == 0) write_manifest(options, tokenizer, summary, all, ranks, fields, files);
  MPI_CHECK(MPI_Barrier(comm));
  return summary;
}

}  // namespace db::tokenizer
