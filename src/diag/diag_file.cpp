#include "diag/diag_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "core/error.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_library.hpp"

namespace db::diag {
namespace {

H5Handle string_type() {
  H5Handle type(H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

void write_attribute(hid_t object, const std::string& name, const AttributeValue& value) {
  H5Handle space(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  if (const auto* text = std::get_if<std::string>(&value)) {
    H5Handle type = string_type();
    H5Handle attr(H5_CHECK(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                                      H5P_DEFAULT)),
                  H5Aclose);
    const char* c = text->c_str();
    H5_CHECK(H5Awrite(attr.get(), type.get(), &c));
  } else if (const auto* number = std::get_if<double>(&value)) {
    H5Handle attr(H5_CHECK(H5Acreate2(object, name.c_str(), H5T_NATIVE_DOUBLE, space.get(),
                                      H5P_DEFAULT, H5P_DEFAULT)),
                  H5Aclose);
    H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, number));
  } else {
    const int64_t integer = std::get<int64_t>(value);
    H5Handle attr(H5_CHECK(H5Acreate2(object, name.c_str(), H5T_NATIVE_INT64, space.get(),
                                      H5P_DEFAULT, H5P_DEFAULT)),
                  H5Aclose);
    H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_INT64, &integer));
  }
}

void write_dataset(hid_t group, const DiagnosticDataset& set) {
  int64_t count = 1;
  for (int64_t n : set.shape) count *= n;
  DB_REQUIRE(count == int64_t(set.values.size()),
             "diagnostic " + set.name + ": shape does not match its values");
  if (H5_CHECK(H5Lexists(group, set.name.c_str(), H5P_DEFAULT)) > 0)
    H5_CHECK(H5Ldelete(group, set.name.c_str(), H5P_DEFAULT));
  std::vector<hsize_t> dims(set.shape.begin(), set.shape.end());
  H5Handle space(set.shape.empty()
                     ? H5_CHECK(H5Screate(H5S_SCALAR))
                     : H5_CHECK(H5Screate_simple(int(dims.size()), dims.data(), nullptr)),
                 H5Sclose);
  const hid_t type = set.integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE;
  H5Handle data(H5_CHECK(H5Dcreate2(group, set.name.c_str(), type, space.get(), H5P_DEFAULT,
                                    H5P_DEFAULT, H5P_DEFAULT)),
                H5Dclose);
  if (count > 0) {
    if (set.integer) {
      std::vector<int64_t> ints(set.values.begin(), set.values.end());
      H5_CHECK(H5Dwrite(data.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ints.data()));
    } else {
      H5_CHECK(H5Dwrite(data.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, set.values.data()));
    }
  }
  for (const auto& [name, value] : set.attributes) write_attribute(data.get(), name, value);
}

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  DB_REQUIRE(fd >= 0, "cannot open " + path + " to sync it");
  const int rc = ::fsync(fd);
  ::close(fd);
  DB_REQUIRE(rc == 0 || directory, "fsync of " + path + " failed");
}

}  // namespace

DiagnosticDataset DiagnosticDataset::scalar(std::string name, double value) {
  DiagnosticDataset d;
  d.name = std::move(name);
  d.values = {value};
  return d;
}

DiagnosticDataset DiagnosticDataset::vector(std::string name, std::vector<double> values) {
  DiagnosticDataset d;
  d.name = std::move(name);
  d.shape = {int64_t(values.size())};
  d.values = std::move(values);
  return d;
}

DiagnosticDataset DiagnosticDataset::matrix(std::string name, int64_t rows, int64_t cols,
                                            std::vector<double> values) {
  DiagnosticDataset d;
  d.name = std::move(name);
  d.shape = {rows, cols};
  d.values = std::move(values);
  return d;
}

void commit_diagnostics(const std::string& run_file, const std::vector<DiagnosticDataset>& sets) {
  namespace fs = std::filesystem;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  DB_REQUIRE(fs::exists(run_file), "run file " + run_file + " not found");
  const std::string tmp = run_file + ".diag.tmp";
  fs::copy_file(run_file, tmp, fs::copy_options::overwrite_existing);
  try {
    hid_t id = H5Fopen(tmp.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    DB_REQUIRE(id >= 0, "cannot open " + tmp + " for writing the diagnostics");
    H5Handle file(id, close_hdf5_file);
    if (H5_CHECK(H5Lexists(file.get(), "diagnostics", H5P_DEFAULT)) <= 0)
      H5Handle(
          H5_CHECK(H5Gcreate2(file.get(), "diagnostics", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
          H5Gclose);
    H5Handle group(H5_CHECK(H5Gopen2(file.get(), "diagnostics", H5P_DEFAULT)), H5Gclose);
    for (const DiagnosticDataset& set : sets) write_dataset(group.get(), set);
    group.reset();
    H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  fsync_path(tmp, false);
  DB_REQUIRE(std::rename(tmp.c_str(), run_file.c_str()) == 0,
             "cannot rename " + tmp + " to " + run_file);
  const fs::path dir = fs::path(run_file).parent_path();
  fsync_path(dir.empty() ? "." : dir.string(), true);
}

DiagnosticDataset read_diagnostic(const std::string& run_file, const std::string& name) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t id = H5Fopen(run_file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  DB_REQUIRE(id >= 0, "cannot open run file " + run_file);
  H5Handle file(id, close_hdf5_file);
  const std::string path = "diagnostics/" + name;
  DB_REQUIRE(H5Lexists(file.get(), "diagnostics", H5P_DEFAULT) > 0 &&
                 H5Lexists(file.get(), path.c_str(), H5P_DEFAULT) > 0,
             run_file + " has no dataset " + path);
  H5Handle set(H5_CHECK(H5Dopen2(file.get(), path.c_str(), H5P_DEFAULT)), H5Dclose);
  H5Handle space(H5_CHECK(H5Dget_space(set.get())), H5Sclose);
  const int rank = H5_CHECK(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(rank);
  if (rank > 0) H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  DiagnosticDataset d;
  d.name = name;
  d.shape.assign(dims.begin(), dims.end());
  d.values.resize(H5_CHECK(H5Sget_simple_extent_npoints(space.get())));
  if (!d.values.empty())
    H5_CHECK(H5Dread(set.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.values.data()));
  return d;
}

}  // namespace db::diag
