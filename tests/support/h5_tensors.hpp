// Small HDF5 helpers for the tests that exchange tensors with the PyTorch reference
// (tests/reference/README.md describes the files).
#pragma once
#include <hdf5.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/hdf5_handle.hpp"

namespace db::test {

inline H5Handle create_h5(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return H5Handle(H5_CHECK(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)),
                  H5Fclose);
}

inline H5Handle open_h5(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return H5Handle(H5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)), H5Fclose);
}

template <class T>
void write_tensor(hid_t file, const std::string& name, const std::vector<hsize_t>& shape,
                  const T* data) {
  const hid_t type = std::is_same_v<T, double> ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
  H5Handle space(H5_CHECK(H5Screate_simple(int(shape.size()), shape.data(), nullptr)), H5Sclose);
  H5Handle set(H5_CHECK(H5Dcreate2(file, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                   H5P_DEFAULT)),
               H5Dclose);
  H5_CHECK(H5Dwrite(set.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
}

inline void write_string_attribute(hid_t file, const std::string& name, const std::string& value) {
  H5Handle type(H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  H5Handle space(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  H5Handle attr(
      H5_CHECK(H5Acreate2(file, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT)),
      H5Aclose);
  const char* text = value.c_str();
  H5_CHECK(H5Awrite(attr.get(), type.get(), &text));
}

inline void write_double_attribute(hid_t file, const std::string& name, double value) {
  H5Handle space(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  H5Handle attr(H5_CHECK(H5Acreate2(file, name.c_str(), H5T_NATIVE_DOUBLE, space.get(), H5P_DEFAULT,
                                    H5P_DEFAULT)),
                H5Aclose);
  H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, &value));
}

inline std::vector<double> read_tensor(hid_t file, const std::string& name) {
  H5Handle set(H5_CHECK(H5Dopen2(file, name.c_str(), H5P_DEFAULT)), H5Dclose);
  H5Handle space(H5_CHECK(H5Dget_space(set.get())), H5Sclose);
  std::vector<double> values(H5_CHECK(H5Sget_simple_extent_npoints(space.get())));
  H5_CHECK(H5Dread(set.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
  return values;
}

}  // namespace db::test
