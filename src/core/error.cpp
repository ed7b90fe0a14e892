#include "core/error.hpp"

#include <hdf5.h>
#include <mpi.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>

namespace db {

void throw_error(const char* file, int line, const std::string& message) {
  // Users see the message; the source location helps us when they report it.
  throw Error(message + " [" + std::filesystem::path(file).filename().string() + ":" +
              std::to_string(line) + "]");
}

void throw_if_environment_errno(int error_number, const std::string& path) {
  switch (error_number) {
    case ENOSPC:
    case EDQUOT:
    case EIO:
    case EROFS:
    case ESTALE:
      throw EnvironmentError(std::strerror(error_number), path);
    default:
      return;
  }
}

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

}  // namespace db

namespace db {
namespace {

// HDF5's file drivers put the system error of a failed read or write on the error stack, e.g.
// "file write failed: ..., filename = 'runs/x.h5.tmp', ..., errno = 28, error message = ...".
struct SystemErrorOnStack {
  int error_number = 0;
  std::string filename;
};

herr_t find_system_error(unsigned, const H5E_error2_t* entry, void* found_ptr) {
  auto* found = static_cast<SystemErrorOnStack*>(found_ptr);
  if (found->error_number != 0 || !entry->desc) return 0;
  static const std::regex errno_field("errno = ([0-9]+)"), name_field("name = '([^']*)'");
  const std::string desc = entry->desc;
  std::smatch match;
  if (!std::regex_search(desc, match, errno_field)) return 0;
  found->error_number = std::stoi(match[1]);
  if (std::regex_search(desc, match, name_field)) found->filename = match[1];
  return 0;
}

}  // namespace

void throw_if_hdf5_environment_error(const std::string& fallback_path) {
  SystemErrorOnStack found;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_system_error, &found);
  if (found.error_number != 0)
    throw_if_environment_errno(found.error_number,
                               found.filename.empty() ? fallback_path : found.filename);
}

void throw_hdf5_error(const char* file, int line, const char* call) {
  throw_if_hdf5_environment_error(call);
  throw_error(file, line, std::string("HDF5 call failed: ") + call);
}

}  // namespace db
