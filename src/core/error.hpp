// One exception type and one check macro per external library, so that every failure carries
// file, line and the library's own message: every external call is checked.
#pragma once
#include <stdexcept>
#include <string>

namespace db {

// A user-facing error: its what() is the one line printed to the user.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An error of the machine rather than of the run (no space left, an I/O error, a read-only
// file system): what() is "<cause>: <path>". A run that meets one stays resumable.
class EnvironmentError : public Error {
 public:
  EnvironmentError(const std::string& cause, const std::string& path)
      : Error(cause + ": " + path), cause_(cause) {}
  const std::string& cause() const { return cause_; }

 private:
  std::string cause_;
};

[[noreturn]] void throw_error(const char* file, int line, const std::string& message);
// Throws EnvironmentError(strerror, path) when error_number says the machine is at fault.
void throw_if_environment_errno(int error_number, const std::string& path);
std::string mpi_error_string(int code);
[[noreturn]] void throw_hdf5_error(const char* file, int line, const char* call);
// After a failed HDF5 call: throws EnvironmentError when the library's error stack holds a system
// error of the machine (no space, I/O), naming the file (or fallback_path).
void throw_if_hdf5_environment_error(const std::string& fallback_path);

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
// failing call is named instead. A full disk or an I/O error (read off the error stack) becomes an
// EnvironmentError naming the file.
#define H5_CHECK(call)                                                     \
  ([&]() {                                                                 \
    auto h5_result_ = (call);                                              \
    if (h5_result_ < 0) ::db::throw_hdf5_error(__FILE__, __LINE__, #call); \
    return h5_result_;                                                     \
  }())
