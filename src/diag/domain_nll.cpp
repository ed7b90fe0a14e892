// §7 Domain teacher-forced NLL, completion-only: per example the summed NLL of the target
// tokens given the prompt; the task score is Σ NLL / Σ target tokens with a 95% document
// bootstrap (resample examples, ratio of sums each time). Examples are dealt over the ranks.
#include "core/error.hpp"
#include "diag/diagnostics.hpp"
#include "diag/eval_tasks.hpp"
#include "util/bootstrap.hpp"

namespace db::diag {
namespace {

struct Task {
  std::string name, file;
  std::vector<NllExample> examples;
};

std::vector<Task> given_tasks(const DiagSettings& settings) {
  std::vector<Task> tasks;
  for (const std::string& name : nll_task_names()) {
    auto it = settings.task_files.find(name);
    if (it == settings.task_files.end() || it->second.empty()) continue;
    Task task{name, it->second, read_nll_task(name, it->second)};
    if (settings.nll_limit > 0 && int64_t(task.examples.size()) > settings.nll_limit)
      task.examples.resize(settings.nll_limit);
    tasks.push_back(std::move(task));
  }
  return tasks;
}

std::vector<DiagnosticDataset> run(DiagContext& ctx) {
  const std::vector<Task> tasks = given_tasks(ctx.settings);
  int64_t mine = 0;
  for (const Task& task : tasks) mine += ctx.my_count(int64_t(task.examples.size()));
  ctx.progress.set_local_total(mine);
  std::vector<DiagnosticDataset> out;
  for (const Task& task : tasks) {
    const int64_t N = int64_t(task.examples.size());
    std::vector<double> nll(N, 0.0), tokens(N, 0.0), truncated(N, 0.0);
    for (int64_t e = 0; e < N; ++e) {
      if (!ctx.mine(e)) continue;
      const NllExample& ex = task.examples[e];
      const TargetScore s = score_target(ctx.model, *ctx.tokenizer, ex.prompt,
                                         join_target(ex.prompt, ex.target), ctx.eval_context());
      nll[e] = s.nll;
      tokens[e] = double(s.tokens);
      truncated[e] = s.truncated;
      ctx.progress.step();
    }
    ctx.gather(nll);
    ctx.gather(tokens);
    ctx.gather(truncated);
    double nll_sum = 0, token_sum = 0, truncated_sum = 0;
    std::vector<double> table(size_t(N) * 2);
    for (int64_t e = 0; e < N; ++e) {
      nll_sum += nll[e];
      token_sum += tokens[e];
      truncated_sum += truncated[e];
      table[2 * e] = nll[e];
      table[2 * e + 1] = tokens[e];
    }
    DB_REQUIRE(token_sum > 0, task.file + ": no target token could be scored");
    const BootstrapDraws draws(N, ctx.settings.bootstrap, ctx.settings.seed);
    const Interval ci = bootstrap_ratio(draws, 1, nll, tokens);
    DiagnosticDataset set = DiagnosticDataset::matrix("domain_nll_" + task.name, N, 2, table);
    set.attributes["definition"] =
        "completion-only teacher-forced NLL (diagnostics.md 7): columns = summed NLL of the "
        "target tokens given the prompt (nats), number of target tokens; nll = sum NLL / sum "
        "tokens; ci = 95% document bootstrap of that ratio (percentiles 2.5/97.5)";
    set.attributes["columns"] = std::string("nll_sum,target_tokens");
    set.attributes["nll"] = nll_sum / token_sum;
    set.attributes["ci_low"] = ci.low[0];
    set.attributes["ci_high"] = ci.high[0];
    set.attributes["data"] = task.file;
    set.attributes["examples"] = N;
    set.attributes["target_tokens"] = int64_t(token_sum);
    set.attributes["truncated_examples"] = int64_t(truncated_sum);
    set.attributes["eval_context"] = ctx.eval_context();
    set.attributes["tokenizer"] = ctx.tokenizer->description();
    set.attributes["seed"] = int64_t(ctx.settings.seed);
    set.attributes["bootstrap_resamples"] = int64_t(ctx.settings.bootstrap);
    out.push_back(std::move(set));
  }
  return out;
}

}  // namespace

Diagnostic domain_nll_diagnostic() {
  Diagnostic d;
  d.name = "domain_nll";
  d.summary = "teacher-forced NLL on MBPP, HumanEval, SciQ, GPQA, GSM8K, MATH-500";
  d.options = {count_option("nll-limit", "examples per domain NLL task (0 = all)",
                            &DiagSettings::nll_limit, 0)};
  for (const std::string& task : nll_task_names()) {
    DiagnosticOption file{task, "domain NLL task file (" + task + ", public layout)", nullptr,
                          nullptr};
    file.value = [task](const DiagSettings& s) {
      return s.task_files.count(task) ? s.task_files.at(task) : std::string();
    };
    file.set = [task](DiagSettings& s, const std::string& path) {
      if (!path.empty()) s.task_files[task] = path;
    };
    d.options.push_back(file);
    d.datasets.push_back("domain_nll_" + task);
  }
  d.cost = [](const DiagScope& scope) {
    int64_t passes = 0;
    std::string text;
    for (const Task& task : given_tasks(scope.settings)) {
      passes += int64_t(task.examples.size());
      text += (text.empty() ? "" : " + ") + std::to_string(task.examples.size()) + " " + task.name;
    }
    return DiagCost{passes, 0, text + " examples x 1 pass"};
  };
  d.not_applicable = [](const DiagScope& scope) {
    for (const std::string& name : nll_task_names())
      if (scope.settings.task_files.count(name) && !scope.settings.task_files.at(name).empty())
        return std::string();
    return std::string(
        "no task file given (--mbpp, --humaneval, --sciq, --gpqa, --gsm8k, --math500)");
  };
  d.run = run;
  return d;
}

}  // namespace db::diag
