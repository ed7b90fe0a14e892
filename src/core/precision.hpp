// The arithmetic of a run's matrix products (train.precision): bf16 runs them on bf16 tensor
// cores (inputs rounded to bf16, fp32 accumulation; weights, activations, gradients and
// optimizer state stay fp32); fp32 keeps every product in fp32 (parity runs). A backend without
// bf16 products (the CPU) computes in fp32 (or double in the gradient checks) either way.
#pragma once
#include <string>

namespace db {

enum class Precision { fp32, bf16 };
Precision parse_precision(const std::string& name);  // "fp32" | "bf16", else db::Error
const char* precision_name(Precision precision);

}  // namespace db
