#include "io/checkpoint.hpp"

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "core/error.hpp"
#include "io/hdf5_handle.hpp"
#include "io/hdf5_library.hpp"
#include "io/model_fields.hpp"
#include "io/named_tensors.hpp"
#include "io/run_file.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"

namespace db {
namespace {

template <class T>
void write_scalar(hid_t file, const char* name, hid_t type, const T& value) {
  H5Handle space(H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  H5Handle attr(H5_CHECK(H5Acreate2(file, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT)),
                H5Aclose);
  H5_CHECK(H5Awrite(attr.get(), type, &value));
}

void write_string(hid_t file, const char* name, const std::string& value) {
  H5Handle type(H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));  // as every string of the run file
  const char* text = value.c_str();
  write_scalar(file, name, type.get(), text);
}

void write_int(hid_t file, const char* name, int64_t value) {
  write_scalar(file, name, H5T_NATIVE_INT64, value);
}

void write_double(hid_t file, const char* name, double value) {
  write_scalar(file, name, H5T_NATIVE_DOUBLE, value);
}

template <class T>
T read_scalar(hid_t file, const char* name, hid_t type) {
  H5Handle attr(H5_CHECK(H5Aopen(file, name, H5P_DEFAULT)), H5Aclose);
  require_attribute_class(file, attr.get(), name, H5Tget_class(type));
  T value{};
  H5_CHECK(H5Aread(attr.get(), type, &value));
  return value;
}

// The model config as attributes (io/model_fields.hpp), so that a loader derives every tensor
// shape from the file alone (doc/parameters.md).
void write_model_attributes(hid_t file, const ModelConfig& m) {
  for (const ModelField& field : model_fields(m)) {
    const char* key = field.key.c_str();
    if (const auto* s = std::get_if<std::string>(&field.value))
      write_string(file, key, *s);
    else if (const auto* i = std::get_if<int64_t>(&field.value))
      write_int(file, key, *i);
    else
      write_double(file, key, std::get<double>(field.value));
  }
}

H5Handle open_for_reading(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  DB_REQUIRE(id >= 0, "checkpoint " + path + " is unreadable (delete it to restart the run)");
  return H5Handle(id, close_hdf5_file);
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& c) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const ParameterLayout layout = build_layout(c.model);
  const std::string tmp = path + ".tmp";
  {
    hid_t id = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (id < 0) throw_if_hdf5_environment_error(tmp);
    DB_REQUIRE(id >= 0, "cannot create checkpoint " + tmp);
    H5Handle file(id, close_hdf5_file);
    write_int(file.get(), "format_version", kWeightsFormatVersion);
    write_string(file.get(), "run_id", c.run_id);
    write_int(file.get(), "step", c.step);
    write_int(file.get(), "adam_steps", c.adam_steps);
    write_double(file.get(), "best_val_loss", c.best_val_loss);
    write_int(file.get(), "best_step", c.best_step);
    write_model_attributes(file.get(), c.model);
    if (c.seq_len > 0) write_int(file.get(), "seq_len", c.seq_len);
    write_named_tensors(file.get(), "params", layout, c.params);
    if (!c.adam_m.empty()) write_named_tensors(file.get(), "adam_m", layout, c.adam_m);
    if (!c.adam_v.empty()) write_named_tensors(file.get(), "adam_v", layout, c.adam_v);
    H5_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
    H5_CHECK(
        close_hdf5_file(file.release()));  // a close that cannot write its metadata must fail here
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw_if_environment_errno(errno, tmp);
    DB_REQUIRE(false, "cannot rename checkpoint " + tmp + " to " + path);
  }
}

std::optional<std::string> read_checkpoint_run_id(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  const H5Handle file = open_for_reading(path);
  return read_string_attribute(file.get(), "run_id");
}

std::optional<Checkpoint> read_checkpoint(const std::string& path, const ModelConfig& model) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  const H5Handle file = open_for_reading(path);
  const ParameterLayout layout = build_layout(model);
  Checkpoint c;
  c.model = model;
  c.run_id = read_string_attribute(file.get(), "run_id");
  c.step = read_scalar<int64_t>(file.get(), "step", H5T_NATIVE_INT64);
  c.adam_steps = read_scalar<int64_t>(file.get(), "adam_steps", H5T_NATIVE_INT64);
  c.best_val_loss = read_scalar<double>(file.get(), "best_val_loss", H5T_NATIVE_DOUBLE);
  c.best_step = read_scalar<int64_t>(file.get(), "best_step", H5T_NATIVE_INT64);
  DB_REQUIRE(has_object(file.get(), "params"), path + " holds no params");
  c.params = read_named_tensors(file.get(), "params", layout, path);
  // Weight files carry no optimizer state (format 1: empty datasets; format 2: no groups).
  if (has_object(file.get(), "adam_m"))
    c.adam_m = read_named_tensors(file.get(), "adam_m", layout, path);
  if (has_object(file.get(), "adam_v"))
    c.adam_v = read_named_tensors(file.get(), "adam_v", layout, path);
  return c;
}

Checkpoint read_weights_description(const std::string& path) {
  DB_REQUIRE(std::filesystem::exists(path), "weights file " + path + " not found");
  const H5Handle file = open_for_reading(path);
  const hid_t f = file.get();
  DB_REQUIRE(H5Aexists(f, "format_version") > 0,
             path +
                 " is a format-1 weights file without a model config; `depthbench diagnose` "
                 "reads it with its run file, or retrain to get a format-2 file");
  Checkpoint c;
  c.run_id = read_string_attribute(f, "run_id");
  c.model = model_from_fields(
      [&](const std::string& key, const FieldValue& kind) -> std::optional<FieldValue> {
        if (H5Aexists(f, key.c_str()) <= 0) return std::nullopt;
        if (std::holds_alternative<std::string>(kind)) return read_string_attribute(f, key);
        if (std::holds_alternative<int64_t>(kind))
          return read_scalar<int64_t>(f, key.c_str(), H5T_NATIVE_INT64);
        return read_scalar<double>(f, key.c_str(), H5T_NATIVE_DOUBLE);
      },
      path);
  if (H5Aexists(f, "seq_len") > 0) c.seq_len = read_scalar<int64_t>(f, "seq_len", H5T_NATIVE_INT64);
  return c;
}

}  // namespace db
