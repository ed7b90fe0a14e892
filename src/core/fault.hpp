// How a run ends early, agreed by every rank of its communicator. Errors are collective: a
// failure seen by one rank (a full disk on rank 0, a bad token file on rank 3) ends the run on
// all of them at the same point, with one reason, so no rank is left waiting in a collective.
#pragma once
#include <string>

#include "core/communicator.hpp"
#include "core/error.hpp"

namespace db {

// Ordered by precedence: when ranks see different faults, the highest wins.
enum class FaultKind {
  none = 0,
  stop = 1,         // a stop signal: checkpoint and leave, resumable
  failure = 2,      // the run cannot succeed as configured (bad input, config error)
  environment = 3,  // the machine failed the run (disk full, I/O error): resumable
};

struct Fault {
  FaultKind kind = FaultKind::none;
  std::string reason;
  explicit operator bool() const { return kind != FaultKind::none; }
};

// The fault an exception stands for: EnvironmentError and file-system errors of the machine
// (no space, I/O, read-only, quota) are `environment`, everything else `failure`.
Fault fault_of(const std::exception& e);

// Collective over comm: every rank passes its own fault; every rank returns the highest kind
// and the reason of the lowest rank that saw it. One small all-reduce when nothing went wrong.
Fault agree_on_fault(const Communicator& comm, const Fault& local);

// Runs body() and returns the fault of the exception it threw, if any (not collective).
template <class Body>
Fault capture_fault(Body&& body) {
  try {
    body();
    return {};
  } catch (const std::exception& e) {
    return fault_of(e);
  }
}

}  // namespace db
