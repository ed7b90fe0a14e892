// Parameter-shaped buffers (weights, AdamW moments) as one HDF5 dataset per parameter, named
// and shaped as in doc/parameters.md, so that any tool reads a tensor by name
// (`f["params/blocks.3.wq"]` in h5py). The trainer itself holds one flat buffer in layout order
// (ParameterSpec::offset); these functions translate between the two.
#pragma once
#include <hdf5.h>

#include <span>
#include <string>
#include <vector>

#include "model/parameters.hpp"

namespace db {

// Creates the group `group` with one float32 dataset per parameter of the layout.
void write_named_tensors(hid_t file, const std::string& group, const ParameterLayout& layout,
                         std::span<const float> values);

// Reads `group` back into layout order. Every parameter must be present with its shape; a
// dataset called `group` instead (the flat vector of format 1) is read as it is and must hold
// exactly the layout's size. `source` names the file in error messages.
std::vector<float> read_named_tensors(hid_t file, const std::string& group,
                                      const ParameterLayout& layout, const std::string& source);

// Whether the file has a group or dataset of that name.
bool has_object(hid_t file, const std::string& name);

}  // namespace db
