// `depthbench selftest [--backend cpu|cuda]`: the first command on a new node (README, doc/cuda.md
// "selftest"). Runs, from an install and without ctest, the parity checks of the GPU check's ops
// stage at small shapes: every registered design's loss, gradient norm and every parameter's
// gradient on one micro-batch, on the chosen backend in float against the CPU backend in double
// (every op a design calls is in it); on the GPU also each attention path (the reference kernel,
// cuDNN, our flash kernel) with bf16 products and bf16 activation storage; on the CPU the fused
// kernels off and bf16 activation storage, so that the command means something there too. One
// table, the worst error/tolerance per check, and a verdict: exit 0 when every check that ran
// passed, 1 otherwise. A check that cannot run here (no cuDNN, a shape flash does not support)
// is `skipped` with the reason and does not fail the verdict.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "app/command_line.hpp"
#include "app/commands.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"
#include "ops/backend.hpp"
#include "train/path_validation.hpp"

namespace db::app {
namespace {

// One micro-batch through a fresh model: loss, gradient norm, every gradient (as floats).
template <class T>
MicroBatchResult run_model(const ModelConfig& config, const Backend& backend,
                           const OpsOptions& options, const std::vector<int32_t>& tokens,
                           int64_t batch, int seq_len) {
  Model<T> model(config, backend, options);
  model.initialize(7);
  const double targets = double(batch) * Model<T>::targets_per_window(seq_len);
  model.params().zero_grads();
  MicroBatchResult r;
  r.loss = model.forward_backward(tokens.data(), batch, seq_len, 1.0 / targets) / targets;
  const std::vector<T> grads = model.params().grad_buffer().to_host();
  double sum = 0;
  for (const ParameterSpec& spec : model.layout().specs()) {
    r.names.push_back(spec.name);
    r.grads.emplace_back(grads.begin() + spec.offset, grads.begin() + spec.offset + spec.size());
    for (float g : r.grads.back()) sum += double(g) * g;
  }
  r.grad_norm = std::sqrt(sum);
  return r;
}

struct Check {
  std::string name;
  ModelConfig config;
  OpsOptions options;
  double tolerance;
  int64_t batch;
  int seq_len;
};

struct Row {
  std::string name, result, detail;
  double ratio = 0;  // worst error / tolerance
};

ModelConfig small(const std::string& arch, int d_model, int n_head, int n_kv_head) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = 4;
  c.d_model = d_model;
  c.n_head = n_head;
  c.n_kv_head = n_kv_head;
  c.vocab_size = 37;
  return c;
}

// What this backend is checked for: designs in float against the CPU in double, and the paths.
std::vector<Check> checks_for(const Backend& backend) {
  std::vector<Check> checks;
  const bool gpu = backend.has_fast_paths();
  OpsOptions parity;  // fp32 products, reference attention, fp32 storage, fused kernels on
  parity.precision = Precision::fp32;
  parity.attention = AttentionPath::reference;
  parity.activation_dtype = ActivationDtype::fp32;
  parity.cuda_graphs = CudaGraphs::off;
  for (const DesignInfo& d : all_designs()) {
    const ModelConfig c = small(d.name, 32, 4, 2);
    checks.push_back({"design " + d.name + " fp32", c, parity, 1e-4, 2, 37});
    OpsOptions unfused = parity;
    unfused.fused_kernels = false;
    if (!gpu) checks.push_back({"design " + d.name + " unfused", c, unfused, 1e-4, 2, 37});
    OpsOptions stored = parity;
    stored.activation_dtype = ActivationDtype::bf16;
    if (gpu) stored.precision = Precision::bf16;
    checks.push_back({"design " + d.name + " bf16 storage", c, stored, 6e-2, 2, 37});
  }
  if (gpu) {
    // The attention paths on bf16 products, at a head dim every path runs (16) and one cuDNN
    // pads (20), plain and MoDA's sequence part.
    for (const char* arch : {"pre_ln", "moda"}) {
      for (const auto& [d_model, heads] : {std::pair{64, 4}, std::pair{80, 4}}) {
        for (AttentionPath path :
             {AttentionPath::reference, AttentionPath::cudnn, AttentionPath::flash}) {
          OpsOptions o = parity;
          o.precision = Precision::bf16;
          o.attention = path;
          checks.push_back({std::string("attention ") + attention_path_name(path) + " " + arch +
                                " hd=" + std::to_string(d_model / heads),
                            small(arch, d_model, heads, 2), o, 3e-2, 2, 96});
        }
      }
    }
  }
  return checks;
}

Row run_check(const Check& check, const Backend& backend) {
  Row row{check.name, "", "", 0};
  std::vector<int32_t> tokens(size_t(check.batch) * check.seq_len);
  Rng rng(11, "selftest");
  for (int32_t& t : tokens) t = int32_t(rng.below(uint64_t(check.config.vocab_size)));
  try {
    const MicroBatchResult reference = run_model<double>(
        check.config, find_backend("cpu"), OpsOptions{}, tokens, check.batch, check.seq_len);
    MicroBatchResult ours;
    try {
      ours = run_model<float>(check.config, backend, check.options, tokens, check.batch,
                              check.seq_len);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      // A path this node or build cannot run (no cuDNN, an unsupported shape) is not a fault.
      if (what.find("train.attention = ") != std::string::npos) {
        row.result = "skipped";
        row.detail = what.substr(0, 100);
        return row;
      }
      throw;
    }
    const Difference d = compare_micro_batches(ours, reference);
    row.ratio =
        check.tolerance > 0 ? d.largest() / check.tolerance : (d.largest() > 0 ? INFINITY : 0.0);
    row.result = row.ratio <= 1 ? "pass" : "FAIL";
    char text[200];
    std::snprintf(text, sizeof text, "loss %.1e, grad norm %.1e, worst tensor %.1e (%s); tol %.0e",
                  d.loss, d.grad_norm, d.largest_tensor, d.worst_tensor.c_str(), check.tolerance);
    row.detail = text;
  } catch (const std::exception& e) {
    row.result = "FAIL";
    row.ratio = INFINITY;
    row.detail = std::string("error: ") + e.what();
  }
  return row;
}

}  // namespace

