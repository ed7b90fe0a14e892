// A list of token files seen as one stream, cut into contiguous windows (spec
// doc/data.md: "Many files form one dataset; they are concatenated and cut into contiguous
// T-token windows (the remainder dropped)"). Windows may span a file boundary, so no token is
// wasted except the final remainder.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/token_file.hpp"

namespace db::data {

class TokenDataset {
 public:
  // Opens and validates every file, against its manifest when one describes it (see
  // open_token_file). Throws db::Error when the list is empty,
  // window_tokens < 1, or all files together hold fewer than window_tokens tokens.
  TokenDataset(std::vector<std::string> paths, int64_t window_tokens,
               const TokenFileOptions& options);

  // The files in concatenation order, as given: a run records them (doc/data.md).
  const std::vector<std::string>& files() const { return paths_; }
  const TokenFile& file(std::size_t index) const { return files_.at(index); }
  std::size_t num_files() const { return files_.size(); }

  int64_t window_tokens() const { return window_tokens_; }
  int64_t total_tokens() const { return file_start_.back(); }
  // floor(total_tokens / window_tokens); the remainder of the concatenation is dropped.
  int64_t num_windows() const { return total_tokens() / window_tokens_; }

  // Copies tokens [index·W, (index+1)·W) of the concatenation into `out` (size W).
  void read_window(int64_t index, std::span<int32_t> out) const;

 private:
  std::vector<std::string> paths_;
  std::vector<TokenFile> files_;
  std::vector<int64_t> file_start_;  // file_start_[i]: global index of file i's first token;
                                     // back() is the total
  int64_t window_tokens_ = 0;
};

}  // namespace db::data
