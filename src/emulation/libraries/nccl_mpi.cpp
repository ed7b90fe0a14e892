// NCCL over MPI (emulation only), with the signatures of the real nccl.h. A communicator is a
// duplicate of the MPI communicator of its ranks (nccl_use_mpi_communicator); ncclAllReduce
// checks its arguments at the call, as NCCL does, and performs MPI_Allreduce when the stream
// reaches it, so the stream order (and a missing event wait) shows in the result. ncclAvg is
// computed as NCCL computes it for floating types: each rank's values multiplied by 1/nranks
// (in the element type), then summed.
#include "emulation/libraries/nccl_mpi.hpp"

#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "emulation/libraries/host_values.hpp"
#include "emulation/runtime/stream_work.hpp"

namespace db::emulation {
namespace {

constexpr char kIdMagic[] = "emulated-nccl-id";

// What outlives ncclCommDestroy while collectives of the communicator are still queued.
struct CommState {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::atomic<bool> aborted{false};
  std::atomic<int> async_error{ncclSuccess};
  std::string last_error;
  ~CommState() {
    if (comm != MPI_COMM_NULL) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Comm_free(&comm);
    }
  }
};

struct Comm {
  std::shared_ptr<CommState> state;
};

std::mutex pending_mutex;
MPI_Comm pending_comm = MPI_COMM_NULL;
thread_local std::string last_error;  // ncclGetLastError(nullptr)

// NCCL's refusals carry their reason in a WARN line (NCCL_DEBUG=WARN) and ncclGetLastError.
ncclResult_t refuse(ncclResult_t code, const std::string& why) {
  last_error = why;
  std::fprintf(stderr, "NCCL WARN %s\n", why.c_str());
  return code;
}

size_t element_bytes(ncclDataType_t type) {
  switch (type) {
    case ncclFloat32:
      return 4;
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

// One MPI_Allreduce of `count` elements in pieces MPI's int count can hold.
int allreduce(const void* send, void* recv, size_t count, ncclDataType_t type, MPI_Comm comm) {
  const MPI_Datatype mpi_type = type == ncclFloat32 ? MPI_FLOAT : MPI_DOUBLE;
  const size_t bytes = element_bytes(type);
  constexpr size_t kPiece = size_t(1) << 30;
  for (size_t done = 0; done < count; done += kPiece) {
    const int n = int(std::min(kPiece, count - done));
    const void* from =
        send == MPI_IN_PLACE ? MPI_IN_PLACE : static_cast<const char*>(send) + done * bytes;
    if (int rc = MPI_Allreduce(from, static_cast<char*>(recv) + done * bytes, n, mpi_type, MPI_SUM,
                               comm);
        rc != MPI_SUCCESS)
      return rc;
  }
  return MPI_SUCCESS;
}

template <class T>
void premultiply(const T* from, T* to, size_t count, int ranks) {
  const T factor = T(1.0 / double(ranks));
  for (size_t i = 0; i < count; ++i) to[i] = from[i] * factor;
}

}  // namespace

void nccl_use_mpi_communicator(MPI_Comm comm) {
  std::lock_guard lock(pending_mutex);
  pending_comm = comm;
}

}  // namespace db::emulation

using namespace db::emulation;

extern "C" {

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return refuse(ncclInvalidArgument, "ncclGetUniqueId: null id");
  std::memset(id, 0, sizeof *id);
  std::memcpy(id->internal, kIdMagic, sizeof kIdMagic);
  std::random_device random;
  for (size_t i = sizeof kIdMagic; i + 4 <= sizeof id->internal; i += 4) {
    const uint32_t r = random();
    std::memcpy(id->internal + i, &r, 4);
  }
  return ncclSuccess;
}

// Collective over the MPI communicator given by nccl_use_mpi_communicator: its rank and size
// must be `rank` and `nranks`, and every rank must pass the same id (a broadcast that did not
// happen shows here).
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (!comm) return refuse(ncclInvalidArgument, "ncclCommInitRank: null comm");
  *comm = nullptr;
  MPI_Comm base;
  {
    std::lock_guard lock(pending_mutex);
    base = std::exchange(pending_comm, MPI_COMM_NULL);
  }
  if (base == MPI_COMM_NULL)
    return refuse(ncclInvalidUsage,
                  "ncclCommInitRank: no MPI communicator given (emulation: call "
                  "db::emulation::nccl_use_mpi_communicator first)");
  if (std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0)
    return refuse(ncclInvalidArgument, "ncclCommInitRank: the id was not made by ncclGetUniqueId");
  int mpi_rank = -1, mpi_size = 0;
  MPI_Comm_rank(base, &mpi_rank);
  MPI_Comm_size(base, &mpi_size);
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return refuse(ncclInvalidArgument, "ncclCommInitRank: rank " + std::to_string(rank) + " of " +
                                           std::to_string(nranks));
  if (mpi_rank != rank || mpi_size != nranks)
    return refuse(ncclInvalidUsage, "ncclCommInitRank: rank " + std::to_string(rank) + " of " +
                                        std::to_string(nranks) + " but MPI rank " +
                                        std::to_string(mpi_rank) + " of " +
                                        std::to_string(mpi_size));
  auto state = std::make_shared<CommState>();
  if (MPI_Comm_dup(base, &state->comm) != MPI_SUCCESS)
    return refuse(ncclSystemError, "ncclCommInitRank: MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(state->comm, MPI_ERRORS_RETURN);
  state->rank = rank;
  state->size = nranks;
  std::vector<char> ids(size_t(nranks) * sizeof id.internal);
  if (MPI_Allgather(id.internal, sizeof id.internal, MPI_BYTE, ids.data(), sizeof id.internal,
                    MPI_BYTE, state->comm) != MPI_SUCCESS)
    return refuse(ncclSystemError, "ncclCommInitRank: exchanging the ids failed");
  for (int r = 0; r < nranks; ++r)
    if (std::memcmp(ids.data() + size_t(r) * sizeof id.internal, id.internal, sizeof id.internal) !=
        0)
      return refuse(ncclInvalidUsage, "ncclCommInitRank: rank " + std::to_string(r) +
                                          " passed another unique id than rank " +
                                          std::to_string(rank));
  *comm = reinterpret_cast<ncclComm_t>(new Comm{std::move(state)});
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return refuse(ncclInvalidArgument, "ncclCommDestroy: null comm");
  delete reinterpret_cast<Comm*>(comm);  // queued collectives keep the state alive
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  Comm* c = reinterpret_cast<Comm*>(comm);
  c->state->aborted = true;  // queued collectives of it do nothing
  delete c;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (!comm || !async_error) return refuse(ncclInvalidArgument, "ncclCommGetAsyncError: null");
  *async_error = ncclResult_t(reinterpret_cast<Comm*>(comm)->state->async_error.load());
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count) return refuse(ncclInvalidArgument, "ncclCommCount: null");
  *count = reinterpret_cast<Comm*>(comm)->state->size;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank) return refuse(ncclInvalidArgument, "ncclCommUserRank: null");
  *rank = reinterpret_cast<Comm*>(comm)->state->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  if (!comm) return refuse(ncclInvalidArgument, "ncclAllReduce: null comm");
  if (element_bytes(type) == 0)
    return refuse(ncclInvalidArgument,
                  "ncclAllReduce: data type outside the emulated subset "
                  "(Float32, Float64)");
  if (op != ncclSum && op != ncclAvg)
    return refuse(ncclInvalidArgument,
                  "ncclAllReduce: operation outside the emulated subset "
                  "(Sum, Avg)");
  if (count == 0) return ncclSuccess;
  // NCCL's argument check: both buffers must be device memory.
  if (!find_allocation(send) || !find_allocation(recv))
    return refuse(ncclInvalidArgument, std::string("ncclAllReduce: ") +
                                           (find_allocation(send) ? "recvbuff" : "sendbuff") +
                                           " is not a valid device pointer");
  std::shared_ptr<CommState> state = reinterpret_cast<Comm*>(comm)->state;
  const cudaError_t queued = enqueue(stream, "ncclAllReduce", [=] {
    if (state->aborted) return;
    const size_t bytes = count * element_bytes(type);
    require_device_range("ncclAllReduce", "sendbuff", send, bytes);
    require_device_range("ncclAllReduce", "recvbuff", recv, bytes);
    const bool in_place = send == recv;
    std::vector<char> scaled;
    const void* from = in_place ? MPI_IN_PLACE : send;
    if (op == ncclAvg) {
      void* to = recv;
      if (!in_place) {
        scaled.resize(bytes);
        to = scaled.data();
        from = to;
      }
      if (type == ncclFloat32)
        premultiply(static_cast<const float*>(send), static_cast<float*>(to), count, state->size);
      else
        premultiply(static_cast<const double*>(send), static_cast<double*>(to), count, state->size);
    }
    if (int rc = allreduce(from, recv, count, type, state->comm); rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      int length = 0;
      MPI_Error_string(rc, text, &length);
      state->async_error = ncclRemoteError;
      throw DeviceFault(std::string("ncclAllReduce: MPI_Allreduce failed: ") + text);
    }
  });
  return queued == cudaSuccess ? ncclSuccess
                               : refuse(ncclUnhandledCudaError, std::string("ncclAllReduce: ") +
                                                                    cudaGetErrorString(queued));
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

// The reason of this thread's last refusal (NCCL keeps one per thread, whatever the comm).
const char* ncclGetLastError(ncclComm_t) {
  return last_error.c_str();
}

}  // extern "C"
