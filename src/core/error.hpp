// One exception type and one check macro per external library, so that every failure carries
// file, line and the library's own message (STYLE.md: "every external call is checked").
#pragma once
#include <stdexcept>
#include <string>

namespace db {

// A user-facing error: its what() is the one line printed to the user.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_error(const char* file, int line, const std::string& message);
std::string mpi_error_string(int code);

}  // namespace db

// Throws db::Error with the message when the condition is false.
#define DB_REQUIRE(cond, message)                                             \
  do {                                                                        \
    if (!(cond)) ::db::throw_error(__FILE__, __LINE__, std::string(message)); \
  } while (0)

#define MPI_CHECK(call)                                                              \
  do {                                                                               \
    int mpi_code_ = (call);                                                          \
    if (mpi_code_ != 0)                                                              \
      ::db::throw_error(__FILE__, __LINE__,                                          \
                        "MPI: " + ::db::mpi_error_string(mpi_code_) + " in " #call); \
  } while (0)

// HDF5 calls return a negative value on failure; the library's error stack is silenced and the
// failing call is named instead.
#define H5_CHECK(call)                                                                     \
  ([&]() {                                                                                 \
    auto h5_result_ = (call);                                                              \
    if (h5_result_ < 0) ::db::throw_error(__FILE__, __LINE__, "HDF5 call failed: " #call); \
    return h5_result_;                                                                     \
  }())
