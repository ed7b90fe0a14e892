// The files DepthBench ships beside its executable: after `cmake --install build --prefix DIR`
// the suites are in DIR/share/depthbench/suites and the Hugging Face modelling code in
// DIR/share/depthbench/hf_modeling; in a build tree they are the clone's input/ and
// src/io/hf_modeling/.
// Found from the executable's own location, never from the clone a binary was built in.
#pragma once
#include <string>

namespace db::app {

// `given` when that file exists; else, for a bare name such as `demo.ini` or `demo`, the
// shipped suite of that name; else `given` unchanged (the suite parser then says it is missing).
std::string locate_suite(const std::string& given);

// The folder of the Python files `export --format hf` ships with every design but pre_ln
// (io/hf_checkpoint.hpp: kHfModelingFiles). Throws db::Error naming the places looked in.
std::string locate_hf_modeling();

}  // namespace db::app
