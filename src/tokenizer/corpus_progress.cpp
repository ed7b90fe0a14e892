#include "tokenizer/corpus_progress.hpp"

#include <unistd.h>

#include "core/format.hpp"

namespace db::tokenizer {
namespace {

std::string human(double value, const char* unit) {
  char text[32];
  if (value >= 1e9)
    std::snprintf(text, sizeof text, "%.2fG%s", value / 1e9, unit);
  else if (value >= 1e6)
    std::snprintf(text, sizeof text, "%.1fM%s", value / 1e6, unit);
  else if (value >= 1e3)
    std::snprintf(text, sizeof text, "%.1fK%s", value / 1e3, unit);
  else
    std::snprintf(text, sizeof text, "%.0f%s", value, unit);
  return text;
}

}  // namespace

CorpusProgress::CorpusProgress(std::FILE* out, int64_t share_bytes, int ranks)
    : out_(out),
      share_bytes_(share_bytes),
      ranks_(ranks),
      in_place_(::isatty(::fileno(out)) == 1),
      interval_seconds_(in_place_ ? 0.5 : 30.0),
      start_(Clock::now()),
      last_(start_) {}

std::string CorpusProgress::line(int64_t bytes_done, int64_t tokens_done) const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const double fraction = share_bytes_ > 0 ? double(bytes_done) / double(share_bytes_) : 1.0;
  std::string text = "tokenize: ";
  if (share_bytes_ > 0) {
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.1f%%", 100.0 * fraction);
    text += percent;
    text += " of " + human(double(share_bytes_), "B");
  } else {  // standard input: its size is unknown
    text += human(double(bytes_done), "B") + " read";
  }
  if (ranks_ > 1) text += " (rank 0's share of " + std::to_string(ranks_) + ")";
  text += ", " + human(double(tokens_done), " tokens");
  if (elapsed > 0) text += ", " + human(tokens_done / elapsed, " tokens/s");
  if (fraction > 0 && fraction < 1)
    text += ", ETA " + format_duration(elapsed / fraction * (1 - fraction));
  return text;
}

void CorpusProgress::update(int64_t bytes_done, int64_t tokens_done) {
  const Clock::time_point now = Clock::now();
  if (std::chrono::duration<double>(now - last_).count() < interval_seconds_) return;
  last_ = now;
  printed_ = true;
  if (in_place_)
    std::fprintf(out_, "\r%s\033[K", line(bytes_done, tokens_done).c_str());
  else
    std::fprintf(out_, "%s\n", line(bytes_done, tokens_done).c_str());
  std::fflush(out_);
}

void CorpusProgress::finish(int64_t bytes_done, int64_t tokens_done) {
  if (!printed_) return;  // a run shorter than one interval needs no progress line
  if (in_place_)
    std::fprintf(out_, "\r%s\033[K\n", line(bytes_done, tokens_done).c_str());
  else
    std::fprintf(out_, "%s\n", line(bytes_done, tokens_done).c_str());
  std::fflush(out_);
}

}  // namespace db::tokenizer
