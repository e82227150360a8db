// SIMD bin indices for the CPU backend: a tile of contiguous samples to bin codes, 2-16 lanes at a
// time, with Highway's AVX-512 or AVX2 code picked at run time (the static target elsewhere).
//
// A kernel settles only the lanes whose bin the rule's arithmetic decides on its own (an estimate
// away from every edge, a bucket of one or two bins, a flow); it marks the others simd_unsettled,
// and the caller settles them with the scalar rule of core/bin_rule.hpp. Every lane a kernel
// settles does the scalar rule's own operations in the same order, so the bins are the rule's.
// Built without Highway (TALLY_HAVE_HIGHWAY undefined), no kernel exists and the CPU backend bins
// every sample with the scalar rule.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tally/dtype.hpp"

namespace tally {
class axis;
}

namespace tally::detail {

/// A code a kernel writes where the scalar rule must decide.
constexpr std::int32_t simd_unsettled = std::numeric_limits<std::int32_t>::min();

/// The rule forms a kernel exists for (the struct `rule` points at):
/// line:      line_rule, samples converted to f64 (the regular rule's f64 path, line_binner)
/// regular32: regular_rule with fast32 or dyadic_scale32 set, f32 samples (its f32 estimate)
/// regular_wide: regular_rule, i64 and u64 samples (the exact range test, then the f64 line)
/// variable:  simd_variable_rule (below), samples converted to f64
/// integer:   integer_rule, integer samples compared exactly, f32/f64 by their floor
enum class simd_rule : std::uint8_t { line, regular32, variable, integer, regular_wide };

struct variable_rule;

/// variable_rule's bins by bucket, exact for every f64 in a bucket, for the variable kernel: the
/// bucket of x in [first, last) is trunc(min((x - first) * scale, buckets - 1)), and each bucket's
/// bins were found by running the rule on the least and the greatest f64 of the bucket (the bucket
/// is monotone in x). A bucket of one or two bins is then one lookup and one comparison, with no
/// estimate to check; the few of more bins are left to the rule.
struct simd_variable_rule {
  double first = 0, last = 0;  // e_0 and e_B
  std::int64_t bins = 0;
  double scale = 0;
  std::int64_t buckets = 0;   // 0: no table (the kernel is not used)
  std::vector<double> lo;     // a bucket's first bin
  std::vector<double> split;  // the edge where its second bin starts; +inf: one bin; NaN: more
};
/// Buckets of the kernel's table for an axis of `bins` bins: about eight a bin (a bucket then
/// rarely holds more than two bins of arbitrary edges), at least 256, at most 2^15.
std::int64_t simd_variable_bucket_count(std::int64_t bins);
/// The table of a variable rule with finite outer edges and `buckets` buckets; buckets 0 where the
/// rule's range is too narrow for a finite scale.
simd_variable_rule make_simd_variable_rule(const variable_rule& r, std::int64_t buckets);

/// Writes the codes of samples[0, n) (contiguous, of the kernel's sample type): a bin, a negative
/// code of bin_rule.hpp, or simd_unsettled; and the positions of the simd_unsettled ones, ascending,
/// to unsettled[0, m) (room for n), returning m.
using simd_tile_fn = std::int64_t (*)(const void* rule, const void* samples, std::int64_t n, std::int32_t* codes,
                                      std::int32_t* unsettled);

/// The kernel for `rule` over samples of type `sample` on the target in use, or null where there is
/// none (no SIMD target, or a sample type the kernels leave to the scalar rule: f16, bf16, and u64
/// and i64 on variable axes).
simd_tile_fn simd_kernel(simd_rule rule, dtype sample);

/// The target in use: "AVX3" (AVX-512), "AVX2", "NEON", ..., or "scalar" (`tally info` shows it).
/// The environment variable TALLY_SIMD, read at first use, picks "scalar" or another target that
/// runs here; a name that does not is ignored.
std::string simd_target();
/// The targets compiled in that this CPU runs, best first ("scalar" last, always there).
std::vector<std::string> simd_targets();
/// Makes `name` (one of simd_targets()) the target in use for the fills that start afterwards;
/// false, changing nothing, where it does not run here. For tests and benchmarks.
bool use_simd_target(const std::string& name);

/// For tests (defined by the CPU backend): the bin code of every sample of `column` on axis `a`,
/// as the backend's N-D path computes them on the target in use (a bin, or a negative code), and
/// how many of them the SIMD kernel settled itself (0 where the axis has none for the column).
struct cpu_bin_codes {
  std::vector<std::int64_t> codes;
  std::int64_t simd_settled = 0;
};
cpu_bin_codes cpu_bin_codes_of(const axis& a, const view& column, bool edge_table);

}  // namespace tally::detail
