// The three on-disk layouts of token ids (spec doc/data.md, "Token data the trainer must
// read") and how a file's layout is recognised from its first bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace db::data {

// How a file's bytes are laid out. `auto_detect` decides from the content: `.npy` magic,
// llm.c magic, else OLMo raw with `raw_dtype_bytes`.
enum class TokenFormat { auto_detect, olmo_raw, npy, llmc_bin };

struct TokenFileOptions {
  TokenFormat format = TokenFormat::auto_detect;
  // OLMo raw arrays: 2 (uint16) or 4 (uint32); 0 = not set: the dtype a name ending in .u16 or
  // .u32 declares, else 2 (OLMo's default).
  int raw_dtype_bytes = 0;
  int64_t vocab_size = 0;  // every id must be < vocab_size (checked when > 0)
};

std::string to_string(TokenFormat format);                // "auto", "olmo", "npy", "llmc"
TokenFormat parse_token_format(const std::string& name);  // inverse of to_string

// llm.c shards: 256 little-endian int32 header words, then the tokens (dev/data/data_common.py).
inline constexpr int32_t llmc_magic_uint16 = 20240520;  // GPT-2 shards, uint16 tokens
inline constexpr int32_t llmc_magic_uint32 = 20240801;  // Llama-3 shards, uint32 tokens
inline constexpr int64_t llmc_header_words = 256;
inline constexpr int64_t llmc_header_bytes = llmc_header_words * 4;

// The extension a file of this layout gets from `depthbench tokenize`: ".npy" for NumPy files,
// ".bin" for llm.c shards (llm.c's own name), ".u16"/".u32" for headerless arrays, whose name is
// all that says their dtype.
std::string token_file_extension(TokenFormat format, int dtype_bytes);

// The dtype a raw file's name declares: 2 for *.u16, 4 for *.u32, 0 for any other name.
int raw_dtype_from_name(const std::string& path);

// The format the content shows: npy magic, then llm.c magic in the first int32 word, else OLMo
// raw (which has no header and so cannot be recognised). Never returns auto_detect.
TokenFormat detect_token_format(std::span<const std::byte> bytes);

}  // namespace db::data
