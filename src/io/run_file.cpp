#include "io/run_file.hpp"

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "core/error.hpp"
#include "io/hdf5_library.hpp"

namespace db {
namespace {

const char* const kCurveInt[] = {"step", "tokens"};
const char* const kCurveFloat[] = {"train_loss",  "learning_rate",     "grad_norm",
                                   "step_time_s", "tokens_per_second", "mfu"};

H5Handle open_group(hid_t file, const char* name) {
  return H5Handle(H5_CHECK(H5Gopen2(file, name, H5P_DEFAULT)), H5Gclose);
}

// A 1-D, chunked, unlimited dataset (curves grow one row per logged step).
void create_curve(hid_t group, const char* name, hid_t type) {
  hsize_t dims[1] = {0}, max_dims[1] = {H5S_UNLIMITED}, chunk[1] = {256};
  H5Handle space(H5_CHECK(H5Screate_simple(1, dims, max_dims)), H5Sclose);
  H5Handle props(H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)), H5Pclose);
  H5_CHECK(H5Pset_chunk(props.get(), 1, chunk));
  H5Handle set(
      H5_CHECK(H5Dcreate2(group, name, type, space.get(), H5P_DEFAULT, props.get(), H5P_DEFAULT)),
      H5Dclose);
}

template <class Setter>
void replace_attribute(hid_t object, const std::string& name, hid_t type, Setter write) {
  if (H5_CHECK(H5Aexists(object, name.c_str()))) H5_CHECK(H5Adelete(object, name.c_str()));
  H5Handle space(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  H5Handle attr(
      H5_CHECK(H5Acreate2(object, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT)),
      H5Aclose);
  write(attr.get());
}

H5Handle string_type() {
  H5Handle type(H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

}  // namespace

RunFile::RunFile(std::string final_path, H5Handle file)
    : final_path_(std::move(final_path)), file_(std::move(file)) {}

RunFile RunFile::create(const std::string& final_path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become db::Error, not stack dumps
  const std::string tmp = final_path + ".tmp";
  std::filesystem::create_directories(std::filesystem::path(final_path).parent_path().empty()
                                          ? "."
                                          : std::filesystem::path(final_path).parent_path());
  hid_t id = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0) throw_if_hdf5_environment_error(tmp);
  DB_REQUIRE(id >= 0, "cannot create run file " + tmp);
  RunFile run(final_path, H5Handle(id, close_hdf5_file));
  hid_t f = run.file_.get();
  {
    H5Handle curves(H5_CHECK(H5Gcreate2(f, "curves", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
                    H5Gclose);
    for (const char* name : kCurveInt) create_curve(curves.get(), name, H5T_NATIVE_INT64);
    for (const char* name : kCurveFloat) create_curve(curves.get(), name, H5T_NATIVE_DOUBLE);
    create_curve(curves.get(), "val_step", H5T_NATIVE_INT64);
    create_curve(curves.get(), "val_loss", H5T_NATIVE_DOUBLE);
  }
  H5Handle final_group(H5_CHECK(H5Gcreate2(f, "final", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
                       H5Gclose);
  H5Handle diagnostics(
      H5_CHECK(H5Gcreate2(f, "diagnostics", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)), H5Gclose);
  run.set_attribute("schema_version", int64_t(kRunFileSchemaVersion));
  return run;
}

RunFile RunFile::resume(const std::string& final_path, int64_t steps_done) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const std::string tmp = final_path + ".tmp";
  hid_t id = H5Fopen(tmp.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  DB_REQUIRE(id >= 0, "cannot reopen unfinished run file " + tmp);
  RunFile run(final_path, H5Handle(id, close_hdf5_file));
  // Keep the rows logged up to the checkpoint; later ones will be logged again.
  std::vector<double> steps = read_double_dataset(run.file_.get(), "curves/step");
  int64_t keep = 0;
  while (keep < int64_t(steps.size()) && steps[keep] < steps_done) ++keep;
  for (const char* name : kCurveInt) run.truncate((std::string("curves/") + name).c_str(), keep);
  for (const char* name : kCurveFloat) run.truncate((std::string("curves/") + name).c_str(), keep);
  std::vector<double> val_steps = read_double_dataset(run.file_.get(), "curves/val_step");
  int64_t keep_val = 0;
  while (keep_val < int64_t(val_steps.size()) && val_steps[keep_val] <= steps_done) ++keep_val;
  run.truncate("curves/val_step", keep_val);
  run.truncate("curves/val_loss", keep_val);
  return run;
}

void RunFile::set_attribute(const std::string& name, const std::string& value) {
  H5Handle type = string_type();
  replace_attribute(file_.get(), name, type.get(), [&](hid_t attr) {
    const char* text = value.c_str();
    H5_CHECK(H5Awrite(attr, type.get(), &text));
  });
}

void RunFile::set_attribute(const std::string& name, int64_t value) {
  replace_attribute(file_.get(), name, H5T_NATIVE_INT64,
                    [&](hid_t attr) { H5_CHECK(H5Awrite(attr, H5T_NATIVE_INT64, &value)); });
}

void RunFile::set_attribute(const std::string& name, double value) {
  replace_attribute(file_.get(), name, H5T_NATIVE_DOUBLE,
                    [&](hid_t attr) { H5_CHECK(H5Awrite(attr, H5T_NATIVE_DOUBLE, &value)); });
}

void RunFile::set_final(const std::string& name, double value) {
  H5Handle group = open_group(file_.get(), "final");
  replace_attribute(group.get(), name, H5T_NATIVE_DOUBLE,
                    [&](hid_t attr) { H5_CHECK(H5Awrite(attr, H5T_NATIVE_DOUBLE, &value)); });
}

namespace {
// The group at `path` ("a/b"), each missing group on the way created.
H5Handle open_or_create_group(hid_t file, const std::string& path) {
  for (size_t end = 0; end != std::string::npos;) {
    end = path.find('/', end + 1);
    const std::string part = path.substr(0, end);
    if (H5_CHECK(H5Lexists(file, part.c_str(), H5P_DEFAULT)) <= 0)
      H5Handle(H5_CHECK(H5Gcreate2(file, part.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
               H5Gclose);
  }
  return open_group(file, path.c_str());
}
}  // namespace

void RunFile::set_group_attribute(const std::string& group, const std::string& name,
                                  const std::string& value) {
  H5Handle g = open_or_create_group(file_.get(), group);
  H5Handle type = string_type();
  replace_attribute(g.get(), name, type.get(), [&](hid_t attr) {
    const char* text = value.c_str();
    H5_CHECK(H5Awrite(attr, type.get(), &text));
  });
}

void RunFile::set_group_attribute(const std::string& group, const std::string& name,
                                  int64_t value) {
  H5Handle g = open_or_create_group(file_.get(), group);
  replace_attribute(g.get(), name, H5T_NATIVE_INT64,
                    [&](hid_t attr) { H5_CHECK(H5Awrite(attr, H5T_NATIVE_INT64, &value)); });
}

void RunFile::set_group_attribute(const std::string& group, const std::string& name, double value) {
  H5Handle g = open_or_create_group(file_.get(), group);
  replace_attribute(g.get(), name, H5T_NATIVE_DOUBLE,
                    [&](hid_t attr) { H5_CHECK(H5Awrite(attr, H5T_NATIVE_DOUBLE, &value)); });
}

void RunFile::set_final_series(const std::string& name, const std::vector<double>& values) {
  H5Handle group = open_group(file_.get(), "final");
  if (H5_CHECK(H5Lexists(group.get(), name.c_str(), H5P_DEFAULT)))
    H5_CHECK(H5Ldelete(group.get(), name.c_str(), H5P_DEFAULT));
  hsize_t dims[1] = {values.size()};
  H5Handle space(H5_CHECK(H5Screate_simple(1, dims, nullptr)), H5Sclose);
  H5Handle set(H5_CHECK(H5Dcreate2(group.get(), name.c_str(), H5T_NATIVE_DOUBLE, space.get(),
                                   H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)),
               H5Dclose);
  if (!values.empty())
    H5_CHECK(H5Dwrite(set.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
}

int64_t RunFile::rows(const char* dataset) const {
  H5Handle set(H5_CHECK(H5Dopen2(file_.get(), dataset, H5P_DEFAULT)), H5Dclose);
  H5Handle space(H5_CHECK(H5Dget_space(set.get())), H5Sclose);
  hsize_t dims[1];
  H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims, nullptr));
  return int64_t(dims[0]);
}

void RunFile::truncate(const char* dataset, int64_t keep) {
  H5Handle set(H5_CHECK(H5Dopen2(file_.get(), dataset, H5P_DEFAULT)), H5Dclose);
  hsize_t dims[1] = {hsize_t(keep)};
  H5_CHECK(H5Dset_extent(set.get(), dims));
}

void RunFile::append_value(const char* dataset, const void* value, hid_t type) {
  const int64_t n = rows(dataset);
  H5Handle set(H5_CHECK(H5Dopen2(file_.get(), dataset, H5P_DEFAULT)), H5Dclose);
  hsize_t new_dims[1] = {hsize_t(n + 1)};
  H5_CHECK(H5Dset_extent(set.get(), new_dims));
  H5Handle file_space(H5_CHECK(H5Dget_space(set.get())), H5Sclose);
  hsize_t start[1] = {hsize_t(n)}, count[1] = {1};
  H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr));
  H5Handle mem_space(H5_CHECK(H5Screate_simple(1, count, nullptr)), H5Sclose);
  H5_CHECK(H5Dwrite(set.get(), type, mem_space.get(), file_space.get(), H5P_DEFAULT, value));
}

void RunFile::append(const CurveRow& row) {
  append_value("curves/step", &row.step, H5T_NATIVE_INT64);
  append_value("curves/tokens", &row.tokens, H5T_NATIVE_INT64);
  const double values[] = {row.train_loss,  row.learning_rate,     row.grad_norm,
                           row.step_time_s, row.tokens_per_second, row.mfu};
  for (size_t i = 0; i < std::size(kCurveFloat); ++i)
    append_value((std::string("curves/") + kCurveFloat[i]).c_str(), &values[i], H5T_NATIVE_DOUBLE);
}

void RunFile::append_validation(int64_t step, double val_loss) {
  append_value("curves/val_step", &step, H5T_NATIVE_INT64);
  append_value("curves/val_loss", &val_loss, H5T_NATIVE_DOUBLE);
}

void RunFile::flush() {
  H5_CHECK(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL));
}

void RunFile::publish() {
  flush();
  // A file that cannot be closed cleanly is not published.
  H5_CHECK(close_hdf5_file(file_.release()));
  const std::string tmp = final_path_ + ".tmp";
  if (std::rename(tmp.c_str(), final_path_.c_str()) != 0) {
    throw_if_environment_errno(errno, tmp);
    DB_REQUIRE(false, "cannot rename " + tmp + " to " + final_path_);
  }
}

namespace {

// What values of an HDF5 type class are, for messages.
const char* class_text(H5T_class_t type_class) {
  switch (type_class) {
    case H5T_INTEGER:
      return "an integer";
    case H5T_FLOAT:
      return "a floating-point number";
    case H5T_STRING:
      return "a string";
    case H5T_COMPOUND:
      return "a compound";
    case H5T_ENUM:
      return "an enum";
    case H5T_ARRAY:
      return "an array";
    case H5T_VLEN:
      return "a variable-length sequence";
    case H5T_REFERENCE:
      return "a reference";
    default:
      return "of another type";
  }
}

}  // namespace

void require_attribute_class(hid_t object, hid_t attribute, const std::string& name,
                             H5T_class_t expected) {
  H5Handle stored(H5_CHECK(H5Aget_type(attribute)), H5Tclose);
  const H5T_class_t found = H5Tget_class(stored.get());
  if (found == expected || (expected == H5T_FLOAT && found == H5T_INTEGER)) return;
  char file[4096] = "", path[1024] = "";
  H5Fget_name(object, file, sizeof file);
  H5Iget_name(object, path, sizeof path);
  const std::string of = path[0] && std::string(path) != "/" ? std::string(" of ") + path : "";
  throw Error(std::string(file) + ": attribute '" + name + "'" + of + " is " + class_text(found) +
              ", expected " + class_text(expected));
}

std::string read_string_attribute(hid_t object, const std::string& name) {
  H5Handle attr(H5_CHECK(H5Aopen(object, name.c_str(), H5P_DEFAULT)), H5Aclose);
  require_attribute_class(object, attr.get(), name, H5T_STRING);
  H5Handle type = string_type();
  // Read in the character set it was written with (HDF5 does not convert ASCII <-> UTF-8).
  H5Handle stored(H5_CHECK(H5Aget_type(attr.get())), H5Tclose);
  H5_CHECK(H5Tset_cset(type.get(), H5_CHECK(H5Tget_cset(stored.get()))));
  char* text = nullptr;
  H5_CHECK(H5Aread(attr.get(), type.get(), &text));
  std::string value = text ? text : "";
  H5free_memory(text);
  return value;
}

std::vector<double> read_double_dataset(hid_t file, const std::string& path) {
  H5Handle set(H5_CHECK(H5Dopen2(file, path.c_str(), H5P_DEFAULT)), H5Dclose);
  H5Handle space(H5_CHECK(H5Dget_space(set.get())), H5Sclose);
  const hssize_t n = H5_CHECK(H5Sget_simple_extent_npoints(space.get()));
  std::vector<double> values(n);
  if (n > 0)
    H5_CHECK(H5Dread(set.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()));
  return values;
}

}  // namespace db
