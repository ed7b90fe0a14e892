// The per-run HDF5 file (doc/hdf5-schema.md). Written by one rank as NAME.h5.tmp and renamed to
// NAME.h5 by publish(), so a file named *.h5 is always complete.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5_handle.hpp"

namespace db {

inline constexpr int kRunFileSchemaVersion = 1;

// One logged training step (the /curves group).
struct CurveRow {
  int64_t step = 0, tokens = 0;
  double train_loss = 0, learning_rate = 0, grad_norm = 0, step_time_s = 0, tokens_per_second = 0,
         mfu = 0;
};

class RunFile {
 public:
  // Creates final_path + ".tmp" (replacing a stale one) with the /curves, /final and
  // /diagnostics groups.
  static RunFile create(const std::string& final_path);
  // Reopens an unfinished final_path + ".tmp" to continue a run from a checkpoint taken after
  // `steps_done` steps: curve rows of steps ≥ steps_done and validations after steps_done are
  // dropped (they came after the checkpoint and will be logged again; the validation at
  // steps_done itself was done before the checkpoint was written).
  static RunFile resume(const std::string& final_path, int64_t steps_done);

  void set_attribute(const std::string& name, const std::string& value);
  void set_attribute(const std::string& name, int64_t value);
  void set_attribute(const std::string& name, double value);
  void set_final(const std::string& name, double value);  // attribute of /final
  // An attribute of the group at `group` ("validation", "validation/check_0"), created with the
  // groups above it when missing.
  void set_group_attribute(const std::string& group, const std::string& name,
                           const std::string& value);
  void set_group_attribute(const std::string& group, const std::string& name, int64_t value);
  void set_group_attribute(const std::string& group, const std::string& name, double value);
  // A float64 dataset /final/NAME (replaced if present).
  void set_final_series(const std::string& name, const std::vector<double>& values);

  void append(const CurveRow& row);
  void append_validation(int64_t step, double val_loss);
  void flush();

  // Closes the file and renames NAME.h5.tmp → NAME.h5.
  void publish();
  const std::string& final_path() const { return final_path_; }

 private:
  RunFile(std::string final_path, H5Handle file);
  void append_value(const char* dataset, const void* value, hid_t type);
  int64_t rows(const char* dataset) const;
  void truncate(const char* dataset, int64_t rows);

  std::string final_path_;
  H5Handle file_;
};

// Reading helpers for tests and tools.
std::string read_string_attribute(hid_t object, const std::string& name);
// Throws "FILE: attribute 'NAME' is an integer, expected a string" when the attribute `attribute`
// (named `name`, of `object`) does not hold values of class `expected` (H5T_STRING, H5T_INTEGER,
// or H5T_FLOAT, which an integer also satisfies): a file edited by hand or by another tool.
void require_attribute_class(hid_t object, hid_t attribute, const std::string& name,
                             H5T_class_t expected);
std::vector<double> read_double_dataset(hid_t file, const std::string& path);

}  // namespace db
