// Named parameters in one flat buffer (doc/parameters.md). The layout (names, shapes, init
// rules, weight decay) is independent of the number type; the store holds values and
// gradients contiguously so that all-reduce, clipping, AdamW and checkpoints see one array.
// Each parameter starts at a multiple of ParameterLayout::kAlignment elements; the gaps between
// parameters are zero padding that no op reads, with gradient 0 and no weight decay.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/bfloat16.hpp"
#include "core/buffer.hpp"

namespace db {

struct ParameterSpec {
  std::string name;
  std::vector<int64_t> shape;
  // Init: truncated normal N(0, init_std²) cut at ±3·init_std when init_std > 0, else the
  // explicit init_values when given (structured inits such as HC's one-hot routing), else the
  // constant init_value.
  double init_std = 0.0;
  double init_value = 0.0;
  bool weight_decay = true;
  std::vector<double> init_values;
  int64_t offset = 0;  // into the flat buffer, a multiple of ParameterLayout::kAlignment
  int64_t size() const;
};

class ParameterLayout {
 public:
  // 8 elements: 32 bytes in fp32 and 16 bytes in the GPU's bf16 weight copy, so that every
  // parameter can be read with 16-byte vector loads in either type.
  static constexpr int64_t kAlignment = 8;

  // Returns the parameter's id. Names are unique.
  int add_matrix(const std::string& name, std::vector<int64_t> shape, double init_std);
  int add_constant(const std::string& name, std::vector<int64_t> shape, double value,
                   bool weight_decay = true);
  // A parameter initialised to explicit values (row-major, one per element).
  int add_values(const std::string& name, std::vector<int64_t> shape, std::vector<double> values,
                 bool weight_decay = true);
  int id(const std::string& name) const;  // throws when unknown
  bool has(const std::string& name) const { return index_.count(name) > 0; }
  void set_init_std(const std::string& name, double init_std);
  void set_weight_decay(const std::string& name, bool decay);

  const ParameterSpec& spec(int id) const { return specs_[id]; }
  const std::vector<ParameterSpec>& specs() const { return specs_; }
  // The model's parameter count: the sum of the sizes (what FLOPs and reports use).
  int64_t parameter_count() const { return count_; }
  // Length of the flat buffer, padding included: the size of every array indexed by
  // ParameterSpec::offset (values, gradients, optimizer moments, decay mask, checkpoints).
  int64_t storage_size() const { return storage_; }
  // Sum of the sizes of parameters whose name starts with the prefix.
  int64_t count_with_prefix(const std::string& prefix) const;

 private:
  int add(ParameterSpec spec);
  std::vector<ParameterSpec> specs_;
  std::unordered_map<std::string, int> index_;
  int64_t count_ = 0;
  int64_t storage_ = 0;
};

// Values and gradients live in the memory space current at construction (core/memory.hpp):
// host for the CPU backend, the GPU for CUDA. values()/grads() give host spans and are only
// valid on the host; copy_values_* move all values across spaces (checkpoints, weight files).
//
// Under bf16 storage (train.activation_dtype, model/sublayer_cores.hpp) the store also keeps a
// bf16 copy of the values, same layout and offsets, in the same space, for the products that
// read the weights in bf16. The AdamW step writes it in the same pass as the update
// (train/adamw.hpp); Backbone::refresh_weight_copy rounds it afresh when anything else changed
// the values. Staleness is tracked by a generation: every mutable access to the values
// (value(id), values(), value_buffer(), copy_values_from_host, initialize) counts one, and the
// copy records the generation it was written at. A write through a pointer taken *before* the
// copy was last written is the one thing this cannot see: take the pointer, write, then run.
template <class T>
class ParameterStore {
 public:
  explicit ParameterStore(const ParameterLayout& layout)
      : layout_(&layout), values_(layout.storage_size()), grads_(layout.storage_size()) {}

  // Draws every parameter from its own random stream keyed by (seed, name).
  void initialize(uint64_t seed);
  void zero_grads() { grads_.zero(); }

  T* value(int id) { return values_for_write().data() + layout_->spec(id).offset; }
  const T* value(int id) const { return values_.data() + layout_->spec(id).offset; }
  T* grad(int id) { return grads_.data() + layout_->spec(id).offset; }
  std::span<T> values() { return host_span(values_for_write()); }
  std::span<T> grads() { return host_span(grads_); }
  std::span<const T> values() const { return host_span(const_cast<Buffer<T>&>(values_)); }
  Buffer<T>& value_buffer() { return values_for_write(); }
  const Buffer<T>& value_buffer() const { return values_; }
  Buffer<T>& grad_buffer() { return grads_; }
  const Buffer<T>& grad_buffer() const { return grads_; }
  // All values to / from host memory, in any space.
  std::vector<T> values_to_host() const { return values_.to_host(); }
  void copy_values_from_host(std::span<const T> host);
  const ParameterLayout& layout() const { return *layout_; }

  // --- the bf16 copy of the values (bf16 storage only) -------------------------------------
  // Allocates it (stale until first written), in the values' memory space.
  void keep_bf16_copy();
  bool has_bf16_copy() const { return !bf16_values_.empty(); }
  // Whether the copy holds the rounding of the current values.
  bool bf16_copy_fresh() const { return has_bf16_copy() && bf16_generation_ == generation_; }
  // Parameter id's copy; db::Error when stale (a forward must refresh before it reads).
  const bfloat16* bf16_value(int id) const;
  // For the writers (the AdamW step, the refresh): the whole copy, or null without one. A
  // writer takes the values mutably first, rounds every element of them into the copy, then
  // calls bf16_copy_written().
  bfloat16* bf16_copy_for_write() { return has_bf16_copy() ? bf16_values_.data() : nullptr; }
  void bf16_copy_written() { bf16_generation_ = generation_; }
  // The whole copy, fresh or not, in host memory (tests, diagnostics).
  std::vector<bfloat16> bf16_copy_to_host() const { return bf16_values_.to_host(); }

 private:
  static std::span<T> host_span(Buffer<T>& b);
  Buffer<T>& values_for_write() {
    ++generation_;
    return values_;
  }
  const ParameterLayout* layout_;
  Buffer<T> values_, grads_;
  Buffer<bfloat16> bf16_values_;
  uint64_t generation_ = 1;       // mutable accesses to values_ so far, + 1
  uint64_t bf16_generation_ = 0;  // generation_ when bf16_values_ was last written (0: never)
};

}  // namespace db
