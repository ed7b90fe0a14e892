// Real NumPy on both sides: files written by numpy.save / numpy.lib.format are read by our
// reader, and files from our writer are loaded by numpy.load (DEPTHBENCH_PYTHON is the system
// python3, which has NumPy).
#define BOOST_TEST_MODULE npy_numpy_interop
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cstdlib>

#include "data/token_file.hpp"
#include "data/token_writer.hpp"
#include "data_test_support.hpp"

using namespace db::data;
using db::data::test::require_error;
using db::data::test::TempDir;
using db::data::test::write_bytes;

namespace {

// Token i of every test array; the same formula is written in the Python script.
uint32_t expected_id(int64_t i, uint32_t modulus) {
  return static_cast<uint32_t>((i * 7919 + 5) % modulus);
}

// Runs `script` with the system python; returns its exit status.
int run_python(const TempDir& dir, const std::string& script, const std::string& args) {
  const std::string script_path = dir.file("script.py");
  write_bytes(script_path, script);
  const std::string command = std::string(DEPTHBENCH_PYTHON) + " " + script_path + " " + args;
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char* const write_script = R"(
import sys, numpy as np
path, dtype, n, modulus, version = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
ids = ((np.arange(n, dtype=np.int64) * 7919 + 5) % modulus).astype(dtype)
if version == "2":
    with open(path, "wb") as f:
        np.lib.format.write_array(f, ids, version=(2, 0))
else:
    np.save(path, ids)
)";

}  // namespace

BOOST_AUTO_TEST_CASE(numpy_save_uint16_and_uint32_files_are_read_exactly) {
  TempDir dir;
  struct Case {
    std::string dtype;
    int bytes;
    uint32_t modulus;
    std::string version;
  };
  for (const Case& c :
       {Case{"<u2", 2, 50280, "1"}, Case{"<u4", 4, 100000, "1"}, Case{"<u2", 2, 65536, "2"}}) {
    BOOST_TEST_CONTEXT(c.dtype << " version " << c.version) {
      const std::string path = dir.file("numpy" + std::to_string(c.bytes) + c.version + ".npy");
      const int64_t n = 12345;
      BOOST_REQUIRE_EQUAL(run_python(dir, write_script,
                                     path + " '" + c.dtype + "' " + std::to_string(n) + " " +
                                         std::to_string(c.modulus) + " " + c.version),
                          0);
      TokenFile file(path, {TokenFormat::auto_detect, 2, c.modulus});
      BOOST_TEST((file.format() == TokenFormat::npy));
      BOOST_TEST(file.dtype_bytes() == c.bytes);
      BOOST_REQUIRE_EQUAL(file.num_tokens(), n);
      std::vector<int32_t> out(static_cast<std::size_t>(n));
      file.read_tokens(0, out);
      for (int64_t i = 0; i < n; ++i)
        BOOST_REQUIRE_EQUAL(static_cast<uint32_t>(out[i]), expected_id(i, c.modulus));
    }
  }
}

BOOST_AUTO_TEST_CASE(numpy_int64_and_float_arrays_are_refused_as_wrong_dtype) {
  TempDir dir;
  for (const std::string dtype : {"<i8", "<f4"}) {
    const std::string path = dir.file("numpy_" + dtype.substr(1) + ".npy");
    BOOST_REQUIRE_EQUAL(run_python(dir, write_script, path + " '" + dtype + "' 10 100 1"), 0);
    require_error([&] { TokenFile(path, {}); }, {path, "wrong dtype", dtype});
  }
}

BOOST_AUTO_TEST_CASE(our_npy_files_load_in_numpy_with_the_right_dtype_and_values) {
  TempDir dir;
  const char* const check_script = R"(
import sys, numpy as np
path, dtype, n, modulus = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
a = np.load(path)
expected = (np.arange(n, dtype=np.int64) * 7919 + 5) % modulus
ok = a.dtype == np.dtype(dtype) and a.shape == (n,) and np.array_equal(a.astype(np.int64), expected)
sys.exit(0 if ok else 1)
)";
  for (int dtype_bytes : {2, 4}) {
    const uint32_t modulus = dtype_bytes == 2 ? 65536 : 3000000000u;
    const int64_t n = 70001;
    std::vector<uint32_t> ids(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) ids[i] = expected_id(i, modulus);
    const std::string path = dir.file("ours" + std::to_string(dtype_bytes) + ".npy");
    write_npy(path, ids, dtype_bytes);
    const std::string dtype = dtype_bytes == 2 ? "<u2" : "<u4";
    BOOST_TEST(run_python(dir, check_script,
                          path + " '" + dtype + "' " + std::to_string(n) + " " +
                              std::to_string(modulus)) == 0,
               "numpy.load of " << dtype);
  }
}
