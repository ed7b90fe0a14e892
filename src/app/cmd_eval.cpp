// `depthbench eval --weights FILE --data GLOB` (or `--hf DIR`): the loss of given weights on given
// token files (doc/eval.md), windows dealt over the ranks of mpirun.
#include <mpi.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "app/command_line.hpp"
#include "app/commands.hpp"
#include "core/communicator.hpp"
#include "core/error.hpp"
#include "data/shard_manifest.hpp"
#include "eval/evaluation.hpp"
#include "io/hf_checkpoint.hpp"
#include "io/weights_source.hpp"
#include "ops/backend.hpp"
#include "train/run_config.hpp"
#include "util/glob.hpp"

namespace db::app {
namespace {

// Option values are checked where they are read, naming the option, the value and the range.
void require_in(const char* option, double value, double low, double high) {
  if (value < low || value > high) {
    char text[160];
    std::snprintf(text, sizeof text, "--%s = %g: must be in [%g, %g]", option, value, low, high);
    throw Error(text);
  }
}

void write_window_csv(const std::string& path, const eval::EvalResult& r) {
  std::ofstream out(path);
  DB_REQUIRE(out, "cannot write " + path);
  out << "window,loss\n";
  char line[64];
  for (size_t i = 0; i < r.windows.size(); ++i) {
    std::snprintf(line, sizeof line, "%lld,%.17g\n", (long long)r.windows[i], r.window_losses[i]);
    out << line;
  }
  DB_REQUIRE(out.flush(), "cannot write " + path);
}

void write_document_csv(const std::string& path, const eval::EvalResult& r) {
  std::ofstream out(path);
  DB_REQUIRE(out, "cannot write " + path);
  out << "document,targets,nll_sum,loss\n";
  char line[96];
  for (size_t u = 0; u < r.documents.size(); ++u) {
    std::snprintf(line, sizeof line, "%lld,%lld,%.17g,%.17g\n", (long long)r.documents[u],
                  (long long)r.document_targets[u], r.document_nll[u],
                  r.document_nll[u] / r.document_targets[u]);
    out << line;
  }
  DB_REQUIRE(out.flush(), "cannot write " + path);
}

// The end-of-document id of the data's tokenizer (manifest.ini beside the first file), else the
// bytes tokenizer's 256 for a vocabulary of 257, else none (−1).
int64_t default_eod_id(const std::vector<std::string>& globs, int vocab_size) {
  const std::vector<std::string> files = expand_globs(globs);
  if (!files.empty())
    if (const auto manifest = data::manifest_describing(files.front()))
      if (manifest->eod_id >= 0) return manifest->eod_id;
  return vocab_size == 257 ? 256 : -1;
}

}  // namespace

int run_eval_command(int argc, char** argv) {
  namespace po = boost::program_options;
  eval::EvalOptions o;
  std::string eod = "auto", windows_csv, documents_csv, hf_dir;
  int threads = 0;
  po::options_description described(
      "usage: depthbench eval (--weights FILE | --hf DIR) --data GLOB [--windows N | --sample N "
      "--seed S]\n\n"
      "Mean next-token loss of the weights on the T-token windows of the token files (all, N\n"
      "spread evenly as training's validation picks them, or N drawn with a seed), with a 95% "
      "bootstrap interval over windows, and the\n"
      "loss per document with a document bootstrap.\n\noptions");
  described.add_options()("help,h", "print this help")(
      "weights", po::value(&o.weights_file),
      "a weight file (NAME.weights, NAME.init.weights or NAME.ckpt, format 2) or a safetensors "
      "export of one")("hf", po::value(&hf_dir),
                       "a Hugging Face checkpoint folder instead: LLaMA-family, or our own export "
                       "(export --format hf) of any design (doc/export.md)")(
      "data", po::value(&o.data_globs)->multitoken()->required(),
      "token files or glob patterns, concatenated in order")(
      "windows", po::value(&o.first_windows),
      "evaluate N windows spread evenly, as a run with train.val_windows = N validates "
      "(default: all)")("sample", po::value(&o.sample_windows),
                        "evaluate N distinct windows drawn with --seed")(
      "seed", po::value(&o.seed)->default_value(o.seed), "seed of the sample and the bootstraps")(
      "seq-len", po::value(&o.seq_len)->default_value(0),
      "window length T (0 = the seq_len the weights were trained with)")(
      "format", po::value(&o.format)->default_value(o.format), "auto | olmo | npy | llmc")(
      "dtype-bytes", po::value(&o.dtype_bytes)->default_value(o.dtype_bytes),
      "headerless token width: 2 or 4 (0 = from manifest.ini or a .u16/.u32 name, else 2)")(
      "eod-id", po::value(&eod)->default_value(eod),
      "end-of-document id for per-document losses: a number, 'none', or 'auto' (the eod_id of "
      "the data's manifest.ini, else 256 when the vocabulary is 257, else none)")(
      "bootstrap", po::value(&o.bootstrap)->default_value(o.bootstrap), "bootstrap resamples")(
      "windows-csv", po::value(&windows_csv), "write window,loss rows to this file")(
      "documents-csv", po::value(&documents_csv),
      "write document,targets,nll_sum,loss rows to this file")(
      "threads", po::value(&threads)->default_value(0),
      "CPU threads per rank (0 = cores / ranks on the node)")(
      "backend", po::value(&o.backend)->default_value(o.backend),
      ("where the forward passes run: " + backend_choices()).c_str());
  po::variables_map vm;
  if (const auto stop = parse_command_line("eval", argc, argv, described, vm)) return *stop;
  DB_REQUIRE(o.weights_file.empty() != hf_dir.empty(), "give either --weights or --hf");
  if (vm.count("windows")) require_in("windows", double(o.first_windows), 1, 1e18);
  if (vm.count("sample")) require_in("sample", double(o.sample_windows), 1, 1e18);
  DB_REQUIRE(!(vm.count("windows") && vm.count("sample")),
             "give either --windows or --sample, not both");
  if (o.seq_len != 0) require_in("seq-len", o.seq_len, 2, 1 << 24);
  DB_REQUIRE(o.dtype_bytes == 0 || o.dtype_bytes == 2 || o.dtype_bytes == 4,
             "--dtype-bytes = " + std::to_string(o.dtype_bytes) + ": must be 0, 2 or 4");
  require_in("bootstrap", o.bootstrap, 1, 1e7);
  require_in("threads", threads, 0, 4096);
  const Checkpoint weights =
      hf_dir.empty() ? load_weights(o.weights_file) : read_hf_checkpoint(hf_dir);
  if (!hf_dir.empty()) o.weights_file = hf_dir;
  if (eod == "auto")
    o.eod_id = default_eod_id(o.data_globs, weights.model.vocab_size);
  else if (eod != "none")
    try {
      size_t used = 0;
      o.eod_id = std::stoll(eod, &used);
      DB_REQUIRE(used == eod.size() && o.eod_id >= 0, "");
    } catch (const std::exception&) {
      throw Error("--eod-id = " + eod + ": must be a token id ≥ 0, 'none' or 'auto'");
    }

  const Communicator world = Communicator::world();
  host_backend().set_host_threads(threads > 0 ? threads : world.threads_per_rank_on_node());
  const eval::EvalResult r = eval::evaluate(o, weights, world);
  if (world.rank() != 0) return 0;
  const ModelConfig& m = weights.model;
  std::printf("weights %s: %s, L = %d, d = %d, V = %d; windows of T = %d tokens\n",
              o.weights_file.c_str(), m.arch.c_str(), m.n_layer, m.d_model, m.vocab_size,
              r.seq_len);
  std::printf("windows: %zu of %lld (%s)\n", r.windows.size(), (long long)r.available_windows,
              o.sample_windows > 0  ? ("sample, seed " + std::to_string(o.seed)).c_str()
              : o.first_windows > 0 ? "spread evenly, as training's validation"
                                    : "all");
  // A bootstrap resamples units: one window or one document has a single resample, its own
  // value, so its interval would have zero width and say nothing about the noise.
  if (r.windows.size() == 1)
    std::printf(
        "mean loss %.6f (one window: no interval, a single window cannot be "
        "bootstrapped; evaluate more windows for one)\n",
        r.mean_loss);
  else
    std::printf("mean loss %.6f (95%% CI %.6f .. %.6f, window bootstrap, %d resamples)\n",
                r.mean_loss, r.ci_low, r.ci_high, o.bootstrap);
  if (o.eod_id >= 0 && r.documents.size() == 1)
    std::printf(
        "documents: 1, loss %.6f per target token (no interval: one document cannot be "
        "bootstrapped)\n",
        r.document_loss);
  else if (o.eod_id >= 0)
    std::printf(
        "documents: %zu, loss %.6f per target token (95%% CI %.6f .. %.6f, document "
        "bootstrap)\n",
        r.documents.size(), r.document_loss, r.document_ci_low, r.document_ci_high);
  if (!windows_csv.empty()) write_window_csv(windows_csv, r);
  if (!documents_csv.empty()) {
    DB_REQUIRE(o.eod_id >= 0, "--documents-csv needs an end-of-document id (--eod-id)");
    write_document_csv(documents_csv, r);
  }
  return 0;
}

}  // namespace db::app
