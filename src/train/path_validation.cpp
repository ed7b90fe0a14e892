#include "train/path_validation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/communicator.hpp"
#include "core/error.hpp"
#include "data/token_data.hpp"
#include "io/run_file.hpp"
#include "model/model.hpp"
#include "model/recompute.hpp"
#include "ops/backend.hpp"
#include "train/run_config.hpp"
#include "util/glob.hpp"

namespace db {
namespace {

std::string format_difference(const Difference& d) {
  char text[200];
  std::snprintf(text, sizeof text, "loss %.2e, grad norm %.2e, largest tensor %.2e (%s)", d.loss,
                d.grad_norm, d.largest_tensor, d.worst_tensor.c_str());
  return text;
}

// The options with every fast path at its reference: the fp32 attention kernel on fp32
// activations, the separate ops, eager launches. The precision of the products stays the run's
// (bf16 products are the run's arithmetic, not a path).
OpsOptions reference_options(OpsOptions options) {
  options.attention = AttentionPath::reference;
  options.activation_dtype = ActivationDtype::fp32;
  options.fused_kernels = false;
  options.cuda_graphs = CudaGraphs::off;
  return options;
}

// The attention a run's options actually use: auto in fp32 is the reference.
bool attention_is_fast(const OpsOptions& options) {
  if (options.attention == AttentionPath::reference) return false;
  return !(options.attention == AttentionPath::automatic && options.precision == Precision::fp32);
}

// One micro-batch on a fresh model with these options: the run's initial weights (same seed),
// `runs` times over (a CUDA graph is captured at the third run of a shape), the last one kept.
MicroBatchResult run_micro_batch(const RunConfig& config, const Backend& backend,
                                 const OpsOptions& options, std::span<const int32_t> tokens,
                                 int64_t batch, int runs, std::string* attention_report) {
  const int seq_len = config.recipe.seq_len;
  Model<float> model(config.model, backend, options);
  model.set_recompute(parse_recompute(config.recompute));
  model.initialize(config.seed);
  const double targets = double(batch) * Model<float>::targets_per_window(seq_len);
  MicroBatchResult result;
  for (int run = 0; run < runs; ++run) {
    model.params().zero_grads();
    model.accumulate_forward_backward(tokens.data(), batch, seq_len, 1.0 / targets);
    result.loss = model.take_loss_sum() / targets;
  }
  const Buffer<float>& grads = model.params().grad_buffer();
  result.grad_norm = std::sqrt(backend.sum_of_squares(grads.data(), int64_t(grads.size())));
  const std::vector<float> host = grads.to_host();
  for (const ParameterSpec& spec : model.layout().specs()) {
    result.names.push_back(spec.name);
    result.grads.emplace_back(host.begin() + spec.offset, host.begin() + spec.offset + spec.size());
  }
  if (attention_report) *attention_report = model.ops().attention_paths();
  return result;
}

double relative(double a, double b) {
  return b != 0 ? std::abs(a - b) / std::abs(b) : std::abs(a);
}

}  // namespace

ValidateMode parse_validate_mode(const std::string& name) {
  if (name == "on") return ValidateMode::on;
  if (name == "off") return ValidateMode::off;
  if (name == "strict") return ValidateMode::strict;
  throw Error("unknown train.validate '" + name + "' (valid: on, off, strict)");
}

double Difference::largest() const {
  return std::max({loss, grad_norm, largest_tensor});
}

Difference compare_micro_batches(const MicroBatchResult& candidate,
                                 const MicroBatchResult& reference) {
  DB_REQUIRE(candidate.names == reference.names, "validation: the two models' parameters differ");
  Difference d;
  d.loss = relative(candidate.loss, reference.loss);
  d.grad_norm = relative(candidate.grad_norm, reference.grad_norm);
  // A tensor whose gradient nearly cancels (a bias summed over every token) has a tiny norm that
  // rounding alone moves by a large fraction: its difference is measured against 1% of a typical
  // tensor's gradient norm, ‖G‖₂ / √(tensors), when its own is smaller.
  double total = 0;
  for (const std::vector<float>& g : reference.grads)
    for (float x : g) total += double(x) * x;
  const double floor =
      reference.grads.empty() ? 0 : 1e-2 * std::sqrt(total / double(reference.grads.size()));
  for (size_t t = 0; t < reference.grads.size(); ++t) {
    double diff = 0, norm = 0;
    const std::vector<float>& a = candidate.grads[t];
    const std::vector<float>& b = reference.grads[t];
    for (size_t i = 0; i < b.size(); ++i) {
      diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
      norm += double(b[i]) * b[i];
    }
    const double scale = std::max(std::sqrt(norm), floor);
    const double r = scale > 0 ? std::sqrt(diff) / scale : std::sqrt(diff);
    if (!(r <= d.largest_tensor)) {  // a NaN is the largest difference of all
      d.largest_tensor = std::isnan(r) ? INFINITY : r;
      d.worst_tensor = reference.names[t];
    }
  }
  if (std::isnan(d.loss)) d.loss = INFINITY;
  if (std::isnan(d.grad_norm)) d.grad_norm = INFINITY;
  return d;
}

std::map<std::string, double>& tolerance_overrides() {
  static std::map<std::string, double> overrides;
  return overrides;
}

void set_path_tolerance_for_test(const std::string& path, double tolerance) {
  if (tolerance < 0)
    tolerance_overrides().erase(path);
  else
    tolerance_overrides()[path] = tolerance;
}

double path_tolerance(const std::string& path) {
  for (const auto& [prefix, tolerance] : tolerance_overrides())
    if (path.rfind(prefix, 0) == 0) return tolerance;
  // doc/cuda.md, "Fast paths validated before the first step": bf16 attention against the fp32
  // kernel differs by bf16's rounding of q, k, v and P (≈ 2⁻⁹ per element, averaging out over a
  // gradient tensor's norm); a fast path scaled by 1.01 must fail. bf16 storage rounds every
  // stored activation: up to 2.7e-2 measured on the CPU at a tiny shape (Sandwich-LN's norm
  // gains, `depthbench selftest --backend cpu`), twice that allowed. The fused kernels compute the
  // same sums in another order; a replayed graph launches the same kernels on the same data (the
  // same bits).
  if (path.rfind("attention", 0) == 0) return 5e-3;
  if (path == "bf16 storage") return 6e-2;
  if (path == "fused kernels") return 1e-4;
  if (path == "cuda graphs") return 1e-6;
  throw Error("validation: no tolerance for path '" + path + "'");
}

PathValidation validate_fast_paths(const RunConfig& config, const Backend& backend,
                                   const Communicator& comm, std::span<const int32_t> tokens,
                                   int64_t batch) {
  PathValidation v;
  v.mode = config.validate;
  v.options = config.ops_options();
  const ValidateMode mode = parse_validate_mode(config.validate);
  if (!backend.has_fast_paths()) {
    v.summary = std::string(backend.name()) + ": reference paths";
    return v;
  }
  if (mode == ValidateMode::off) {
    v.summary = "off: fast paths not checked";
    return v;
  }
  const bool rank0 = comm.rank() == 0;
  // A run that fails on one rank fails on all, with the same decision (no rank left waiting in
  // a collective the others skipped).
  auto agreed_failure = [&](bool failed) { return comm.allreduce_max(failed ? 1.0 : 0.0) > 0; };

  std::string error;
  MicroBatchResult base;
  try {
    base =
        run_micro_batch(config, backend, reference_options(v.options), tokens, batch, 1, nullptr);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (agreed_failure(!error.empty()))
    throw Error("train.validate: the reference paths failed on the first micro-batch: " +
                (error.empty() ? std::string("on another rank") : error));

  OpsOptions accepted = reference_options(v.options);
  // Adds one fast path to what was accepted so far and compares with the accepted result: each
  // difference is that path's own. Returns whether it was kept.
  auto check = [&](const std::string& path, const OpsOptions& candidate, int runs,
                   const std::string& instead) {
    PathCheck c;
    c.path = path;
    c.tolerance = path_tolerance(path);
    std::string failure, report;
    MicroBatchResult result;
    try {
      result = run_micro_batch(config, backend, candidate, tokens, batch, runs, &report);
      c.difference = compare_micro_batches(result, base);
    } catch (const std::exception& e) {
      failure = e.what();
      c.difference.loss = INFINITY;
    }
    // Every rank records the largest difference any rank measured.
    c.difference.loss = comm.allreduce_max(c.difference.loss);
    c.difference.grad_norm = comm.allreduce_max(c.difference.grad_norm);
    c.difference.largest_tensor = comm.allreduce_max(c.difference.largest_tensor);
    if (!report.empty() && path.rfind("attention", 0) == 0) c.path += " (" + report + ")";
    if (!agreed_failure(!c.passed())) {
      c.decision = "kept";
      accepted = candidate;
      base = std::move(result);
      v.checks.push_back(c);
      return true;
    }
    const std::string why = failure.empty() ? format_difference(c.difference) : failure;
    if (mode == ValidateMode::strict) {
      c.decision = "refused (strict)";
      v.checks.push_back(c);
      char tolerance[32];
      std::snprintf(tolerance, sizeof tolerance, "%.1e", c.tolerance);
      throw Error("train.validate = strict: " + path +
                  " differs from the reference paths on the first micro-batch (" + why +
                  "; tolerance " + tolerance + "): run refused");
    }
    c.decision = "switched off: " + instead;
    v.fell_back = true;
    v.checks.push_back(c);
    if (rank0)
      std::printf(
          "validation: %s differs from the reference paths on the first micro-batch "
          "(%s; tolerance %.1e): switched off, %s\n",
          path.c_str(), why.c_str(), c.tolerance, instead.c_str());
    return false;
  };

  // 1. Attention: the requested path, then the next of auto's order (flash), then reference.
  if (attention_is_fast(v.options)) {
    std::vector<AttentionPath> order{v.options.attention};
    if (v.options.attention != AttentionPath::flash) order.push_back(AttentionPath::flash);
    bool kept = false;
    for (size_t i = 0; i < order.size() && !kept; ++i) {
      OpsOptions candidate = accepted;
      candidate.attention = order[i];
      const std::string instead = i + 1 < order.size()
                                      ? std::string("trying ") + attention_path_name(order[i + 1])
                                      : std::string("using the reference attention");
      kept =
          check(std::string("attention ") + attention_path_name(order[i]), candidate, 1, instead);
    }
  }
  // 2. bf16 activation storage against fp32.
  if (stores_bf16(v.options, /*gpu=*/true)) {
    OpsOptions candidate = accepted;
    candidate.activation_dtype = ActivationDtype::bf16;
    check("bf16 storage", candidate, 1, "storing fp32 activations");
  }
  // 3. The fused kernels against the separate ops.
  if (v.options.fused_kernels) {
    OpsOptions candidate = accepted;
    candidate.fused_kernels = true;
    check("fused kernels", candidate, 1, "running the separate ops");
  }
  // 4. A replayed CUDA graph against eager launches: the third run of a shape is captured.
  if (v.options.cuda_graphs != CudaGraphs::off) {
    OpsOptions candidate = accepted;
    candidate.cuda_graphs = v.options.cuda_graphs;
    check("cuda graphs", candidate, 3, "launching eagerly");
  }

  v.options = accepted;
  // The run keeps its requested activation_dtype when bf16 storage passed (auto stays auto).
  int kept = 0;
  std::string off;
  for (const PathCheck& c : v.checks) {
    if (c.decision == "kept") {
      ++kept;
    } else {
      off +=
          (off.empty() ? "" : ", ") + c.path.substr(0, c.path.find(" (")) + " (" + c.decision + ")";
    }
  }
  v.summary = v.fell_back ? "fell back: " + off
                          : std::to_string(kept) + " fast path" + (kept == 1 ? "" : "s") +
                                " checked and kept";
  if (v.checks.empty()) v.summary = "no fast path in use";
  return v;
}

PathValidation validate_run_paths(const RunConfig& config, const Backend& backend,
                                  const Communicator& comm) {
  if (!backend.has_fast_paths() || parse_validate_mode(config.validate) == ValidateMode::off)
    return validate_fast_paths(config, backend, comm, {}, 0);  // records why nothing ran
  // The windows of this rank's first micro-batch, as the trainer reads them (trainer.cpp).
  const Recipe& r = config.recipe;
  data::TokenFileOptions options;
  options.format = data::parse_token_format(config.data.format);
  options.raw_dtype_bytes = config.data.dtype_bytes;
  options.vocab_size = config.model.vocab_size;
  const data::TokenDataset train(expand_globs(config.data.train_files), r.seq_len, options);
  data::WindowOrder order(train.num_windows(), config.seed);
  const int64_t share = r.global_batch_sequences / comm.size();
  const int64_t batch = std::min(r.micro_batch_sequences, share);
  std::vector<int32_t> tokens(size_t(batch) * r.seq_len);
  for (int64_t j = 0; j < batch; ++j)
    train.read_window(order.window_at(comm.rank() * share + j),
                      std::span<int32_t>(tokens).subspan(j * r.seq_len, r.seq_len));
  return validate_fast_paths(config, backend, comm, tokens, batch);
}

void record_path_validation(RunFile& file, const PathValidation& v) {
  file.set_group_attribute("validation", "mode", v.mode);
  file.set_group_attribute("validation", "summary", v.summary);
  file.set_group_attribute("validation", "fell_back", int64_t(v.fell_back ? 1 : 0));
  for (size_t i = 0; i < v.checks.size(); ++i) {
    const PathCheck& c = v.checks[i];
    char group[48];
    std::snprintf(group, sizeof group, "validation/check_%zu", i);
    file.set_group_attribute(group, "path", c.path);
    file.set_group_attribute(group, "loss_difference", c.difference.loss);
    file.set_group_attribute(group, "grad_norm_difference", c.difference.grad_norm);
    file.set_group_attribute(group, "largest_tensor_difference", c.difference.largest_tensor);
    file.set_group_attribute(group, "worst_tensor", c.difference.worst_tensor);
    file.set_group_attribute(group, "measured", c.difference.largest());
    file.set_group_attribute(group, "tolerance", c.tolerance);
    file.set_group_attribute(group, "decision", c.decision);
  }
}

}  // namespace db
