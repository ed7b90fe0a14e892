#include "model/parameters.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace db {

int64_t ParameterSpec::size() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
}

int ParameterLayout::add(ParameterSpec spec) {
  DB_REQUIRE(!index_.count(spec.name), "parameter declared twice: " + spec.name);
  spec.offset = storage_;
  count_ += spec.size();
  storage_ += (spec.size() + kAlignment - 1) / kAlignment * kAlignment;
  index_[spec.name] = int(specs_.size());
  specs_.push_back(std::move(spec));
  return int(specs_.size()) - 1;
}

int ParameterLayout::add_matrix(const std::string& name, std::vector<int64_t> shape,
                                double init_std) {
  ParameterSpec spec;
  spec.name = name;
  spec.shape = std::move(shape);
  spec.init_std = init_std;
  return add(std::move(spec));
}

int ParameterLayout::add_constant(const std::string& name, std::vector<int64_t> shape, double value,
                                  bool weight_decay) {
  ParameterSpec spec;
  spec.name = name;
  spec.shape = std::move(shape);
  spec.init_value = value;
  spec.weight_decay = weight_decay;
  return add(std::move(spec));
}

int ParameterLayout::add_values(const std::string& name, std::vector<int64_t> shape,
                                std::vector<double> values, bool weight_decay) {
  ParameterSpec spec;
  spec.name = name;
  spec.shape = std::move(shape);
  spec.weight_decay = weight_decay;
  DB_REQUIRE(int64_t(values.size()) == spec.size(),
             "init values of " + name + " do not fit its shape");
  spec.init_values = std::move(values);
  return add(std::move(spec));
}

int ParameterLayout::id(const std::string& name) const {
  auto it = index_.find(name);
  DB_REQUIRE(it != index_.end(), "no parameter named " + name);
  return it->second;
}

void ParameterLayout::set_init_std(const std::string& name, double init_std) {
  specs_[id(name)].init_std = init_std;
}

void ParameterLayout::set_weight_decay(const std::string& name, bool decay) {
  specs_[id(name)].weight_decay = decay;
}

int64_t ParameterLayout::count_with_prefix(const std::string& prefix) const {
  int64_t n = 0;
  for (const auto& s : specs_)
    if (s.name.compare(0, prefix.size(), prefix) == 0) n += s.size();
  return n;
}

template <class T>
void ParameterStore<T>::initialize(uint64_t seed) {
  std::vector<T> host(layout_->storage_size());  // the padding stays zero
  for (const ParameterSpec& s : layout_->specs()) {
    T* v = host.data() + s.offset;
    if (s.init_std > 0) {
      Rng rng(seed, s.name);
      for (int64_t i = 0; i < s.size(); ++i) v[i] = T(rng.truncated_normal(s.init_std));
    } else if (!s.init_values.empty()) {
      std::copy(s.init_values.begin(), s.init_values.end(), v);
    } else {
      std::fill(v, v + s.size(), T(s.init_value));
    }
  }
  copy_values_from_host(host);
  zero_grads();
}

template <class T>
void ParameterStore<T>::copy_values_from_host(std::span<const T> host) {
  DB_REQUIRE(int64_t(host.size()) == layout_->storage_size(),
             "parameter vector of " + std::to_string(host.size()) + " values for a buffer of " +
                 std::to_string(layout_->storage_size()));
  memory::copy(values_for_write().data(), values_.space(), host.data(), MemorySpace::host,
               host.size() * sizeof(T));
}

template <class T>
void ParameterStore<T>::keep_bf16_copy() {
  MemorySpaceScope scope(values_.space());
  bf16_values_.resize(values_.size());
  bf16_generation_ = 0;
}

template <class T>
const bfloat16* ParameterStore<T>::bf16_value(int id) const {
  DB_REQUIRE(has_bf16_copy(), "the parameters keep no bf16 copy (bf16 storage is off)");
  DB_REQUIRE(bf16_copy_fresh(),
             "the bf16 copy of the weights is stale: refresh it (Backbone::refresh_weight_copy) "
             "before the forward");
  return bf16_values_.data() + layout_->spec(id).offset;
}

template <class T>
std::span<T> ParameterStore<T>::host_span(Buffer<T>& b) {
  DB_REQUIRE(b.on_host(), "parameters live on the GPU: copy them to the host first");
  return {b.data(), b.size()};
}

template class ParameterStore<float>;
template class ParameterStore<double>;

}  // namespace db
