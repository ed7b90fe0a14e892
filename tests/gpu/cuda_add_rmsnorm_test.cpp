// The fused residual add + norm kernel (ops/cuda/add_rmsnorm.cu) against the CPU's fused op on
// random inputs (fp32 bound), and bit for bit against the CUDA pair it replaces — axpby, then
// rmsnorm_forward / layernorm_forward on the sum — whose rounding and reduction order it shares
// (norm_row.cuh). The in-place add (alpha = 1, sum = branch) and the up-weighted skip of
// DeepNorm and KEEL (alpha ≠ 1); a width whose row needs more than 48 KiB of shared memory, and
// one (12 280) whose row fits 48 KiB only without the kernel's static scratch. And Sandwich-LN's
// branch norm ahead of the add (norm_add_rmsnorm_forward) in the same way.
// Without a GPU each case prints "no GPU: skipped" and passes.
#define BOOST_TEST_MODULE cuda_add_rmsnorm
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cstring>

#include "gpu/gpu_support.hpp"
#include "ops/cpu/rmsnorm.hpp"
#include "ops/cuda/add_rmsnorm.hpp"
#include "ops/cuda/rmsnorm.hpp"

using namespace db;
using namespace db::test;
using Vec = std::vector<float>;

namespace {

bool same_bits(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Shape {
  int N, d;
};
constexpr double kEps = 1e-6;

void check(bool layernorm) {
  for (const Shape s : {Shape{37, 1024}, Shape{5, 70}, Shape{3, 13000}, Shape{3, 12280}}) {
    const size_t count = size_t(s.N) * s.d;
    const Vec x = random_floats(count, 21), branch = random_floats(count, 22, 0.3);
    const Vec g = random_floats(s.d, 23);
    auto x_d = to_device<float>(x), g_d = to_device<float>(g);
    for (const float alpha : {1.f, 2.3784142f}) {
      BOOST_TEST_CONTEXT("N " << s.N << ", d " << s.d << ", alpha " << alpha) {
        const bool in_place = alpha == 1.f;
        // CPU: the fused op, in place or into a buffer of its own.
        Vec sum = branch, y(count), mean(s.N), rstd(s.N), own(count);
        float* cpu_sum = in_place ? sum.data() : own.data();
        if (layernorm)
          cpu::add_layernorm_forward(cpu_sum, y.data(), mean.data(), rstd.data(), x.data(),
                                     sum.data(), alpha, g.data(), s.N, s.d, kEps);
        else
          cpu::add_rmsnorm_forward(cpu_sum, y.data(), rstd.data(), x.data(), sum.data(), alpha,
                                   g.data(), s.N, s.d, kEps);
        if (!in_place) sum = own;

        // GPU fused.
        auto branch_d = to_device<float>(branch);
        cuda::DeviceBuffer<float> own_d(count), y_d(count), mean_d(s.N), rstd_d(s.N);
        float* gpu_sum = in_place ? branch_d.data() : own_d.data();
        if (layernorm)
          cuda::add_layernorm_forward(gpu_sum, y_d.data(), mean_d.data(), rstd_d.data(), x_d.data(),
                                      branch_d.data(), alpha, g_d.data(), s.N, s.d, kEps);
        else
          cuda::add_rmsnorm_forward(gpu_sum, y_d.data(), rstd_d.data(), x_d.data(), branch_d.data(),
                                    alpha, g_d.data(), s.N, s.d, kEps);
        const Vec fused_sum = in_place ? branch_d.download() : own_d.download();
        const Vec fused_y = y_d.download(), fused_rstd = rstd_d.download();
        BOOST_TEST(within("sum vs cpu", relative_error(fused_sum, sum), kFp32Tolerance));
        BOOST_TEST(within("y vs cpu", relative_error(fused_y, y), kFp32Tolerance));
        BOOST_TEST(within("rstd vs cpu", relative_error(fused_rstd, rstd), kFp32Tolerance));
        if (layernorm)
          BOOST_TEST(within("mean vs cpu", relative_error(mean_d.download(), mean), 1e-4));

        // GPU unfused, as the designs wrote it before: axpby (in place, or on a copy of x),
        // then the norm of the sum.
        auto pair_sum_d = to_device<float>(in_place ? branch : x);
        auto pair_branch_d = to_device<float>(branch);
        if (in_place)
          cuda::axpby(pair_sum_d.data(), 1.f, x_d.data(), 1.f, int64_t(count));
        else
          cuda::axpby(pair_sum_d.data(), 1.f, pair_branch_d.data(), alpha, int64_t(count));
        cuda::DeviceBuffer<float> pair_y_d(count), pair_mean_d(s.N), pair_rstd_d(s.N);
        if (layernorm)
          cuda::layernorm_forward(pair_y_d.data(), pair_mean_d.data(), pair_rstd_d.data(),
                                  pair_sum_d.data(), g_d.data(), s.N, s.d, kEps);
        else
          cuda::rmsnorm_forward(pair_y_d.data(), pair_rstd_d.data(), pair_sum_d.data(), g_d.data(),
                                s.N, s.d, kEps);
        BOOST_TEST(same_bits(fused_sum, pair_sum_d.download()));
        BOOST_TEST(same_bits(fused_y, pair_y_d.download()));
        BOOST_TEST(same_bits(fused_rstd, pair_rstd_d.download()));
        if (layernorm) BOOST_TEST(same_bits(mean_d.download(), pair_mean_d.download()));
      }
    }
  }
}

// Sandwich-LN's branch norm, add and next norm in one kernel, against the CPU's op (the two
// steps) and bit for bit against the CUDA pair it replaces.
void check_branch_norm() {
  for (const Shape s : {Shape{37, 1024}, Shape{5, 70}, Shape{3, 13000}, Shape{3, 12280}}) {
    BOOST_TEST_CONTEXT("N " << s.N << ", d " << s.d) {
      const size_t count = size_t(s.N) * s.d;
      const Vec x = random_floats(count, 31), branch = random_floats(count, 32, 3.0);
      const Vec g = random_floats(s.d, 33), branch_g = random_floats(s.d, 34);
      Vec sum(count), y(count), rstd(s.N), branch_rstd(s.N);
      cpu::rmsnorm_forward(sum.data(), branch_rstd.data(), branch.data(), branch_g.data(), s.N, s.d,
                           kEps);
      cpu::add_rmsnorm_forward(sum.data(), y.data(), rstd.data(), x.data(), sum.data(), 1.f,
                               g.data(), s.N, s.d, kEps);

      auto x_d = to_device<float>(x), branch_d = to_device<float>(branch);
      auto g_d = to_device<float>(g), branch_g_d = to_device<float>(branch_g);
      cuda::DeviceBuffer<float> sum_d(count), y_d(count), rstd_d(s.N), branch_rstd_d(s.N);
      cuda::norm_add_rmsnorm_forward(sum_d.data(), y_d.data(), rstd_d.data(), branch_rstd_d.data(),
                                     x_d.data(), branch_d.data(), branch_g_d.data(), g_d.data(),
                                     s.N, s.d, kEps);
      const Vec fused_sum = sum_d.download(), fused_y = y_d.download();
      const Vec fused_rstd = rstd_d.download(), fused_branch_rstd = branch_rstd_d.download();
      BOOST_TEST(within("sum vs cpu", relative_error(fused_sum, sum), kFp32Tolerance));
      BOOST_TEST(within("y vs cpu", relative_error(fused_y, y), kFp32Tolerance));
      BOOST_TEST(within("rstd vs cpu", relative_error(fused_rstd, rstd), kFp32Tolerance));
      BOOST_TEST(within("branch rstd vs cpu", relative_error(fused_branch_rstd, branch_rstd),
                        kFp32Tolerance));

      cuda::DeviceBuffer<float> pair_sum_d(count), pair_y_d(count), pair_rstd_d(s.N),
          pair_branch_rstd_d(s.N);
      cuda::rmsnorm_forward(pair_sum_d.data(), pair_branch_rstd_d.data(), branch_d.data(),
                            branch_g_d.data(), s.N, s.d, kEps);
      cuda::add_rmsnorm_forward(pair_sum_d.data(), pair_y_d.data(), pair_rstd_d.data(), x_d.data(),
                                pair_sum_d.data(), 1.f, g_d.data(), s.N, s.d, kEps);
      BOOST_TEST(same_bits(fused_sum, pair_sum_d.download()));
      BOOST_TEST(same_bits(fused_y, pair_y_d.download()));
      BOOST_TEST(same_bits(fused_rstd, pair_rstd_d.download()));
      BOOST_TEST(same_bits(fused_branch_rstd, pair_branch_rstd_d.download()));
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(norm_add_rmsnorm_matches_cpu_and_the_bits_of_rmsnorm_then_add_rmsnorm) {
  DB_REQUIRE_GPU();
  check_branch_norm();
}

BOOST_AUTO_TEST_CASE(add_rmsnorm_matches_cpu_and_the_bits_of_axpby_then_rmsnorm) {
  DB_REQUIRE_GPU();
  check(/*layernorm=*/false);
}

BOOST_AUTO_TEST_CASE(add_layernorm_matches_cpu_and_the_bits_of_axpby_then_layernorm) {
  DB_REQUIRE_GPU();
  check(/*layernorm=*/true);
}
