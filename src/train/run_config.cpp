#include "train/run_config.hpp"

#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <utility>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/recompute.hpp"
#include "model/residual/registry.hpp"
#include "ops/backend.hpp"
#include "train/path_validation.hpp"

namespace db {
namespace po = boost::program_options;

namespace {

// One config key bound to a field: how to set it from text and how to print it.
struct Key {
  std::string name, help;
  std::function<void(const std::string&)> set;
  std::function<std::string()> get;
};

template <class T>
T parse_number(const std::string& key, const std::string& text) {
  try {
    size_t used = 0;
    T value;
    if constexpr (std::is_floating_point_v<T>)
      value = T(std::stod(text, &used));
    else {
      const long long wide = std::stoll(text, &used);
      if (!std::in_range<T>(wide)) throw std::out_of_range(text);
      value = T(wide);
    }
    if (used != text.size()) throw std::invalid_argument(text);
    if constexpr (std::is_floating_point_v<T>)
      if (!std::isfinite(value)) throw std::invalid_argument(text);
    return value;
  } catch (const std::exception&) {
    throw Error(key + ": '" + text + "' is not a " +
                (std::is_floating_point_v<T> ? "finite number" : "whole number in range"));
  }
}

// The allowed values of a number key, checked where the key is read so the message names the
// key, the value and the range (a bad value must never surface later as a crash or divergence).
struct Range {
  double low = -HUGE_VAL, high = HUGE_VAL;
  bool low_open = false;  // low itself excluded (e.g. a learning rate > 0)

