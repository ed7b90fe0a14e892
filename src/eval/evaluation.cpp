#include "eval/evaluation.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "data/manifest_check.hpp"
#include "data/token_data.hpp"
#include "data/validation_windows.hpp"
#include "io/checkpoint.hpp"
#include "model/model.hpp"
#include "model/model_on_backend.hpp"
#include "train/run_config.hpp"
#include "util/bootstrap.hpp"
#include "util/glob.hpp"

namespace db::eval {
namespace {

// The documents the targets of one window belong to: the document of token g is the number of
// end-of-document ids before g, so the targets (tokens 1..T−1) of a window that starts after
// `before` ids span documents first..last.
struct WindowDocuments {
  int64_t before = 0, first = 0, last = -1;
};

// One pass over the files up to the last evaluated window (every rank makes the same pass, so
// all agree on the documents without exchanging them).
std::vector<WindowDocuments> documents_of(const data::TokenDataset& data,
                                          const std::vector<int64_t>& windows, int32_t eod) {
  const int64_t last = *std::max_element(windows.begin(), windows.end());
  std::vector<int64_t> before(last + 1);
  std::vector<int32_t> tokens(data.window_tokens());
  int64_t count = 0;
  for (int64_t k = 0; k <= last; ++k) {
    before[k] = count;
    data.read_window(k, tokens);
    count += std::count(tokens.begin(), tokens.end(), eod);
  }
  std::vector<WindowDocuments> out;
  for (int64_t w : windows) {
    data.read_window(w, tokens);
    WindowDocuments d{before[w]};
    d.first = d.before + (tokens[0] == eod);
    d.last = d.before + std::count(tokens.begin(), tokens.end() - 1, eod);
    out.push_back(d);
  }
  return out;
}

Interval interval(int64_t units, int resamples, uint64_t seed, const std::vector<double>& numerator,
                  const std::vector<double>& denominator) {
  const BootstrapDraws draws(units, resamples, seed);
  return bootstrap_ratio(draws, 1, numerator, denominator);
}

}  // namespace

std::vector<int64_t> choose_windows(int64_t available, int64_t first, int64_t sample,
                                    uint64_t seed) {
  DB_REQUIRE(!(first > 0 && sample > 0), "give either --windows or --sample, not both");
  DB_REQUIRE(available >= 1, "the token files hold no full window");
  if (sample == 0) {
    const int64_t n = first > 0 ? first : available;
    DB_REQUIRE(n <= available, "--windows " + std::to_string(n) + ": the files hold only " +
                                   std::to_string(available) + " windows");
    // Spread evenly, exactly as training picks its validation windows: `--windows N` on a
    // run's validation files reproduces a run with train.val_windows = N.
    return data::validation_windows(available, n);
  }
  DB_REQUIRE(sample <= available, "--sample " + std::to_string(sample) + ": the files hold only " +
                                      std::to_string(available) + " windows");
  Rng rng(seed, "eval-windows");
  std::vector<bool> taken(available, false);
  std::vector<int64_t> windows;
  while (int64_t(windows.size()) < sample) {  // without replacement, in drawing order
    const int64_t k = int64_t(rng.below(uint64_t(available)));
    if (taken[k]) continue;
    taken[k] = true;
    windows.push_back(k);
  }
  return windows;
}

EvalResult evaluate(const EvalOptions& o, const Checkpoint& weights, const Communicator& comm) {
  const ModelConfig& config = weights.model;
  EvalResult r;
  r.seq_len = o.seq_len > 0 ? o.seq_len : int(weights.seq_len);
  DB_REQUIRE(r.seq_len >= 2, o.weights_file + " records no training seq_len: give --seq-len");
  const std::unique_ptr<Model<float>> loaded = model_on_backend(config, weights.params, o.backend);
  Model<float>& model = *loaded;

  data::TokenFileOptions token_options;
  token_options.format = data::parse_token_format(o.format);
  token_options.raw_dtype_bytes = o.dtype_bytes;
  token_options.vocab_size = config.vocab_size;
  const std::vector<std::string> files = expand_globs(o.data_globs);
  data::require_one_tokenization(files);
  const data::TokenDataset data(files, r.seq_len, token_options);
  r.available_windows = data.num_windows();
  r.windows = choose_windows(r.available_windows, o.first_windows, o.sample_windows, o.seed);
  const int64_t n = int64_t(r.windows.size());

  const bool by_document = o.eod_id >= 0;
  std::vector<WindowDocuments> spans;
  if (by_document) {
    DB_REQUIRE(o.eod_id < config.vocab_size, "--eod-id " + std::to_string(o.eod_id) +
                                                 " is outside the vocabulary of " +
                                                 std::to_string(config.vocab_size));
    spans = documents_of(data, r.windows, int32_t(o.eod_id));
    for (const WindowDocuments& s : spans)
      for (int64_t d = s.first; d <= s.last; ++d) r.documents.push_back(d);
    std::sort(r.documents.begin(), r.documents.end());
    r.documents.erase(std::unique(r.documents.begin(), r.documents.end()), r.documents.end());
  }
  // Each rank fills its own windows (window i on rank i mod ranks), zero elsewhere; the sums
  // give every rank the whole arrays, window losses exactly.
  r.window_losses.assign(n, 0.0);
  r.document_nll.assign(r.documents.size(), 0.0);
  r.document_targets.assign(r.documents.size(), 0.0);
  std::vector<int32_t> tokens(r.seq_len);
  std::vector<double> position_losses;
  const int64_t targets = Model<float>::targets_per_window(r.seq_len);
  for (int64_t i = comm.rank(); i < n; i += comm.size()) {
    data.read_window(r.windows[i], tokens);
    r.window_losses[i] = model.forward_loss(tokens.data(), 1, r.seq_len) / double(targets);
    if (!by_document) continue;
    model.last_position_losses(position_losses);
    int64_t document = spans[i].before;
    for (int64_t p = 0; p < targets; ++p) {  // target p is token p + 1
      document += tokens[p] == o.eod_id;
      const auto u =
          std::lower_bound(r.documents.begin(), r.documents.end(), document) - r.documents.begin();
      r.document_nll[u] += position_losses[p];
      r.document_targets[u] += 1;
    }
  }
  comm.allreduce_sum(std::span<double>(r.window_losses));
  comm.allreduce_sum(std::span<double>(r.document_nll));
  comm.allreduce_sum(std::span<double>(r.document_targets));

  double sum = 0;
  for (double loss : r.window_losses) sum += loss;
  r.mean_loss = sum / double(n);
  const Interval windows_ci =
      interval(n, o.bootstrap, o.seed, r.window_losses, std::vector<double>(n, 1.0));
  r.ci_low = windows_ci.low[0];
  r.ci_high = windows_ci.high[0];
  if (by_document) {
    double nll = 0, count = 0;
    for (size_t u = 0; u < r.documents.size(); ++u) {
      nll += r.document_nll[u];
      count += r.document_targets[u];
    }
    r.document_loss = nll / count;
    const Interval documents_ci = interval(int64_t(r.documents.size()), o.bootstrap, o.seed,
                                           r.document_nll, r.document_targets);
    r.document_ci_low = documents_ci.low[0];
    r.document_ci_high = documents_ci.high[0];
  }
  return r;
}

}  // namespace db::eval
