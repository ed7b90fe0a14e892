// `depthbench diagnose RUN.h5` (or `--hf DIR`): layer diagnostics of a completed run or of a
// LLaMA-family checkpoint (doc/diagnostics.md), their independent passes spread over the ranks.
#include <mpi.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>

#include "app/command_line.hpp"
#include "app/commands.hpp"
#include "app/registry_listing.hpp"
#include "core/communicator.hpp"
#include "core/error.hpp"
#include "diag/diagnose.hpp"
#include "diag/diagnostics.hpp"
#include "ops/backend.hpp"

namespace db::app {

int run_diagnose_command(int argc, char** argv) {
  namespace po = boost::program_options;
  diag::DiagnoseOptions options;
  diag::DiagSettings& s = options.settings;
  std::string only, hf_out;
  bool quiet = false, list = false, json = false;
  uint64_t seed = s.seed;
  po::options_description described(
      "usage: depthbench diagnose RUN.h5 [options]\n"
      "       depthbench diagnose --hf DIR --tokens GLOB [--out FILE.h5] [options]\n"
      "       depthbench diagnose --list [--json]\n\n"
      "Loads the final weights of a completed run (NAME.weights beside NAME.h5) and writes\n"
      "the diagnostics into NAME.h5's diagnostics/ group; or loads a LLaMA-family Hugging Face\n"
      "checkpoint folder and writes them into FILE.h5. Diagnostics: " +
      [] {
        std::string names;
        for (const std::string& n : diag::diagnostic_names())
          names += (names.empty() ? "" : ", ") + n;
        return names;
      }() +
      "\n\noptions");
  described.add_options()("help,h", "print this help")(
      "list", po::bool_switch(&list),
      "list the diagnostics with their options, defaults and datasets, and stop")(
      "json", po::bool_switch(&json), "--list: as JSON, for programs")(
      "run", po::value(&options.run_file),
                                                       "the run file NAME.h5 (positional)")(
      "hf", po::value(&options.hf_dir), "a Hugging Face checkpoint folder instead of a run")(
      "out", po::value(&hf_out), "--hf: the result file (default: DIR's name + .diag.h5 here)")(
      "only", po::value(&only), "comma-separated diagnostics to run (default: all that apply)")(
      "tokens", po::value(&options.token_globs)->multitoken(),
      "token files (globs) to draw windows from (default: the run's validation files)")(
      "windows-file", po::value(&options.token_globs)->multitoken(), "same as --tokens")(
      "window-len", po::value(&s.window_len)->default_value(s.window_len),
      "tokens per window T_d (clamped to the run's seq_len)")(
      "seed", po::value(&seed)->default_value(seed), "seed of the window draws and bootstraps")(
      "bootstrap", po::value(&s.bootstrap)->default_value(s.bootstrap), "bootstrap resamples B")(
      "eval-context", po::value(&s.eval_context)->default_value(0),
      "longest evaluation sequence in tokens (0 = the run's seq_len)")(
      "tokenizer", po::value(&options.tokenizer),
      "tokenizer of the evaluation prompts: 'bytes' or a tokenizer.json (default: bytes when "
      "the run's vocabulary is 257)")("threads", po::value(&options.threads)->default_value(0),
                                      "CPU threads per rank (0 = cores / ranks on the node)")(
      "quiet", po::bool_switch(&quiet),
      "no estimate or progress lines: only the table of what was written")(
      "backend", po::value(&options.backend),
      ("where the forward passes run: " + backend_choices() +
       " (default: the run's train.backend; auto for --hf)")
          .c_str());
  // Each diagnostic's own options, as it declares them (src/diag/*.cpp).
  std::map<std::string, std::string> diagnostic_values;  // flag → text as given
  for (const diag::Diagnostic& d : diag::all_diagnostics())
    for (const diag::DiagnosticOption& o : d.options) {
      auto* value = po::value(&diagnostic_values[o.flag]);
      if (const std::string current = o.value(s); !current.empty()) value->default_value(current);
      described.add_options()(o.flag.c_str(), value, (o.help + " [" + d.name + "]").c_str());
    }
  po::positional_options_description positional;
  positional.add("run", 1);
  po::variables_map vm;
  if (const auto stop = parse_command_line("diagnose", argc, argv, described, vm, &positional))
    return *stop;
  if (list) {
    if (Communicator::world().rank() == 0)
      std::fputs((json ? diagnostics_json() : diagnostics_text()).c_str(), stdout);
    return 0;
  }
  DB_REQUIRE(!json, "--json goes with --list");
  DB_REQUIRE(options.run_file.empty() != options.hf_dir.empty(), "give either RUN.h5 or --hf DIR");
  if (!options.hf_dir.empty() && hf_out.empty()) {
    std::filesystem::path dir = std::filesystem::absolute(options.hf_dir).lexically_normal();
    if (dir.filename().empty()) dir = dir.parent_path();  // "DIR/"
    hf_out = dir.filename().string() + ".diag.h5";
  }
  if (!options.hf_dir.empty()) options.run_file = hf_out;
  s.seed = seed;
  options.verbose = !quiet;
  for (const diag::Diagnostic& d : diag::all_diagnostics())
    for (const diag::DiagnosticOption& o : d.options)
      if (vm.count(o.flag) && !vm[o.flag].defaulted()) o.set(s, diagnostic_values[o.flag]);
  size_t start = 0;
  while (start < only.size()) {
    const size_t end = std::min(only.find(',', start), only.size());
    if (end > start) options.only.push_back(only.substr(start, end - start));
    start = end + 1;
  }

  const Communicator world = Communicator::world();
  const diag::DiagnoseReport report = diag::run_diagnostics(options, world);
  if (world.rank() == 0) {
    std::printf("\n%-18s %14s %10s  datasets\n", "diagnostic", "forward passes", "seconds");
    for (const auto& e : report.entries) {
      if (!e.skipped.empty()) {
        std::printf("%-18s %14s %10s  skipped: %s\n", e.name.c_str(), "-", "-", e.skipped.c_str());
        continue;
      }
      std::printf("%-18s %14lld %10.2f  %zu\n", e.name.c_str(), (long long)e.forward_passes,
                  e.seconds, e.datasets.size());
    }
    std::printf("written to %s (diagnostics/)\n", options.run_file.c_str());
  }
  return 0;
}

}  // namespace db::app