  static Range at_least(double low) { return {low, HUGE_VAL, false}; }
  static Range above(double low) { return {low, HUGE_VAL, true}; }
  static Range between(double low, double high) { return {low, high, false}; }
  bool contains(double v) const { return (low_open ? v > low : v >= low) && v <= high; }
  std::string text() const {
    const std::string lo = format_number(low);
    if (high == HUGE_VAL) return std::string(low_open ? "> " : "≥ ") + lo;
    return (low_open ? "in (" : "in [") + lo + ", " + format_number(high) + "]";
  }
  static std::string format_number(double v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%g", v);
    return buffer;
  }
};

std::string format_double(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.10g", v);
  return buffer;
}

template <class T>
Key number_key(const std::string& name, T& field, const std::string& help, Range range = {}) {
  return {name, help,
          [&field, name, range](const std::string& t) {
            const T value = parse_number<T>(name, t);
            if (!range.contains(double(value)))
              throw Error(name + " = " + t + ": must be " + range.text());
            field = value;
          },
          [&field] {
            if constexpr (std::is_floating_point_v<T>)
              return format_double(field);
            else
              return std::to_string(field);
          }};
}

Key text_key(const std::string& name, std::string& field, const std::string& help) {
  return {name, help, [&field](const std::string& t) { field = t; }, [&field] { return field; }};
}

// A name that becomes part of a file name: it must stay inside the output directory.
Key name_key(const std::string& name, std::string& field, const std::string& help) {
  return {name, help,
          [&field, name](const std::string& t) {
            if (t.find('/') != std::string::npos || t.find('\\') != std::string::npos || t == "." ||
                t == "..")
              throw Error(name + " = '" + t + "': must be a plain name without path separators");
            field = t;
          },
          [&field] { return field; }};
}

Key bool_key(const std::string& name, bool& field, const std::string& help) {
  return {name, help,
          [&field, name](const std::string& t) {
            if (t == "true" || t == "1" || t == "yes")
              field = true;
            else if (t == "false" || t == "0" || t == "no")
              field = false;
            else
              throw Error(name + ": '" + t + "' is not true/false");
          },
          [&field] { return std::string(field ? "true" : "false"); }};
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  for (char c : text + " ") {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n') {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return items;
}

Key list_key(const std::string& name, std::vector<std::string>& field, const std::string& help) {
  return {name, help, [&field](const std::string& t) { field = split_list(t); },
          [&field] {
            std::string s;
            for (const auto& f : field) s += (s.empty() ? "" : " ") + f;
            return s;
          }};
}

std::vector<Key> keys_of(RunConfig& c) {
  ModelConfig& m = c.model;
  Recipe& r = c.recipe;
  std::vector<Key> keys = {
      text_key("model.arch", m.arch, "residual design: " + design_names()),
      number_key("model.n_layer", m.n_layer, "number of blocks L", Range::between(1, 100000)),
      number_key("model.d_model", m.d_model, "model width d", Range::between(1, 1 << 20)),
      number_key("model.n_head", m.n_head, "query heads H (head_dim = d / H)",
                 Range::between(1, 1 << 16)),
      number_key("model.n_kv_head", m.n_kv_head, "key/value heads (0 = n_head, MHA)",
                 Range::between(0, 1 << 16)),
      number_key("model.ff", m.ff, "SwiGLU hidden size (0 = ceil16(8d/3))",
                 Range::between(0, 1 << 22)),
      number_key("model.vocab_size", m.vocab_size, "vocabulary size V", Range::between(2, 1 << 30)),
      bool_key("model.qk_norm", m.qk_norm, "RMSNorm on q and k per head before RoPE"),
      number_key("model.rope_theta", m.rope_theta, "RoPE base θ", Range::above(1)),
      number_key("model.norm_eps", m.norm_eps, "RMSNorm epsilon", Range::above(0)),
      number_key("model.init_std", m.init_std, "std of the truncated-normal init", Range::above(0)),
      number_key("train.learning_rate", r.learning_rate, "peak learning rate", Range::above(0)),
      number_key("train.min_lr_ratio", r.min_lr_ratio, "final learning rate / peak",
                 Range::between(0, 1)),
      number_key("train.warmup_fraction", r.warmup_fraction, "fraction of steps of linear warm-up",
                 Range::between(0, 1)),
      number_key("train.beta1", r.beta1, "AdamW β1", Range::between(0, 0.999999)),
      number_key("train.beta2", r.beta2, "AdamW β2", Range::between(0, 0.999999)),
      number_key("train.adam_eps", r.adam_eps, "AdamW epsilon", Range::above(0)),
      number_key("train.weight_decay", r.weight_decay, "decoupled weight decay",
                 Range::at_least(0)),
      number_key("train.grad_clip", r.grad_clip, "global gradient-norm clip (0 = off)",
                 Range::at_least(0)),
      number_key("train.steps", r.steps, "optimizer steps", Range::at_least(1)),
      number_key("train.global_batch", r.global_batch_sequences, "sequences per optimizer step",
                 Range::at_least(1)),
      number_key("train.micro_batch", r.micro_batch_sequences,
                 "sequences per forward pass per rank", Range::at_least(1)),
      number_key("train.seq_len", r.seq_len, "tokens per sequence T", Range::between(2, 1 << 24)),
      number_key("train.seed", c.seed, "seed of the init and the data order"),
      number_key("train.threads", c.threads, "CPU threads per rank (0 = cores / local ranks)",
                 Range::between(0, 4096)),
      number_key("train.reduce_bucket_mb", c.reduce_bucket_mb,
                 "MiB of gradients per all-reduce started while the last micro-batch's backward "
                 "goes on (0 = one all-reduce after the backward)",
                 Range::at_least(0)),
      number_key("train.log_interval", c.log_interval, "steps between progress lines",
                 Range::at_least(1)),
      number_key("train.val_interval", c.val_interval, "steps between validations",
                 Range::at_least(1)),
      number_key("train.val_windows", c.val_windows, "validation windows per evaluation",
                 Range::at_least(1)),
      number_key("train.divergence_margin", c.divergence_margin,
                 "diverged when loss > ln(V) + margin", Range::above(0)),
      number_key("train.checkpoint_interval", c.checkpoint_interval,
                 "steps between checkpoints (0 = none)", Range::at_least(0)),
      number_key("train.stop_after_steps", c.stop_after_steps,
                 "checkpoint and stop (resumable, exit 75) after this many steps of this "
                 "invocation, e.g. to fit a batch slot (0 = never)",
                 Range::at_least(0)),
      bool_key("train.save_initial_weights", c.save_initial_weights,
               "write NAME.init.weights before the first step (sweeps: default true)"),
      text_key("train.backend", c.backend, backend_choices()),
      text_key("train.precision", c.precision,
               "CUDA arithmetic: bf16 (tensor-core products, fp32 accumulation) | fp32 (parity); "
               "the CPU computes in fp32"),
      {"train.attention",
       std::string("CUDA attention path: ") + attention_path_choices() +
           " (auto: cuDNN, else our flash kernel, else the fp32 reference; reference in fp32 "
           "runs); the CPU has one attention and ignores it",
       [&c](const std::string& t) {
         parse_attention_path(t);  // a bad value fails here, before anything runs
         c.attention = t;
       },
       [&c] { return c.attention; }},
      {"train.recompute",
       "activations kept for the backward: none (all) | blocks (each block's input; the "
       "backward re-runs the block's forward first: same gradients, ≈ +33% FLOPs, less memory)",
       [&c](const std::string& t) {
         parse_recompute(t);  // a bad value fails here, before anything runs
         c.recompute = t;
       },
       [&c] { return c.recompute; }},
      {"train.cuda_graphs",
       std::string(
           "CUDA: replay each micro-batch shape's forward and backward from a CUDA graph: ") +
           cuda_graphs_choices() +
           " (auto: eager from the first failed capture on, with one line saying why); the CPU "
           "ignores it",
       [&c](const std::string& t) {
         parse_cuda_graphs(t);  // a bad value fails here, before anything runs
         c.cuda_graphs = t;
       },
       [&c] { return c.cuda_graphs; }},
      {"train.activation_dtype",
       std::string("what the attention and FFN cores store their activations and gradients in: ") +
           activation_dtype_choices() +
           " (bf16: fp32 arithmetic on bf16-stored values, about half the activation memory; "
           "the CPU runs it too; auto: bf16 on a GPU in bf16 precision, else fp32)",
       [&c](const std::string& t) {
         parse_activation_dtype(t);  // a bad value fails here, before anything runs
         c.activation_dtype = t;
       },
       [&c] { return c.activation_dtype; }},
      {"train.fused_kernels",
       "on | off: run the memory-bound pairs the model has a fused op for as one kernel (the "
       "residual add with the next norm (with Sandwich-LN's branch norm), the HC/mHC combine "
       "with its norm, their mix with the next norm's statistics and their backward passes, the "
       "AttnRes depth softmax in one read of its sources, QK-norm with RoPE); "
       "off: the separate ops, the same math",
       [&c](const std::string& t) {
         parse_fused_kernels(t);  // a bad value fails here, before anything runs
         c.fused_kernels = t;
       },
       [&c] { return c.fused_kernels; }},
      {"train.state_dtype",
       std::string("what HC/mHC's streams, AttnRes's sources and their gradients are rounded to "
                   "between sublayers: ") +
           state_dtype_choices() +
           " (bf16: rounded, arithmetic fp32, kept in fp32 buffers for now: it measures what "
           "bf16 state does to training; only " +
           state_rounding_design_names() + " have such state)",
       [&c](const std::string& t) {
         parse_state_dtype(t);  // a bad value fails here, before anything runs
         c.state_dtype = t;
       },
       [&c] { return c.state_dtype; }},
      {"train.validate",
       std::string("check the fast paths a GPU run uses (attention, bf16 storage, fused kernels, "
                   "CUDA graphs) against the reference paths on its first micro-batch: ") +
           validate_mode_choices() +
           " (on: a path out of tolerance is switched off, with one line; strict: the run is "
           "refused; the CPU has only reference paths)",
       [&c](const std::string& t) {
         parse_validate_mode(t);  // a bad value fails here, before anything runs
         c.validate = t;
       },
       [&c] { return c.validate; }},
      list_key("data.train_files", c.data.train_files, "training token files (globs)"),
      list_key("data.val_files", c.data.val_files, "validation token files (globs)"),
      text_key("data.format", c.data.format, "auto | olmo | npy | llmc"),
      number_key("data.dtype_bytes", c.data.dtype_bytes,
                 "headerless token width: 2 or 4; 0 = from the manifest or .u16/.u32 name, else 2",
                 Range::between(0, 4)),
      text_key("output.dir", c.out_dir, "directory of run files"),
      name_key("output.name", c.name, "run name (default: derived)"),
      name_key("output.suite", c.suite, "suite name recorded in the run file"),
  };
  // Design knobs: model.<key>, stored by name; missing keys take the design's default.
  for (const DesignInfo& design : all_designs())
    for (const DesignOption& option : design.options) {
      const std::string key = option.key;
      std::map<std::string, std::string>& opts = m.design_options;
      keys.push_back({"model." + key,
                      option.help + " (" + design.name + ", " + describe_values(option.values) +
                          ", default " + option.default_value + ")",
                      [&opts, key, option](const std::string& t) {
                        // The range comes from the design's registry entry.
                        const std::string problem = option_value_problem(option, t);
                        DB_REQUIRE(problem.empty(), "model." + key + ": " + problem);
                        opts[key] = t;
                      },
                      [&opts, key, option] {
                        auto it = opts.find(key);
                        return it == opts.end() ? option.default_value : it->second;
                      }});
    }
  return keys;
}

po::options_description describe(const std::vector<Key>& keys) {
  po::options_description desc("config keys (INI [section] key = value, or --section.key=value)");
  for (const Key& k : keys)
    desc.add_options()(k.name.c_str(), po::value<std::string>(), k.help.c_str());
  return desc;
}

std::string valid_key_list(const std::vector<Key>& keys) {
  std::string s;
  for (const Key& k : keys) s += (s.empty() ? "" : ", ") + k.name;
  return s;
}

void apply_values(const po::variables_map& vm, std::vector<Key>& keys) {
  for (Key& k : keys)
    if (vm.count(k.name)) k.set(vm[k.name].as<std::string>());
}

void parse_ini_stream(std::istream& in, const std::string& source, std::vector<Key>& keys,
                      po::variables_map& vm) {
  try {
    po::store(po::parse_config_file(in, describe(keys), /*allow_unregistered=*/false), vm);
  } catch (const po::unknown_option& e) {
    throw Error(source + ": unknown key '" + e.get_option_name() +
                "' (valid: " + valid_key_list(keys) + ")");
  } catch (const po::error& e) {
    throw Error(source + ": " + e.what());
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> run_config_keys() {
  RunConfig c;
  std::vector<std::pair<std::string, std::string>> out;
  for (const Key& k : keys_of(c)) out.emplace_back(k.name, k.help);
  return out;
}

bool parse_run_config(int argc, char** argv, RunConfig& config, const std::string& usage) {
  std::vector<Key> keys = keys_of(config);
  po::options_description general("options");
  general.add_options()("help,h", "print this help")("config,c", po::value<std::string>(),
                                                     "INI file with the run config");
  po::options_description all;
  all.add(general).add(describe(keys));
  po::variables_map cli;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).run(), cli);
  } catch (const po::unknown_option& e) {
    throw Error("unknown option '" + e.get_option_name() + "' (valid: --config, " +
                valid_key_list(keys) + ")");
  } catch (const po::error& e) {
    throw Error(e.what());
  }
  if (cli.count("help")) {
    std::cout << usage << "\n" << all << "\n";
    return false;
  }
  po::variables_map merged;
  if (cli.count("config")) {
    const std::string path = cli["config"].as<std::string>();
    std::ifstream in(path);
    DB_REQUIRE(in, "cannot open config file " + path);
    parse_ini_stream(in, path, keys, merged);
  }
  apply_values(merged, keys);
  apply_values(cli, keys);  // the command line wins over the file
  config.model.validate();
  find_design(config.model.arch);
  return true;
}

RunConfig parse_run_config_text(const std::string& ini_text) {
  RunConfig config;
  std::vector<Key> keys = keys_of(config);
  std::istringstream in(ini_text);
  po::variables_map vm;
  parse_ini_stream(in, "config", keys, vm);
  apply_values(vm, keys);
  return config;
}

std::string RunConfig::derived_name() const {
  char lr[32];
  std::snprintf(lr, sizeof lr, "%.0e", recipe.learning_rate);
  return suite + "__" + model.arch + "__L" + std::to_string(model.n_layer) + "_d" +
         std::to_string(model.d_model) + "__lr" + lr;
}

OpsOptions RunConfig::ops_options() const {
  return {parse_precision(precision),         parse_attention_path(attention),
          parse_cuda_graphs(cuda_graphs),     parse_activation_dtype(activation_dtype),
          parse_fused_kernels(fused_kernels), parse_state_dtype(state_dtype)};
}

std::string RunConfig::to_ini() const {
  RunConfig copy = *this;
  const DesignInfo& design = find_design(model.arch);
  std::ostringstream out;
  std::string section;
  for (const Key& k : keys_of(copy)) {
    const std::string sec = k.name.substr(0, k.name.find('.'));
    const std::string key = k.name.substr(k.name.find('.') + 1);
    bool is_design_option = false, belongs = false;
    for (const DesignInfo& d : all_designs())
      for (const DesignOption& o : d.options)
        if (o.key == key && sec == "model") {
          is_design_option = true;
          belongs = belongs || &d == &design;
        }
    if (is_design_option && !belongs) continue;  // only the chosen design's knobs
    if (sec != section) {
      out << (section.empty() ? "" : "\n") << "[" << sec << "]\n";
      section = sec;
    }
    out << key << " = " << k.get() << "\n";
  }
  return out.str();
}

}  // namespace db
