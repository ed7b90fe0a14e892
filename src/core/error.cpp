#include "core/error.hpp"

#include <mpi.h>

#include <filesystem>

namespace db {

void throw_error(const char* file, int line, const std::string& message) {
  // Users see the message; the source location helps us when they report it.
  throw Error(message + " [" + std::filesystem::path(file).filename().string() + ":" +
              std::to_string(line) + "]");
}

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

}  // namespace db
