#include "io/checkpoint.hpp"

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "core/error.hpp"
#include "io/hdf5_handle.hpp"
#include "io/run_file.hpp"

namespace db {
namespace {

void write_vector(hid_t file, const char* name, const std::vector<float>& values) {
  hsize_t dims[1] = {values.size()};
  H5Handle space(H5_CHECK(H5Screate_simple(1, dims, nullptr)), H5Sclose);
  H5Handle set(H5_CHECK(H5Dcreate2(file, name, H5T_NATIVE_FLOAT, space.get(), H5P_DEFAULT,
                                   H5P_DEFAULT, H5P_DEFAULT)),
               H5Dclose);
  if (!values.empty())
    H5_CHECK(H5Dwrite(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
}

std::vector<float> read_vector(hid_t file, const char* name) {
  H5Handle set(H5_CHECK(H5Dopen2(file, name, H5P_DEFAULT)), H5Dclose);
  H5Handle space(H5_CHECK(H5Dget_space(set.get())), H5Sclose);
  std::vector<float> values(H5_CHECK(H5Sget_simple_extent_npoints(space.get())));
  if (!values.empty())
    H5_CHECK(H5Dread(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
  return values;
}

template <class T>
void write_scalar(hid_t file, const char* name, hid_t type, const T& value) {
  H5Handle space(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  H5Handle attr(H5_CHECK(H5Acreate2(file, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT)),
                H5Aclose);
  H5_CHECK(H5Awrite(attr.get(), type, &value));
}

template <class T>
T read_scalar(hid_t file, const char* name, hid_t type) {
  H5Handle attr(H5_CHECK(H5Aopen(file, name, H5P_DEFAULT)), H5Aclose);
  T value{};
  H5_CHECK(H5Aread(attr.get(), type, &value));
  return value;
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& c) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const std::string tmp = path + ".tmp";
  {
    hid_t id = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (id < 0) throw_if_hdf5_environment_error(tmp);
    DB_REQUIRE(id >= 0, "cannot create checkpoint " + tmp);
    H5Handle file(id, H5Fclose);
    H5Handle str(H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
    H5_CHECK(H5Tset_size(str.get(), H5T_VARIABLE));
    H5_CHECK(H5Tset_cset(str.get(), H5T_CSET_UTF8));  // as every string of the run file
    const char* run_id = c.run_id.c_str();
    write_scalar(file.get(), "run_id", str.get(), run_id);
    write_scalar(file.get(), "step", H5T_NATIVE_INT64, c.step);
    write_scalar(file.get(), "adam_steps", H5T_NATIVE_INT64, c.adam_steps);
    write_scalar(file.get(), "best_val_loss", H5T_NATIVE_DOUBLE, c.best_val_loss);
    write_scalar(file.get(), "best_step", H5T_NATIVE_INT64, c.best_step);
    write_vector(file.get(), "params", c.params);
    write_vector(file.get(), "adam_m", c.adam_m);
    write_vector(file.get(), "adam_v", c.adam_v);
    H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
    H5_CHECK(H5Fclose(file.release()));  // a close that cannot write its metadata must fail here
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw_if_environment_errno(errno, tmp);
    DB_REQUIRE(false, "cannot rename checkpoint " + tmp + " to " + path);
  }
}

std::optional<Checkpoint> read_checkpoint(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  DB_REQUIRE(id >= 0, "checkpoint " + path + " is unreadable (delete it to restart the run)");
  H5Handle file(id, H5Fclose);
  Checkpoint c;
  c.run_id = read_string_attribute(file.get(), "run_id");
  c.step = read_scalar<int64_t>(file.get(), "step", H5T_NATIVE_INT64);
  c.adam_steps = read_scalar<int64_t>(file.get(), "adam_steps", H5T_NATIVE_INT64);
  c.best_val_loss = read_scalar<double>(file.get(), "best_val_loss", H5T_NATIVE_DOUBLE);
  c.best_step = read_scalar<int64_t>(file.get(), "best_step", H5T_NATIVE_INT64);
  c.params = read_vector(file.get(), "params");
  c.adam_m = read_vector(file.get(), "adam_m");
  c.adam_v = read_vector(file.get(), "adam_v");
  return c;
}

}  // namespace db
