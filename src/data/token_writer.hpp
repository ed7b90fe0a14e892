// Writers of token files, used by the tokenizer (spec doc/data.md). Every writer is
// atomic like the run file and checkpoints: it writes PATH.tmp, fsyncs it, and renames it to
// PATH, so a crash never leaves a file that looks complete (STYLE.md: atomic writes).
// Each refuses, before writing anything, an id that does not fit the dtype.
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace db::data {

// OLMo-core layout: the ids as a flat, headerless little-endian array of dtype_bytes (2 = uint16,
// 4 = uint32) each.
void write_olmo_raw(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes);

// NumPy .npy version 1.0, 1-D, descr '<u2' or '<u4', loadable with numpy.load.
void write_npy(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes);

// llm.c shard: 256 int32 header words (magic 20240520 with version 1 for uint16, 20240801 with
// version 7 for uint32, as llm.c's dev/data/data_common.py writes them; token count), then the
// ids. The count is an int32, so at most 2^31 - 1 tokens.
void write_llmc_bin(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes);

}  // namespace db::data
