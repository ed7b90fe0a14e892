#include "train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>

#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/fault.hpp"
#include "core/format.hpp"
#include "core/rng.hpp"
#include "data/token_data.hpp"
#include "data/validation_windows.hpp"
#include "io/checkpoint.hpp"
#include "io/run_file.hpp"
#include "model/model.hpp"
#include "ops/backend.hpp"
#include "train/adamw.hpp"
#include "train/gradient_buckets.hpp"
#include "train/memory_estimate.hpp"
#include "train/path_validation.hpp"
#include "train/run_metadata.hpp"
#include "train/stop_signal.hpp"
#include "util/file_copy.hpp"
#include "util/glob.hpp"

namespace db {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// This rank's share of the validation windows (the w-th on rank w mod ranks); the others stay 0
// until the losses are summed over the ranks.
std::vector<double> local_window_losses(Model<float>& model, const data::TokenDataset& val,
                                        const std::vector<int64_t>& windows, int seq_len,
                                        const Communicator& comm) {
  std::vector<double> losses(windows.size(), 0.0);
  std::vector<int32_t> tokens(seq_len);
  for (size_t w = comm.rank(); w < windows.size(); w += comm.size()) {
    val.read_window(windows[w], tokens);
    losses[w] =
        model.forward_loss(tokens.data(), 1, seq_len) / Model<float>::targets_per_window(seq_len);
  }
  return losses;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}

// 95% bootstrap interval of the mean over windows (B = 1000, fixed seed; diagnostics.md).
std::pair<double, double> bootstrap_interval(const std::vector<double>& v) {
  if (v.size() < 2) return {mean(v), mean(v)};
  Rng rng(42, "validation-bootstrap");
  std::vector<double> means(1000);
  for (double& m : means) {
    double s = 0;
    for (size_t i = 0; i < v.size(); ++i) s += v[rng.below(v.size())];
    m = s / v.size();
  }
  std::sort(means.begin(), means.end());
  return {means[24], means[974]};
}

// The bucketed reduction of a run (train.reduce_bucket_mb > 0 on a reducer that overlaps), its
// buckets started by the model's backward; null: one sum after the backward.
std::unique_ptr<BucketedReduction> bucketed_reduction(const RunConfig& config,
                                                      GradientReducer& reducer,
                                                      Model<float>& model) {
  if (config.reduce_bucket_mb <= 0 || !reducer.overlaps()) return nullptr;
  std::vector<int> schedule(model.config().n_layer);
  for (int p = 0; p < int(schedule.size()); ++p)
    schedule[p] = model.backbone().skipped(p) ? -1 : model.backbone().param_block(p);
  auto buckets = std::make_unique<BucketedReduction>(
      reducer, model.params().grad_buffer(),
      plan_gradient_buckets(model.layout(), schedule, bucket_elements_of(config.reduce_bucket_mb)));
  model.backbone().on_gradients_final = [b = buckets.get()](int p) { b->gradients_final(p); };
  return buckets;
}

// What the run file and the log record as `gradient_reduction`.
std::string reduction_description(const GradientReducer& reducer, const BucketedReduction* buckets,
                                  double bucket_mb) {
  if (!buckets) return reducer.name();
  char text[160];
  std::snprintf(text, sizeof text, "%s, %zu buckets of %g MB overlapped", reducer.name().c_str(),
                buckets->plan().size(), bucket_mb);
  return text;
}

// Records a run that could not train as `failed`, keeping the curves logged so far when the
// unfinished file is readable. Rank 0 only.
void record_failure(const RunConfig& config, int ranks, const std::string& reason) {
  const RunPaths paths = RunPaths::of(config);
  std::optional<RunFile> reopened;
  try {
    if (std::filesystem::exists(paths.run_file + ".tmp"))
      reopened.emplace(RunFile::resume(paths.run_file, INT64_MAX));
  } catch (const std::exception&) {
  }
  RunFile file = reopened ? std::move(*reopened) : RunFile::create(paths.run_file);
  try {
    write_run_metadata(file, config, ranks);
  } catch (const std::exception&) {  // e.g. an unknown design: the status still tells
  }
  file.set_attribute("status", std::string("failed"));
  file.set_attribute("end_time", iso_time_now());
  file.set_attribute("status_reason", reason);
  file.set_attribute("status_step", int64_t(-1));
  file.publish();
}

class TrainingRun {
 public:
  // backend: started (its device chosen) at start-up. validation: the fast paths checked before
  // the first step; the model runs with the options it kept.
  TrainingRun(const RunConfig& config, const Communicator& comm, bool verbose,
              const Backend& backend, PathValidation validation)
      : config_(config),
        comm_(comm),
        verbose_(verbose && comm.rank() == 0),
        validation_(std::move(validation)),
        paths_(RunPaths::of(config)),
        log_(nullptr, &close_log),
        model_(config.model, backend, validation_.options),
        optimizer_(model_.layout(), config.recipe, model_.space()),
        backend_(backend),
        reducer_(backend.make_gradient_reducer(comm)),
        buckets_(bucketed_reduction(config, *reducer_, model_)),
        flops_per_token_(flops_per_token(config.model, config.recipe.seq_len)) {
    model_.set_recompute(parse_recompute(config.recompute));
  }

