// Token data as the trainer reads it (spec: data-and-files.md). Files are memory-mapped; a
// dataset concatenates its files and cuts them into contiguous windows of `window_tokens`.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace db::data {

// How a file's bytes are laid out. `auto_detect` decides from the content: `.npy` magic,
// llm.c magic, else OLMo raw with `raw_dtype_bytes`.
enum class TokenFormat { auto_detect, olmo_raw, npy, llmc_bin };

struct TokenFileOptions {
  TokenFormat format = TokenFormat::auto_detect;
  int raw_dtype_bytes = 2;   // OLMo raw arrays: 2 (uint16) or 4 (uint32)
  int64_t vocab_size = 0;    // every id must be < vocab_size (checked when > 0)
};

std::string to_string(TokenFormat format);
TokenFormat parse_token_format(const std::string& name);  // "auto", "olmo", "npy", "llmc"
