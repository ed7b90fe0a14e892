#include "core/fault.hpp"

#include <filesystem>
#include <new>

namespace db {

Fault fault_of(const std::exception& e) {
  if (dynamic_cast<const EnvironmentError*>(&e)) return {FaultKind::environment, e.what()};
  if (auto* fs = dynamic_cast<const std::filesystem::filesystem_error*>(&e)) {
    try {
      throw_if_environment_errno(fs->code().value(), fs->path1().string());
    } catch (const EnvironmentError& env) {
      return {FaultKind::environment, env.what()};
    }
  }
  if (dynamic_cast<const std::bad_alloc*>(&e))
    return {FaultKind::failure,
            "out of memory (std::bad_alloc): the model or batch is too large "
            "for this machine (`depthbench plan` estimates the memory)"};
  return {FaultKind::failure, e.what()};
}

Fault agree_on_fault(const Communicator& comm, const Fault& local) {
  if (comm.size() == 1) return local;
  const int worst = int(comm.allreduce_max(double(local.kind)));
  if (worst == int(FaultKind::none)) return {};
  // The lowest rank that saw the worst fault tells its reason to everybody.
  const double candidate = int(local.kind) == worst ? comm.rank() : comm.size();
  const int root = int(-comm.allreduce_max(-candidate));
  Fault agreed{FaultKind(worst), local.reason};
  comm.broadcast(agreed.reason, root);
  return agreed;
}

}  // namespace db
