// Token data as the trainer reads it (spec: doc/data.md). One include for the whole data
// layer; each part lives in its own file:
//   token_format.hpp   TokenFormat, TokenFileOptions, format detection
//   mapped_file.hpp    RAII read-only mmap of a file
//   npy_header.hpp     NumPy .npy header parsing and writing
//   token_file.hpp     one validated, memory-mapped token file
//   shard_manifest.hpp the manifest.ini tokenize writes beside its shards
//   manifest_check.hpp opening a file as its manifest says, contradictions refused
//   token_dataset.hpp  files concatenated and cut into contiguous windows
//   window_order.hpp   deterministic per-epoch shuffle of window indices
//   validation_windows.hpp the validation windows, spread over the held-out set, and their coverage
//   token_writer.hpp   atomic writers of OLMo raw, .npy and llm.c files
//   fortune_corpus.hpp the byte-level demo corpus from fortune files
#pragma once
#include "data/fortune_corpus.hpp"
#include "data/manifest_check.hpp"
#include "data/mapped_file.hpp"
#include "data/npy_header.hpp"
#include "data/shard_manifest.hpp"
#include "data/token_dataset.hpp"
#include "data/token_file.hpp"
#include "data/token_format.hpp"
#include "data/token_writer.hpp"
#include "data/window_order.hpp"
