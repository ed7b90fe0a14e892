// Every subcommand of the `depthbench` executable: one function each, in its own cmd_*.cpp.
// Each receives the arguments after the subcommand name and returns the process exit code.
#pragma once

namespace db::app {

int run_train_command(int argc, char** argv);
int run_bench_command(int argc, char** argv);
int run_tokenize_command(int argc, char** argv);
int run_plan_command(int argc, char** argv);
int run_sweep_command(int argc, char** argv);
int run_diagnose_command(int argc, char** argv);
int run_eval_command(int argc, char** argv);
int run_export_command(int argc, char** argv);
int run_designs_command(int argc, char** argv);
int run_selftest_command(int argc, char** argv);

}  // namespace db::app
