#include "data/validation_windows.hpp"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"
#include "data/shard_manifest.hpp"

namespace db::data {

std::vector<int64_t> validation_windows(int64_t available, int64_t count) {
  DB_REQUIRE(available >= 1, "the validation files hold no full window");
  DB_REQUIRE(count >= 1, "validation windows: " + std::to_string(count) + " asked (need >= 1)");
  const int64_t n = std::min(count, available);
  std::vector<int64_t> windows(n);
  // 128-bit product: available · k exceeds 64 bits only for absurd sizes, but costs nothing.
  for (int64_t k = 0; k < n; ++k) windows[k] = int64_t(static_cast<__int128>(k) * available / n);
  return windows;
}

ValidationCoverage validation_coverage(const TokenDataset& data,
                                       const std::vector<int64_t>& windows, int64_t eod_id) {
  ValidationCoverage c;
  const int64_t T = data.window_tokens();
  c.windows = int64_t(windows.size());
  c.tokens = c.windows * T;
  c.held_out_tokens = data.total_tokens();
  if (eod_id < 0) return c;
  // The document of token g is the number of end-of-document ids before g; window w's targets
  // (tokens 1 … T−1) span documents before + (tokens[0] == eod) … before + #eod in tokens[0, T−1).
  std::vector<int32_t> tokens(T);
  int64_t before = 0, covered = 0, last_covered = -1;
  int32_t last_token = -1;
  size_t next = 0;
  for (int64_t w = 0; w < data.num_windows(); ++w) {
    data.read_window(w, tokens);
    const int64_t eods = std::count(tokens.begin(), tokens.end(), int32_t(eod_id));
    if (next < windows.size() && windows[next] == w) {
      const int64_t first = std::max(before + (tokens[0] == eod_id), last_covered + 1);
      const int64_t last = before + std::count(tokens.begin(), tokens.end() - 1, int32_t(eod_id));
      if (last >= first) covered += last - first + 1;
      last_covered = std::max(last_covered, last);
      ++next;
    }
    before += eods;
    last_token = tokens.back();
  }
  // The tail shorter than a window is not validated on, but its documents are held out too.
  int64_t offset = data.num_windows() * T;
  for (size_t f = 0; f < data.num_files(); ++f) {
    const TokenFile& file = data.file(f);
    for (int64_t i = offset; i < file.num_tokens(); ++i) {
      last_token = int32_t(file.token(i));
      before += last_token == eod_id;
    }
    offset = std::max<int64_t>(0, offset - file.num_tokens());
  }
  c.documents = covered;
  c.held_out_documents = before + (last_token != eod_id ? 1 : 0);
  return c;
}

int64_t end_of_document_id(const std::vector<std::string>& files) {
  if (files.empty()) return -1;
  const std::optional<ShardManifest> manifest = manifest_describing(files.front());
  return manifest ? manifest->eod_id : -1;
}

std::string thin_validation_warning(const ValidationCoverage& c) {
  const bool few_documents = c.documents >= 0 && c.documents < kThinDocuments;
  const bool small_share = c.token_fraction() < kThinFraction;
  if (!few_documents && !small_share) return "";
  char share[160];
  std::snprintf(share, sizeof share, "%lld windows = %lld tokens (%.2f%% of the %lld held out)",
                (long long)c.windows, (long long)c.tokens, 100 * c.token_fraction(),
                (long long)c.held_out_tokens);
  std::string text = std::string("validation covers ") + share;
  if (c.documents >= 0)
    text += " from " + std::to_string(c.documents) + " of " + std::to_string(c.held_out_documents) +
            " documents";
  return text + ": below " + std::to_string(kThinDocuments) +
         " documents or 1% of the held-out tokens a loss difference between designs may be the "
         "windows', not the designs' (raise train.val_windows)";
}

}  // namespace db::data