  TrainResult run();

 private:
  bool rank0() const { return comm_.rank() == 0; }
  // Runs body on every rank and agrees on what went wrong (core/fault.hpp): the only way a
  // step may fail, so that every rank of the run leaves at the same point.
  template <class Body>
  Fault collectively(Body&& body) {
    return agree_on_fault(comm_, capture_fault(body));
  }
  void open_data();
  Fault forward_backward_and_reduce(int64_t step, double grad_scale, double& loss, double& norm);
  void start_or_resume();
  double local_forward_backward(int64_t step, double grad_scale);
  void log_step(int64_t step, const CurveRow& row, double eta_seconds);
  Fault validate(int64_t step, bool final);
  void save_checkpoint(int64_t steps_done);
  void save_initial_weights();
  Checkpoint weights_file(int64_t steps_done);
  void write_final_results();
  TrainResult end_early(const Fault& fault, int64_t step);
  TrainResult finish(TrainResult result);
  // The `attention_paths` attribute (Ops::attention_paths), `activation_dtype`, what the
  // sublayer cores stored (train.activation_dtype resolved), `fused_kernels` and `state_dtype`:
  // rank 0, with the run file open.
  void record_attention_paths() {
    file_->set_attribute("attention_paths", model_.ops().attention_paths());
    file_->set_attribute("activation_dtype", model_.backbone().bf16_storage() ? "bf16" : "fp32");
    file_->set_attribute("fused_kernels", model_.backbone().fused_kernels() ? "on" : "off");
    file_->set_attribute("state_dtype", model_.backbone().bf16_state() ? "bf16" : "fp32");
  }

  // `val_tokens`, `val_documents` and the held-out set they are drawn from (doc/hdf5-schema.md),
  // with a line in the log when they are thin: rank 0, with the run file open.
  void record_validation_coverage() {
    const data::ValidationCoverage c =
        data::validation_coverage(*val_, val_windows_, data::end_of_document_id(val_->files()));
    file_->set_attribute("val_tokens", c.tokens);
    file_->set_attribute("val_documents", c.documents);
    file_->set_attribute("val_held_out_tokens", c.held_out_tokens);
    file_->set_attribute("val_held_out_documents", c.held_out_documents);
    if (const std::string warning = data::thin_validation_warning(c); !warning.empty())
      say(false, "%s: warning: %s\n", config_.run_name().c_str(), warning.c_str());
  }

  const RunConfig& config_;
  const Communicator& comm_;
  // Every line about the run goes to NAME.log (rank 0); `event` lines (start, resume) also to
  // stdout, step and validation lines only when verbose.
  void say(bool event, const char* format, ...) __attribute__((format(printf, 3, 4)));
  static void close_log(std::FILE* f) {
    if (f) std::fclose(f);
  }

