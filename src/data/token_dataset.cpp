#include "data/token_dataset.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "data/manifest_check.hpp"

namespace db::data {

TokenDataset::TokenDataset(std::vector<std::string> paths, int64_t window_tokens,
                           const TokenFileOptions& options)
    : paths_(std::move(paths)), window_tokens_(window_tokens) {
  DB_REQUIRE(!paths_.empty(), "token dataset: no files given");
  DB_REQUIRE(window_tokens_ >= 1,
             "token dataset: window of " + std::to_string(window_tokens_) + " tokens (need >= 1)");
  files_.reserve(paths_.size());
  file_start_.reserve(paths_.size() + 1);
  file_start_.push_back(0);
  for (const std::string& path : paths_) {
    files_.push_back(open_token_file(path, options));
    file_start_.push_back(file_start_.back() + files_.back().num_tokens());
  }
  DB_REQUIRE(num_windows() >= 1,
             "token dataset: " + std::to_string(total_tokens()) + " tokens in " +
                 std::to_string(paths_.size()) + " file(s), fewer than one window of " +
                 std::to_string(window_tokens_) + " tokens (first file '" + paths_.front() + "')");
}

void TokenDataset::read_window(int64_t index, std::span<int32_t> out) const {
  DB_REQUIRE(index >= 0 && index < num_windows(), "token dataset: window " + std::to_string(index) +
                                                      " out of range (" +
                                                      std::to_string(num_windows()) + " windows)");
  DB_REQUIRE(static_cast<int64_t>(out.size()) == window_tokens_,
             "token dataset: output of " + std::to_string(out.size()) + " tokens for a window of " +
                 std::to_string(window_tokens_));
  int64_t global = index * window_tokens_;
  // The file holding `global`: the last file whose start is <= global (empty files are refused
  // at open, so starts are strictly increasing).
  std::size_t file_index =
      std::upper_bound(file_start_.begin(), file_start_.end(), global) - file_start_.begin() - 1;
  std::size_t written = 0;
  while (written < out.size()) {
    const TokenFile& file = files_[file_index];
    const int64_t local = global - file_start_[file_index];
    const int64_t take =
        std::min<int64_t>(file.num_tokens() - local, static_cast<int64_t>(out.size() - written));
    file.read_tokens(local, out.subspan(written, static_cast<std::size_t>(take)));
    written += static_cast<std::size_t>(take);
    global += take;
    ++file_index;
  }
}

}  // namespace db::data
