// Rotary position embedding, rotate-half layout (spec §0): for i < hd/2 the pair
// (x[i], x[i+hd/2]) is rotated by angle t·θ^(−2i/hd), t the position in the window.
#pragma once
#include <cstdint>
#include <vector>

namespace db::cpu {

// cos/sin tables [T, hd/2], computed in double (the spec asks for at least fp32).
struct RopeTable {
  int seq_len = 0, head_dim = 0;
  std::vector<double> cos, sin;
  RopeTable() = default;
  RopeTable(int seq_len, int head_dim, double theta);
};

// x is [B·T, heads, hd], rotated in place; inverse = true applies the transpose (backward).
template <class T>
void rope_apply(T* x, const RopeTable& table, int64_t B, int T_len, int heads, bool inverse);

}  // namespace db::cpu