  bool verbose_;
  PathValidation validation_;
  RunPaths paths_;
  std::unique_ptr<std::FILE, void (*)(std::FILE*)> log_;
  bool log_tried_ = false;
  Model<float> model_;
  AdamW<float> optimizer_;
  const Backend& backend_;
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<BucketedReduction> buckets_;  // null: one sum after the backward
  double flops_per_token_;
  std::optional<data::TokenDataset> train_, val_;
  std::optional<data::WindowOrder> order_;
  std::vector<int64_t> val_windows_;  // the validation windows, ascending
  std::optional<RunFile> file_;
  Buffer<int32_t> batch_tokens_;  // one micro-batch's windows, in the backend's staging space
  int64_t start_step_ = 0;
  bool resumed_ = false;  // from a checkpoint: the step-0 validation is in the run file already
  double best_val_ = 1e300;
  int64_t best_step_ = -1;
  double last_val_ = 0;
  std::vector<double> last_val_windows_;
};

void TrainingRun::open_data() {
  const Recipe& r = config_.recipe;
  data::TokenFileOptions options;
  options.format = data::parse_token_format(config_.data.format);
  options.raw_dtype_bytes = config_.data.dtype_bytes;
  options.vocab_size = config_.model.vocab_size;
  DB_REQUIRE(!config_.data.train_files.empty(), "data.train_files is empty");
  DB_REQUIRE(!config_.data.val_files.empty(), "data.val_files is empty");
  std::vector<std::string> train_files = expand_globs(config_.data.train_files);
  std::vector<std::string> val_files = expand_globs(config_.data.val_files);
  std::vector<std::string> all_files = train_files;
  all_files.insert(all_files.end(), val_files.begin(), val_files.end());
  data::require_one_tokenization(all_files);
  train_.emplace(std::move(train_files), r.seq_len, options);
  val_.emplace(std::move(val_files), r.seq_len, options);
  // Spread evenly over the held-out files, the same for every run (data/validation_windows.hpp).
  val_windows_ = data::validation_windows(val_->num_windows(), config_.val_windows);
  order_.emplace(train_->num_windows(), config_.seed);
}

void TrainingRun::say(bool event, const char* format, ...) {
  if (!rank0()) return;
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  if (!log_ && !log_tried_) {  // the output directory exists once the run file was created
    log_tried_ = true;
    log_.reset(std::fopen(paths_.log.c_str(), "a"));
  }
  if (log_) {
    std::fputs(line, log_.get());
    std::fflush(log_.get());
  }
  if (event || verbose_) {
    std::fputs(line, stdout);
    std::fflush(stdout);
  }
}

void TrainingRun::start_or_resume() {
  std::optional<Checkpoint> checkpoint;
  const std::optional<std::string> checkpoint_id = std::filesystem::exists(paths_.run_file + ".tmp")
                                                       ? read_checkpoint_run_id(paths_.checkpoint)
                                                       : std::nullopt;
  if (checkpoint_id && *checkpoint_id != run_id(config_)) {
    say(true, "%s: checkpoint belongs to another config, starting over\n",
        config_.run_name().c_str());
  } else if (checkpoint_id) {
    checkpoint = read_checkpoint(paths_.checkpoint, config_.model);  // by this model's names
  }
  if (checkpoint) {
    resumed_ = true;
    model_.params().copy_values_from_host(checkpoint->params);
    optimizer_.set_moments(checkpoint->adam_m, checkpoint->adam_v);
    optimizer_.set_steps_taken(checkpoint->adam_steps);
    start_step_ = checkpoint->step;
    best_val_ = checkpoint->best_val_loss;
    best_step_ = checkpoint->best_step;
    if (rank0()) {
      // A process killed while writing NAME.h5.tmp (kill -9, node failure, a full disk) can
      // leave it unreadable: continue from the copy taken with the checkpoint.
      if (std::filesystem::exists(paths_.checkpoint_run_file))
        copy_file_contents(paths_.checkpoint_run_file, paths_.run_file + ".tmp");
      file_.emplace(RunFile::resume(paths_.run_file, start_step_));
    }
    say(true, "%s: resuming at step %lld\n", config_.run_name().c_str(), (long long)start_step_);
  } else {
    model_.initialize(config_.seed);
    if (rank0()) {
      std::filesystem::remove(paths_.checkpoint);
      std::filesystem::remove(paths_.checkpoint_run_file);
      file_.emplace(RunFile::create(paths_.run_file));
    }
  }
  if (rank0()) {
    write_run_metadata(*file_, config_, comm_.size(), /*resumed=*/start_step_ > 0, &backend_);
    record_path_validation(*file_, validation_);
    file_->set_attribute("gradient_reduction", reduction_description(*reducer_, buckets_.get(),
                                                                     config_.reduce_bucket_mb));
    file_->set_attribute("status", std::string("running"));
    file_->flush();
  }
  say(false, "%s: backend %s on %s, gradient reduction: %s\n", config_.run_name().c_str(),
      backend_.name(), backend_.device_name().c_str(),
      reduction_description(*reducer_, buckets_.get(), config_.reduce_bucket_mb).c_str());
}

// Forward and backward of this rank's sequences of the global batch (positions
// step·G + rank·share + j of the window order), gradients accumulated over micro-batches.
// Returns this rank's loss sum, read from the device once for the whole step (the micro-batches
// add into the model's accumulator); nothing here is collective.
double TrainingRun::local_forward_backward(int64_t step, double grad_scale) {
  const Recipe& r = config_.recipe;
  const int T = r.seq_len;
  const int64_t share = r.global_batch_sequences / comm_.size();
  model_.params().zero_grads();
  if (batch_tokens_.empty()) {
    // Once, at the largest micro-batch, where the device copies from fastest (page-locked on a
    // GPU): no step allocates it again, a shorter last micro-batch uses its front.
    MemorySpaceScope staging(backend_.staging_space());
    batch_tokens_.resize(std::min(r.micro_batch_sequences, share) * T);
  }
  const std::span<int32_t> batch(batch_tokens_.data(), batch_tokens_.size());
  for (int64_t first = 0; first < share; first += r.micro_batch_sequences) {
    const int64_t micro = std::min(r.micro_batch_sequences, share - first);
    for (int64_t j = 0; j < micro; ++j) {
      const int64_t position = step * r.global_batch_sequences + comm_.rank() * share + first + j;
      train_->read_window(order_->window_at(position), batch.subspan(j * T, T));
    }
    // The last micro-batch's backward leaves the gradients final: buckets start during it, from
    // host hooks as its work is enqueued, so it runs eagerly (never replayed from a CUDA graph).
    const bool last = first + r.micro_batch_sequences >= share;
    if (buckets_ && last) buckets_->arm();
    model_.accumulate_forward_backward(batch.data(), micro, T, grad_scale,
                                       /*replayable=*/!(buckets_ && last));
  }
  return model_.take_loss_sum();
}

// One step's gradients summed over the ranks, and their global norm. With buckets, sums start
// during the last backward; a rank whose backward fails still starts every bucket before the
// fault is agreed, and every rank waits for its sums after it, so the sums started by the
// ranks that went on always find their partners.
Fault TrainingRun::forward_backward_and_reduce(int64_t step, double grad_scale, double& loss,
                                               double& norm) {
  if (buckets_) buckets_->begin_step();
  const Fault computed = collectively([&] {
    try {
      loss = local_forward_backward(step, grad_scale);
    } catch (...) {
      if (buckets_) buckets_->start_remaining();
      throw;
    }
    if (buckets_) buckets_->start_remaining();
  });
  if (computed) {
    if (buckets_) capture_fault([&] { buckets_->finish(); });
    return computed;
  }
  // Inside the fault agreement like the rest of the step: a failed transport or peer (NCCL
  // errors, timeouts) ends the run on every rank at this step.
  return collectively([&] {
    if (buckets_)
      buckets_->finish();
    else
      reducer_->sum(model_.params().grad_buffer());
    norm = global_norm(model_.params());
  });
}

void TrainingRun::log_step(int64_t step, const CurveRow& row, double eta_seconds) {
  const Recipe& r = config_.recipe;
  // Curve rows depend on the step only (not on where a resumed run started), so a resumed run
  // logs exactly the rows of one never interrupted.
  const bool log = (step + 1) % config_.log_interval == 0 || step == 0 || step + 1 == r.steps;
  if (rank0() && log) file_->append(row);
  // Which attention kernel each shape ran: known once the first step ran its shapes (validation
  // adds its own at the end, finish() writes the whole list).
  if (rank0() && step == start_step_) record_attention_paths();
  if (log || step == start_step_)
    // "step" as curves/step has it (0-based); in parentheses the steps done of the run's total.
    say(false, "%s: step %lld (%lld of %lld) loss %.4f lr %.2e tok/s %.0f GFLOP/s %.1f ETA %s\n",
        config_.run_name().c_str(), (long long)step, (long long)(step + 1), (long long)r.steps,
        row.train_loss, row.learning_rate, row.tokens_per_second,
        flops_per_token_ * row.tokens_per_second * 1e-9, format_duration(eta_seconds).c_str());
}

Fault TrainingRun::validate(int64_t step, bool final) {
  std::vector<double> losses;
  const Fault read = collectively([&] {
    losses = local_window_losses(model_, *val_, val_windows_, config_.recipe.seq_len, comm_);
  });
  if (read) return read;
  comm_.allreduce_sum(std::span<double>(losses));
  last_val_windows_ = std::move(losses);
  last_val_ = mean(last_val_windows_);
  if (last_val_ < best_val_) {
    best_val_ = last_val_;
    best_step_ = step;
  }
  say(false, "%s: step %lld validation loss %.4f%s\n", config_.run_name().c_str(), (long long)step,
      last_val_, final ? " (final)" : "");
  return collectively([&] {
    if (rank0()) file_->append_validation(step, last_val_);
  });
}

// The current weights with the run's identity and progress, without optimizer state.
Checkpoint TrainingRun::weights_file(int64_t steps_done) {
  Checkpoint c;
  c.run_id = run_id(config_);
  c.model = config_.model;
  c.seq_len = config_.recipe.seq_len;
  c.step = steps_done;
  c.adam_steps = optimizer_.steps_taken();
  c.best_val_loss = best_val_;
  c.best_step = best_step_;
  c.params = model_.params().values_to_host();
  return c;
}

void TrainingRun::save_checkpoint(int64_t steps_done) {
  if (!rank0()) return;
  Checkpoint c = weights_file(steps_done);
  c.adam_m = optimizer_.first_moment();
  c.adam_v = optimizer_.second_moment();
  file_->flush();
  // A consistent copy of the run file goes first (copy, then rename): if the process dies before
  // the checkpoint itself is renamed into place, the copy merely holds rows that resume drops.
  const std::string copy = paths_.checkpoint_run_file + ".tmp";
  copy_file_contents(paths_.run_file + ".tmp", copy);
  std::filesystem::rename(copy, paths_.checkpoint_run_file);
  write_checkpoint(paths_.checkpoint, c);
}

// NAME.init.weights: the weights every step starts from (initialisation depends on the seed
// only). A run resumed without the file (the key was turned on later) rebuilds them.
void TrainingRun::save_initial_weights() {
  if (!rank0() || !config_.save_initial_weights) return;
  if (!resumed_) {
    write_checkpoint(paths_.initial_weights, weights_file(0));
  } else if (!std::filesystem::exists(paths_.initial_weights)) {
    Model<float> initial(config_.model);
    initial.initialize(config_.seed);
    Checkpoint c = weights_file(0);
    c.adam_steps = 0;
    c.best_val_loss = 1e300;
    c.best_step = -1;
    c.params = initial.params().values_to_host();
    write_checkpoint(paths_.initial_weights, c);
  }
}

void TrainingRun::write_final_results() {
  if (!rank0()) return;
  const auto [low, high] = bootstrap_interval(last_val_windows_);
  file_->set_final("val_loss", last_val_);
  file_->set_final("val_loss_ci_low", low);
  file_->set_final("val_loss_ci_high", high);
  file_->set_final_series("val_window_losses", last_val_windows_);  // for joint bootstraps
  file_->set_final("best_val_loss", best_val_);
  file_->set_final("best_step", double(best_step_));
  file_->set_final("train_windows_consumed",
                   double(config_.recipe.steps * config_.recipe.global_batch_sequences));
}

// A run that cannot go on: a stop signal checkpoints first; a fault of the machine leaves the
// run resumable from its last checkpoint; anything else is a recorded failure.
TrainResult TrainingRun::end_early(const Fault& fault, int64_t step) {
  switch (fault.kind) {
    case FaultKind::stop: {
      const Fault saved = collectively([&] { save_checkpoint(step); });
      if (saved) return end_early(saved, step);
      return finish({"interrupted", fault.reason + ", checkpoint written", step});
    }
    case FaultKind::environment: {
      TrainResult result{"interrupted", fault.reason, step};
      result.environment_fault = true;
      return finish(result);
    }
    default:
      return finish({"failed", fault.reason, step});
  }
}

// Records how the run ended (rank 0 writes, every rank agrees on the outcome) and closes the run
// file on every path: a file left open would be flushed again by HDF5 at exit.
TrainResult TrainingRun::finish(TrainResult result) {
  const Fault written = collectively([&] {
    if (!rank0()) return;
    if (!file_) {  // the run file could not even be opened
      if (result.status == "failed") record_failure(config_, comm_.size(), result.reason);
      return;
    }
    record_attention_paths();
    file_->set_attribute("status_reason", result.reason);
    file_->set_attribute("status_step", result.status_step);
    // What ran (train.cuda_graphs): "captured", "off", "eager after capture failed: ...",
    // "not applicable (cpu)".
    file_->set_attribute("cuda_graphs", model_.ops().capture_status());
    if (result.status == "interrupted") {  // stays NAME.h5.tmp with status running: resumable
      file_->flush();
      return;
    }
    file_->set_attribute("status", result.status);
    file_->set_attribute("end_time", iso_time_now());
    if (result.status == "completed") {
      // The final weights stay beside the run file (no optimizer state): the diagnostics load
      // them.
      write_checkpoint(paths_.weights, weights_file(config_.recipe.steps));
    }
    file_->publish();
    std::filesystem::remove(paths_.checkpoint);
    std::filesystem::remove(paths_.checkpoint_run_file);
  });
  file_.reset();
  if (written) {
    // The outcome could not be recorded: the run stays unfinished (NAME.h5.tmp) and resumable.
    if (result.status != "interrupted")
      result = {"interrupted", written.reason, result.status_step};
    result.environment_fault |= written.kind == FaultKind::environment;
  }
  return result;
}

TrainResult TrainingRun::run() {
  const Recipe& r = config_.recipe;
  DB_REQUIRE(r.global_batch_sequences % comm_.size() == 0,
             "train.global_batch (" + std::to_string(r.global_batch_sequences) +
                 ") must be a multiple of the ranks per run (" + std::to_string(comm_.size()) +
                 ")");
  if (const Fault opened = collectively([&] { start_or_resume(); }))
    return end_early(opened, start_step_);
  if (const Fault read = collectively([&] {
        open_data();
        if (rank0()) record_validation_coverage();
      }))
    return end_early(read, start_step_);
  if (const Fault saved = collectively([&] { save_initial_weights(); }))
    return end_early(saved, start_step_);
  // Curves start where training starts: the loss of the initial weights (once; a resumed run
  // has it in its file already).
  if (!resumed_)
    if (const Fault f = validate(0, false)) return end_early(f, 0);
  const double max_loss = std::log(double(config_.model.vocab_size)) + config_.divergence_margin;
  const double grad_scale =
      1.0 / (double(r.global_batch_sequences) * Model<float>::targets_per_window(r.seq_len));
  const auto t_start = Clock::now();
  for (int64_t step = start_step_; step < r.steps; ++step) {
    const auto t0 = Clock::now();
    double loss = 0, norm = 0;
    if (const Fault f = forward_backward_and_reduce(step, grad_scale, loss, norm))
      return end_early(f, step);
    loss = comm_.allreduce_sum(loss) * grad_scale;
    const double lr = learning_rate_at(r, step);
    const double clip = (r.grad_clip > 0 && norm > r.grad_clip) ? r.grad_clip / norm : 1.0;
    if (!std::isfinite(loss) || !std::isfinite(norm))
      return finish({"diverged",
                     std::string("non-finite ") + (std::isfinite(loss) ? "gradient norm" : "loss"),
                     step});
    if (step >= r.warmup_steps() && loss > max_loss) {
      char reason[128];
      std::snprintf(reason, sizeof reason, "loss %.3f above ln(V) + %.1f = %.3f", loss,
                    config_.divergence_margin, max_loss);
      return finish({"diverged", reason, step});
    }
    optimizer_.step(model_.params(), lr, clip);
    const double step_time = seconds_since(t0);
    const double tokens_per_second = r.tokens_per_step() / step_time;
    const int64_t done = step + 1;
    const double eta = seconds_since(t_start) / double(done - start_step_) * double(r.steps - done);
    // Faults of this step's bookkeeping are agreed once at its end, which also carries a stop
    // signal seen by any rank to all of them; validation agrees on its own.
    Fault f = capture_fault([&] {
      log_step(
          step,
          {step, done * r.tokens_per_step(), loss, lr, norm, step_time, tokens_per_second, 0.0},
          eta);
    });
    if (done % config_.val_interval == 0 && done < r.steps) {
      f = agree_on_fault(comm_, f);
      if (!f) f = validate(done, false);
    }
    if (!f && config_.checkpoint_interval > 0 && done % config_.checkpoint_interval == 0 &&
        done < r.steps)
      f = capture_fault([&] { save_checkpoint(done); });
    if (!f && done < r.steps && stop_requested()) f = {FaultKind::stop, "stop signal"};
    if (!f && done < r.steps && config_.stop_after_steps > 0 &&
        done - start_step_ >= config_.stop_after_steps)
      f = {FaultKind::stop, "train.stop_after_steps reached"};
    if (const Fault agreed = agree_on_fault(comm_, f)) return end_early(agreed, done);
  }
  if (const Fault f = validate(r.steps, true)) return end_early(f, r.steps);
  if (const Fault f = collectively([&] { write_final_results(); })) return end_early(f, r.steps);
  return finish({"completed", "", r.steps, last_val_, seconds_since(t_start)});
}

}  // namespace

