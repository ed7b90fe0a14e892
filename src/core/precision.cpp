#include "core/precision.hpp"

#include "core/error.hpp"

namespace db {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  throw Error("unknown precision '" + name + "' (valid: bf16, fp32)");
}

const char* precision_name(Precision precision) {
  return precision == Precision::bf16 ? "bf16" : "fp32";
}

}  // namespace db
