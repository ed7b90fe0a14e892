#include "io/named_tensors.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/format.hpp"
#include "io/hdf5_handle.hpp"

namespace db {
namespace {

std::vector<int64_t> dataset_shape(hid_t set) {
  H5Handle space(H5_CHECK(H5Dget_space(set)), H5Sclose);
  const int rank = H5_CHECK(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(rank);
  H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  return {dims.begin(), dims.end()};
}

// Format 1: the whole buffer as one 1-D dataset (empty for absent optimizer state), written
// before parameters were aligned: the parameters back to back, spread here to their offsets.
std::vector<float> read_flat(hid_t set, const ParameterLayout& layout, const std::string& what) {
  H5Handle space(H5_CHECK(H5Dget_space(set)), H5Sclose);
  std::vector<float> packed(H5_CHECK(H5Sget_simple_extent_npoints(space.get())));
  if (packed.empty()) return packed;
  DB_REQUIRE(int64_t(packed.size()) == layout.parameter_count(),
             what + " holds " + std::to_string(packed.size()) + " values, the model has " +
                 std::to_string(layout.parameter_count()));
  H5_CHECK(H5Dread(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, packed.data()));
  std::vector<float> values(layout.storage_size());
  int64_t at = 0;
  for (const ParameterSpec& spec : layout.specs()) {
    std::copy_n(packed.begin() + at, spec.size(), values.begin() + spec.offset);
    at += spec.size();
  }
  return values;
}

}  // namespace

bool has_object(hid_t file, const std::string& name) {
  return H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0;
}

void write_named_tensors(hid_t file, const std::string& group, const ParameterLayout& layout,
                         std::span<const float> values) {
  DB_REQUIRE(int64_t(values.size()) == layout.storage_size(),
             group + ": buffer does not match the parameter layout");
  H5Handle g(H5_CHECK(H5Gcreate2(file, group.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
             H5Gclose);
  for (const ParameterSpec& spec : layout.specs()) {
    const std::vector<hsize_t> dims(spec.shape.begin(), spec.shape.end());
    H5Handle space(H5_CHECK(H5Screate_simple(int(dims.size()), dims.data(), nullptr)), H5Sclose);
    H5Handle set(H5_CHECK(H5Dcreate2(g.get(), spec.name.c_str(), H5T_NATIVE_FLOAT, space.get(),
                                     H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
                 H5Dclose);
    H5_CHECK(H5Dwrite(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                      values.data() + spec.offset));
  }
}

std::vector<float> read_named_tensors(hid_t file, const std::string& group,
                                      const ParameterLayout& layout, const std::string& source) {
  H5Handle object(H5_CHECK(H5Oopen(file, group.c_str(), H5P_DEFAULT)), H5Oclose);
  if (H5Iget_type(object.get()) == H5I_DATASET)
    return read_flat(object.get(), layout, source + ": " + group);
  std::vector<float> values(layout.storage_size());  // the padding stays zero
  for (const ParameterSpec& spec : layout.specs()) {
    const std::string name = group + "/" + spec.name;
    DB_REQUIRE(has_object(file, name),
               source + " has no tensor " + name + " (written for another model config?)");
    H5Handle set(H5_CHECK(H5Dopen2(file, name.c_str(), H5P_DEFAULT)), H5Dclose);
    const std::vector<int64_t> shape = dataset_shape(set.get());
    DB_REQUIRE(shape == spec.shape, source + ": " + name + " has shape " + shape_text(shape) +
                                        ", the model expects " + shape_text(spec.shape));
    H5_CHECK(H5Dread(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                     values.data() + spec.offset));
  }
  return values;
}

}  // namespace db