RunPaths RunPaths::of(const RunConfig& config) {
  const std::string stem = (std::filesystem::path(config.out_dir) / config.run_name()).string();
  return {stem + ".h5",      stem + ".ckpt", stem + ".ckpt.run",
          stem + ".weights", stem + ".log",  stem + ".init.weights"};
}

TrainResult train_run(const RunConfig& config, const Communicator& comm, bool verbose) {
  const RunPaths paths = RunPaths::of(config);
  if (std::filesystem::exists(paths.run_file)) {
    if (verbose && comm.rank() == 0)
      std::printf("%s: finished before, skipped (%s)\n", config.run_name().c_str(),
                  paths.run_file.c_str());
    return {"skipped", "run file exists", -1, 0, 0};
  }
  // Collective over the run only; the backend's device was chosen at start-up (start_backends).
  const int threads = config.threads > 0 ? config.threads : comm.threads_per_rank_on_node();
  const auto t0 = Clock::now();
  TrainResult result;
  Backend* backend = nullptr;
  std::optional<TrainingRun> run;
  Fault fault = agree_on_fault(comm, capture_fault([&] {
                                 backend = &choose_backend(config.backend);
                                 backend->set_host_threads(threads);
                                 config.ops_options();  // before any file is made
                                 check_memory(config, *backend, comm.size());
                                 run.emplace(config, comm, verbose, *backend,
                                             validate_run_paths(config, *backend, comm));
                               }));
  if (!fault) fault = capture_fault([&] { result = run->run(); });
  // The next run of a sweep (another shape, perhaps) starts with the device's memory free.
  run.reset();
  if (backend) {
    const Fault released = capture_fault([&] { backend->release_cached_memory(); });
    if (!fault) fault = released;
  }
  if (fault) {
    // Only an error raised identically on every rank gets here (the run's own faults are agreed
    // inside it): a config the run cannot start with is recorded as failed.
    result = {"failed", fault.reason, -1, 0, 0};
    if (comm.rank() == 0) {
      try {
        record_failure(config, comm.size(), fault.reason);
      } catch (const std::exception&) {
      }
    }
  }
  result.seconds = seconds_since(t0);
  return result;
}

}  // namespace db
