// Rules of the tree that the compiler cannot check, enforced by reading src/:
//  * nothing inside a run uses the whole job's communicator: MPI_COMM_WORLD (and
//    Communicator::world()) appear only in src/app (start-up, the commands that split the job)
//    and in core/communicator.* which wraps it. A collective on the world from inside a run
//    deadlocks a sweep whose groups run different runs (issue 20: select_gpu(MPI_COMM_WORLD)).
//  * backends are objects: no file outside a backend's folder includes ops/cpu/ or ops/cuda/,
//    and the CUDA build flags (DEPTHBENCH_HAVE_CUDA, DEPTHBENCH_HAVE_CUDNN) appear in no source
//    outside src/ops/cuda (and CMake). One
//    exception: the generic launchers (ops/launch.hpp) include each backend's kernel templates
//    (ops/cuda/launch.cuh, under nvcc only), since a functor's type cannot pass through a
//    virtual call; that is the one door through which design arithmetic reaches a device.
//  * core/ knows no other folder.
#define BOOST_TEST_MODULE layering
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Source {
  std::string path;  // relative to src/, e.g. "app/main.cpp"
  std::string text;
};

std::vector<Source> sources() {
  const fs::path root = fs::path(DEPTHBENCH_SOURCE_DIR) / "src";
  std::vector<Source> all;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh" && ext != ".in") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    all.push_back({fs::relative(entry.path(), root).string(), text.str()});
  }
  BOOST_REQUIRE(all.size() > 50u);
  return all;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

BOOST_AUTO_TEST_CASE(only_start_up_code_names_the_world_communicator) {
  for (const Source& s : sources()) {
    const bool allowed = starts_with(s.path, "app/") || starts_with(s.path, "core/communicator.");
    const bool names_world = s.text.find("MPI_COMM_WORLD") != std::string::npos ||
                             s.text.find("Communicator::world(") != std::string::npos;
    if (names_world && !allowed)
      BOOST_ERROR(s.path + " names MPI_COMM_WORLD: inside a run, use the run's communicator");
  }
}

BOOST_AUTO_TEST_CASE(code_outside_a_backend_reaches_it_only_through_the_backend_object) {
  for (const Source& s : sources()) {
    for (const std::string backend : {"cpu", "cuda"}) {
      const std::string folder = "ops/" + backend + "/";
      const bool launcher = s.path == "ops/launch.hpp";
      if (!starts_with(s.path, folder) && !launcher &&
          s.text.find("#include \"" + folder) != std::string::npos)
        BOOST_ERROR(s.path + " includes " + folder + ": use the Backend object (ops/backend.hpp)");
    }
    for (const std::string flag : {"DEPTHBENCH_HAVE_CUDA", "DEPTHBENCH_HAVE_CUDNN"})
      if (!starts_with(s.path, "ops/cuda/") && s.text.find(flag) != std::string::npos)
        BOOST_ERROR(s.path + " tests " + flag + ": only the CUDA folder and CMake may");
  }
}

BOOST_AUTO_TEST_CASE(core_includes_only_core) {
  for (const Source& s : sources()) {
    if (!starts_with(s.path, "core/")) continue;
    std::istringstream lines(s.text);
    std::string line;
    while (std::getline(lines, line))
      if (starts_with(line, "#include \"") && !starts_with(line, "#include \"core/"))
        BOOST_ERROR(s.path + ": " + line + " (core/ knows no other folder)");
  }
}
