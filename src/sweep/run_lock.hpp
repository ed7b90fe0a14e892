// One lock per run (NAME.lock beside the run file) so that two sweeps pointed at the same
// output directory never train the same run at once. flock(2): the kernel releases it when the
// holder exits or is killed, so a crashed sweep never leaves a run locked. The lock file stays.
#pragma once
#include <optional>
#include <string>

namespace db::sweep {

class RunLock {
 public:
  // The lock, or nothing when another process holds it. Throws db::Error when the file cannot
  // be opened.
  static std::optional<RunLock> try_acquire(const std::string& path);
  RunLock(RunLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  RunLock& operator=(RunLock&& other) noexcept;
  RunLock(const RunLock&) = delete;
  ~RunLock();

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace db::sweep