int run_selftest_command(int argc, char** argv) {
  namespace po = boost::program_options;
  po::options_description described(
      "usage: depthbench selftest [--backend cpu|cuda|auto]\n\n"
      "Parity checks at small shapes, from an install (no build tree, no ctest): every design's\n"
      "loss and gradients on one micro-batch against the CPU backend in double; on a GPU also\n"
      "each attention path and bf16 storage, on the CPU the unfused ops and bf16 storage. One\n"
      "table (worst error/tolerance per check) and a verdict; exit 0 when all passed, 1 when one\n"
      "failed. The first command to run on a new GPU node.\n\n"
      "options");
  std::string backend_name = "auto";
  double tolerance_scale = 1;
  described.add_options()("help,h", "print this help")(
      "backend", po::value(&backend_name), ("backend to check: " + backend_choices()).c_str())(
      "tolerance-scale", po::value(&tolerance_scale),
      "multiply every tolerance (e.g. 0.5: how much margin the checks have; 0 makes any "
      "difference a failure)");
  po::variables_map vm;
  if (const auto stop = parse_command_line("selftest", argc, argv, described, vm)) return *stop;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return 0;  // one process checks; the others have nothing to add
  const Backend& backend = choose_backend(backend_name);
  std::printf("depthbench selftest: backend %s on %s, against the CPU backend in double\n\n",
              backend.name(), backend.device_name().c_str());
  std::printf("%-36s | %-7s | %-9s | %s\n", "check", "result", "err/tol", "detail");
  std::printf("%s\n", std::string(110, '-').c_str());
  int failed = 0, passed = 0, skipped = 0;
  double worst = 0;
  for (Check check : checks_for(backend)) {
    check.tolerance *= tolerance_scale;
    const Row row = run_check(check, backend);
    char ratio[16] = "-";
    if (row.result != "skipped") std::snprintf(ratio, sizeof ratio, "%.3f", row.ratio);
    std::printf("%-36s | %-7s | %-9s | %s\n", row.name.c_str(), row.result.c_str(), ratio,
                row.detail.c_str());
    std::fflush(stdout);
    if (row.result == "FAIL") ++failed;
    if (row.result == "pass") ++passed;
    if (row.result == "skipped") ++skipped;
    if (row.result != "skipped") worst = std::max(worst, row.ratio);
  }
  std::printf("\nverdict: %s — %d passed, %d failed, %d skipped; worst error/tolerance %.3f\n",
              failed ? "FAIL" : "pass", passed, failed, skipped, worst);
  return failed ? 1 : 0;
}

}  // namespace db::app
