// RAII ownership of HDF5 identifiers: every handle is closed exactly once, with the matching
// H5*close function.
#pragma once
#include <hdf5.h>

#include <utility>

namespace db {

class H5Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Handle() = default;
  H5Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5Handle(H5Handle&& o) noexcept : id_(std::exchange(o.id_, -1)), closer_(o.closer_) {}
  H5Handle& operator=(H5Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, -1);
      closer_ = o.closer_;
    }
    return *this;
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  ~H5Handle() { reset(); }

  hid_t get() const { return id_; }
  // Gives up ownership (to close the identifier explicitly and check the result).
  hid_t release() { return std::exchange(id_, -1); }
  explicit operator bool() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

}  // namespace db
