// The progress line of `depthbench tokenize` on stderr: bytes read of the input on disk, tokens
// per second and an ETA. On a terminal one line is rewritten in place about twice a second;
// otherwise (a batch log) a plain line is printed every 30 s. Printed by rank 0 about its own
// share: ranks get equal shares of the input bytes, so its fraction done is the run's.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace db::tokenizer {

class CorpusProgress {
 public:
  // `share_bytes`: the input bytes this rank reads; `ranks`: how many read alongside it.
  CorpusProgress(std::FILE* out, int64_t share_bytes, int ranks);
  // Prints a line when the interval has passed since the last one.
  void update(int64_t bytes_done, int64_t tokens_done);
  void finish(int64_t bytes_done, int64_t tokens_done);  // a last line; ends the in-place line
  // e.g. "tokenize: 41.0% of 1.2 GB, 3.1M tokens, 1.4M tokens/s, ETA 2m10s"
  std::string line(int64_t bytes_done, int64_t tokens_done) const;

 private:
  using Clock = std::chrono::steady_clock;
  std::FILE* out_;
  int64_t share_bytes_;
  int ranks_;
  bool in_place_;
  double interval_seconds_;
  Clock::time_point start_, last_;
  bool printed_ = false;
};

}  // namespace db::tokenizer
