#include "util/file_copy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.hpp"

namespace db {
namespace {

// Closes a descriptor on every path out of the copy.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail(const char* what, const std::string& path) {
  const int error_number = errno;
  throw_if_environment_errno(error_number, path);
  throw_error(__FILE__, __LINE__,
              std::string("cannot ") + what + " " + path + ": " + std::strerror(error_number));
}

}  // namespace

void copy_file_contents(const std::string& from, const std::string& to) {
  Descriptor in{::open(from.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) fail("open", from);
  Descriptor out{::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (out.fd < 0) fail("create", to);
  std::vector<char> chunk(1 << 20);
  for (;;) {
    const ssize_t got = ::read(in.fd, chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("read", from);
    if (got == 0) break;
    // write() may take part of the chunk (a disk filling up); the next call then says why.
    for (ssize_t done = 0; done < got;) {
      const ssize_t put = ::write(out.fd, chunk.data() + done, size_t(got - done));
      if (put < 0 && errno == EINTR) continue;
      if (put < 0) fail("write", to);
      done += put;
    }
  }
  // close() is where some file systems (NFS, quotas) report a failed write.
  const int fd = out.fd;
  out.fd = -1;
  if (::close(fd) != 0) fail("close", to);
}

}  // namespace db
