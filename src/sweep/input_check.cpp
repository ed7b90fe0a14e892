#include "sweep/input_check.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "data/manifest_check.hpp"
#include "data/token_dataset.hpp"
#include "util/glob.hpp"

namespace db::sweep {
namespace {

// Opens each file as the trainer would, but samples ids instead of reading them all. Appends a
// problem per bad file; returns the files that opened.
std::vector<std::string> check_files(const std::string& key, const std::vector<std::string>& globs,
                                     const data::TokenFileOptions& run, InputCheck& check,
                                     int64_t& tokens) {
  std::vector<std::string> files;
  if (globs.empty()) {
    check.problems.push_back(key + " is empty");
    return files;
  }
  for (const std::string& pattern : globs) {
    try {
      for (const std::string& f : expand_globs({pattern})) files.push_back(f);
    } catch (const std::exception& e) {
      check.problems.push_back(key + ": " + e.what());
    }
  }
  std::vector<std::string> opened;
  for (const std::string& path : files) {
    try {
      if (const auto manifest = data::manifest_describing(path))
        data::options_from_manifest(path, *manifest, run);  // vocabulary, dtype, layout
      data::TokenFileOptions unchecked = run;
      unchecked.vocab_size = 0;  // sampled below instead of read in full
      const data::TokenFile file = data::open_token_file(path, unchecked);
      const int64_t n = file.num_tokens();
      const int64_t samples = std::min(n, kSampledIds);
      for (int64_t k = 0; k < samples; ++k) {
        const int64_t index = samples > 1 ? k * (n - 1) / (samples - 1) : 0;
        const uint32_t id = file.token(index);
        DB_REQUIRE(int64_t(id) < run.vocab_size,
                   "token file '" + path + "': token id " + std::to_string(id) + " at index " +
                       std::to_string(index) + " >= model.vocab_size " +
                       std::to_string(run.vocab_size) +
                       " (sampled; data made by another tokenizer, or read with the wrong "
                       "data.dtype_bytes?)");
      }
      tokens += n;
      opened.push_back(path);
    } catch (const std::exception& e) {
      check.problems.push_back(key + ": " + e.what());
    }
  }
  return opened;
}

}  // namespace

InputCheck check_suite_inputs(const RunConfig& base) {
  InputCheck check;
  data::TokenFileOptions run;
  try {
    run.format = data::parse_token_format(base.data.format);
  } catch (const std::exception& e) {
    check.problems.push_back(std::string("data.format: ") + e.what());
    return check;
  }
  run.raw_dtype_bytes = base.data.dtype_bytes;
  run.vocab_size = base.model.vocab_size;
  int64_t val_tokens = 0;
  const std::vector<std::string> train =
      check_files("data.train_files", base.data.train_files, run, check, check.train_tokens);
  const std::vector<std::string> val =
      check_files("data.val_files", base.data.val_files, run, check, val_tokens);
  if (!check.ok()) return check;
  try {
    std::vector<std::string> all = train;
    all.insert(all.end(), val.begin(), val.end());
    data::require_one_tokenization(all);
  } catch (const std::exception& e) {
    check.problems.push_back(std::string("data.train_files and data.val_files: ") + e.what());
    return check;
  }
  data::TokenFileOptions unchecked = run;
  unchecked.vocab_size = 0;
  const int64_t T = base.recipe.seq_len;
  try {
    const data::TokenDataset training(train, T, unchecked);
  } catch (const std::exception& e) {
    check.problems.push_back(std::string("data.train_files: ") + e.what());
  }
  try {
    const data::TokenDataset held_out(val, T, unchecked);
    check.validation = data::validation_coverage(
        held_out, data::validation_windows(held_out.num_windows(), base.val_windows),
        data::end_of_document_id(val));
  } catch (const std::exception& e) {
    check.problems.push_back(std::string("data.val_files: ") + e.what());
  }
  return check;
}

}  // namespace db::sweep
