// Command-line parsing shared by the subcommands that take plain options (not run configs).
#pragma once
#include <boost/program_options.hpp>
#include <optional>

namespace db::app {

// Parses argv into vm. Returns the exit status when the command should stop here — 0 after
// printing --help, 2 after a usage error (message and options on stderr); both printed by
// rank 0 only — and nullopt when it should go on.
std::optional<int> parse_command_line(
    const char* command, int argc, char** argv,
    const boost::program_options::options_description& options,
    boost::program_options::variables_map& vm,
    const boost::program_options::positional_options_description* positional = nullptr);

}  // namespace db::app
