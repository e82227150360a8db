// The SIMD kernels of simd_binning.hpp, compiled once per Highway target (foreach_target re-includes
// this file), and the choice among them at run time. Only Highway's headers are used: the choice
// reads the CPU's features itself, so that tally links no Highway library (a wheel needs none).
#include "cpu/simd_binning.hpp"

// x86-64: AVX-512 and AVX2 (SSE4's two f64 lanes barely beat the scalar rule; each target costs
// compile time). Elsewhere: the baseline target alone (NEON on 64-bit Arm).
// Highway's internal asserts (on in builds without NDEBUG or with sanitizers) call hwy::Abort, which
// lives in libhwy: off, so that no build links Highway.
#ifndef HWY_IS_DEBUG_BUILD
#define HWY_IS_DEBUG_BUILD 0
#endif

#if defined(__x86_64__) || defined(_M_X64)
#define TALLY_SIMD_X86 1
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_AVX3_DL | HWY_SSE4 | HWY_SSSE3)
#endif
#else
#define HWY_COMPILE_ONLY_STATIC 1
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/simd_binning.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "core/bin_rule.hpp"

#ifndef TALLY_SIMD_KERNEL_TABLE
#define TALLY_SIMD_KERNEL_TABLE
namespace tally::detail {
/// A target's kernels, indexed [rule][sample dtype]; null where the scalar rule bins.
struct simd_kernel_table {
  simd_tile_fn fn[static_cast<int>(simd_rule::regular_wide) + 1][static_cast<int>(dtype::f64) + 1];
};
}  // namespace tally::detail
#endif

// The kernels: compiled for every target but the emulated ones (the scalar rule is faster there).
#if HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
HWY_BEFORE_NAMESPACE();
namespace tally::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using df64 = hn::ScalableTag<double>;
using di64 = hn::RebindToSigned<df64>;
using du64 = hn::RebindToUnsigned<df64>;
using di32_of_64 = hn::Rebind<std::int32_t, df64>;  // one i32 code a f64 lane

/// Lanes(df64) samples of type T (at most 32 bits) from p, as f64 (exactly).
template <class T> HWY_INLINE hn::Vec<df64> load_f64(const T* p) {
  const df64 d;
  if constexpr (std::is_same_v<T, double>) {
    return hn::LoadU(d, p);
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, std::int32_t>) {
    return hn::PromoteTo(d, hn::LoadU(hn::Rebind<T, df64>(), p));
  } else if constexpr (std::is_same_v<T, std::uint32_t>) {
    return hn::ConvertTo(d, hn::BitCast(di64(), hn::PromoteTo(du64(), hn::LoadU(hn::Rebind<T, df64>(), p))));
  } else {  // 8- and 16-bit integers: through i32
    return hn::PromoteTo(d, hn::PromoteTo(di32_of_64(), hn::LoadU(hn::Rebind<T, df64>(), p)));
  }
}

/// Lanes(df64) integer samples of type T from p, as i64 (u64 reinterpreted: the caller tells the
/// values above INT64_MAX by their sign).
template <class T> HWY_INLINE hn::Vec<di64> load_i64(const T* p) {
  const di64 d;
  if constexpr (sizeof(T) == 8) {
    return hn::BitCast(d, hn::LoadU(hn::Rebind<T, df64>(), p));
  } else if constexpr (std::is_same_v<T, std::uint32_t>) {
    return hn::BitCast(d, hn::PromoteTo(du64(), hn::LoadU(hn::Rebind<T, df64>(), p)));
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    return hn::PromoteTo(d, hn::LoadU(hn::Rebind<T, df64>(), p));
  } else {
    return hn::PromoteTo(d, hn::PromoteTo(di32_of_64(), hn::LoadU(hn::Rebind<T, df64>(), p)));
  }
}

/// Where the tile's unsettled codes are: their positions, appended as each vector is stored.
struct unsettled_list {
  std::int32_t* at;
  std::int64_t count = 0;
};

/// Stores a vector of codes (f64 or i64 lanes holding values that fit i32, or i32 lanes) as i32 at
/// codes[j...], and lists the simd_unsettled ones (rare: no loop where there are none).
template <class V> HWY_INLINE void store_codes(V code, std::int32_t* codes, std::int64_t j, unsettled_list& list) {
  using T = hn::TFromV<V>;
  if constexpr (std::is_same_v<T, double>) {
    store_codes(hn::DemoteTo(di32_of_64(), code), codes, j, list);
  } else if constexpr (std::is_same_v<T, std::int64_t>) {  // the low halves
    const hn::Rebind<std::uint32_t, df64> du32;
    store_codes(hn::BitCast(di32_of_64(), hn::TruncateTo(du32, hn::BitCast(du64(), code))), codes, j, list);
  } else {
    const hn::DFromV<V> d;
    hn::StoreU(code, d, codes + j);
    if (hn::AllFalse(d, hn::Eq(code, hn::Set(d, simd_unsettled)))) return;
    for (std::int64_t l = j; l < j + static_cast<std::int64_t>(hn::Lanes(d)); ++l)
      if (codes[l] == simd_unsettled) list.at[list.count++] = static_cast<std::int32_t>(l);
  }
}

/// Every kernel's loop: code_of(j) gives the codes of the vector of samples from j (lanes of d);
/// they are stored and the undecided ones listed. The tail, shorter than a vector, is left to the
/// scalar rule. Returns the list's length.
template <class D, class CodeOf>
HWY_INLINE std::int64_t tile_loop(D d, std::int64_t n, std::int32_t* codes, std::int32_t* unsettled_at,
                                  const CodeOf& code_of) {
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  unsettled_list list{unsettled_at};
  std::int64_t j = 0;
  for (; j + lanes <= n; j += lanes) store_codes(code_of(j), codes, j, list);
  for (; j < n; ++j) {
    codes[j] = simd_unsettled;
    list.at[list.count++] = static_cast<std::int32_t>(j);
  }
  return list.count;
}

/// The rule's first test on the lanes of v below the first edge (or NaN): bin_nan for NaN,
/// bin_underflow for the others; code elsewhere. Codes in lanes of d's type, v of its own.
template <class D, class V, class M> HWY_INLINE hn::Vec<D> below_first(D d, V v, M below, hn::Vec<D> code) {
  const auto flow = hn::IfThenElse(hn::RebindMask(d, hn::Eq(v, v)), hn::Set(d, hn::TFromD<D>{bin_underflow}),
                                   hn::Set(d, hn::TFromD<D>{bin_nan}));
  return hn::IfThenElse(hn::RebindMask(d, below), flow, code);
}

/// line_rule::locate's arithmetic on the f64 lanes v: the flows and the decisive estimates (their
/// fraction within (guard, 1 - guard)); simd_unsettled where an edge must decide.
HWY_INLINE hn::Vec<df64> line_codes(const line_rule& r, hn::Vec<df64> v) {
  const df64 d;
  const auto first = hn::Set(d, r.first);
  const auto t = hn::Mul(hn::Sub(v, first), hn::Set(d, r.scale));
  const auto i = hn::Floor(t);  // t >= 0 where decisive: the rule's truncation
  const auto f = hn::Sub(t, i);
  const auto decisive = hn::And(hn::Lt(t, hn::Set(d, static_cast<double>(r.bins))),
                                hn::And(hn::Gt(f, hn::Set(d, r.guard)), hn::Lt(f, hn::Set(d, 1.0 - r.guard))));
  const auto code = hn::IfThenElse(hn::Gt(v, hn::Set(d, r.last)), hn::Set(d, double{bin_overflow}),
                                   hn::IfThenElse(decisive, i, hn::Set(d, double{simd_unsettled})));
  return below_first(d, v, hn::Not(hn::Ge(v, first)), code);
}

/// line_rule::locate without the edges, of samples converted to f64.
template <class T>
std::int64_t line_tile(const void* rule, const void* samples, std::int64_t n, std::int32_t* codes,
                       std::int32_t* unsettled_at) {
  const line_rule r = *static_cast<const line_rule*>(rule);  // a local: no store aliases it
  const T* x = static_cast<const T*>(samples);
  return tile_loop(df64(), n, codes, unsettled_at, [&](std::int64_t j) { return line_codes(r, load_f64(x + j)); });
}

/// regular_rule::locate_wide of 64-bit integer samples: the exact range test of integer_keep in
/// the samples' own type, then the line rule of their f64 values. A kept u64 above INT64_MAX
/// (whose signed conversion would be wrong) is left to the rule.
template <class T>
std::int64_t regular_wide_tile(const void* rule, const void* samples, std::int64_t n, std::int32_t* codes,
                               std::int32_t* unsettled_at) {
  const regular_rule r = *static_cast<const regular_rule*>(rule);
  const auto* x = static_cast<const std::int64_t*>(samples);  // u64 as its bits
  constexpr bool is_signed = std::is_signed_v<T>;
  const df64 d;
  const di64 di;
  const std::int64_t none = is_signed ? r.keep.none_s : r.keep.none_u;
  // Unsigned comparisons: both sides with the sign bit flipped, compared signed.
  const auto flip = hn::Set(di, is_signed ? 0 : std::numeric_limits<std::int64_t>::min());
  const auto lo = hn::Xor(hn::Set(di, is_signed ? r.keep.lo_s : static_cast<std::int64_t>(r.keep.lo_u)), flip);
  const auto hi = hn::Xor(hn::Set(di, is_signed ? r.keep.hi_s : static_cast<std::int64_t>(r.keep.hi_u)), flip);
  const auto underflow = hn::Set(d, double{bin_underflow}), overflow = hn::Set(d, double{bin_overflow});
  const auto unsettled = hn::Set(d, double{simd_unsettled}), dropped = hn::Set(d, static_cast<double>(none));
  return tile_loop(d, n, codes, unsettled_at, [&](std::int64_t j) {
    const auto v = hn::LoadU(di, x + j);
    if (none) return dropped;
    auto code = line_codes(r, hn::ConvertTo(d, v));
    if constexpr (!is_signed) code = hn::IfThenElse(hn::RebindMask(d, hn::Lt(v, hn::Zero(di))), unsettled, code);
    const auto vf = hn::Xor(v, flip);
    code = hn::IfThenElse(hn::RebindMask(d, hn::Gt(vf, hi)), overflow, code);
    return hn::IfThenElse(hn::RebindMask(d, hn::Lt(vf, lo)), underflow, code);
  });
}

/// regular_rule::locate32 of f32 samples without the edges: the dyadic rule whole, the fast32
/// estimate where decisive.
std::int64_t regular32_tile(const void* rule, const void* samples, std::int64_t n, std::int32_t* codes,
                            std::int32_t* unsettled_at) {
  const auto& r = *static_cast<const regular_rule*>(rule);
  const float* x = static_cast<const float*>(samples);
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const bool dyadic = r.dyadic_scale32 != 0.0f;
  // The dyadic rule: first 0, last last32, no estimate to check.
  const auto first = hn::Set(d, dyadic ? 0.0f : r.first32), last = hn::Set(d, r.last32);
  const auto scale = hn::Set(d, dyadic ? r.dyadic_scale32 : r.scale32);
  const auto guard = hn::Set(d, r.guard32), upper = hn::Set(d, r.upper32);
  const auto last_bin = hn::Set(di, static_cast<std::int32_t>(r.bins - 1));
  const auto overflow = hn::Set(di, std::int32_t{bin_overflow}), unsettled = hn::Set(di, simd_unsettled);
  return tile_loop(d, n, codes, unsettled_at, [&](std::int64_t j) {
    const auto v = hn::LoadU(d, x + j);
    hn::Vec<decltype(di)> code;
    if (dyadic) {
      // x * dyadic_scale32 is exact; x == last32 gives bins, the last bin's end.
      code = hn::Min(hn::ConvertTo(di, hn::Mul(v, scale)), last_bin);
    } else {
      const auto t = hn::Mul(hn::Sub(v, first), scale);  // estimate32: two roundings
      const auto i = hn::ConvertTo(di, t);               // truncation, as the rule's cast
      const auto f = hn::Sub(t, hn::ConvertTo(d, i));
      code = hn::IfThenElse(hn::RebindMask(di, hn::And(hn::Gt(f, guard), hn::Lt(f, upper))), i, unsettled);
    }
    code = hn::IfThenElse(hn::RebindMask(di, hn::Gt(v, last)), overflow, code);
    return below_first(di, v, hn::Not(hn::Ge(v, first)), code);
  });
}

/// variable_rule::index by simd_variable_rule's buckets: a lane is settled where it is a flow or
/// its bucket holds at most two bins (one comparison with the split); more are left to the rule.
template <class T>
std::int64_t variable_tile(const void* rule, const void* samples, std::int64_t n, std::int32_t* codes,
                           std::int32_t* unsettled_at) {
  const auto& r = *static_cast<const simd_variable_rule*>(rule);
  const T* x = static_cast<const T*>(samples);
  const df64 d;
  const di64 di;
  const auto first = hn::Set(d, r.first), last = hn::Set(d, r.last), scale = hn::Set(d, r.scale);
  const auto last_bucket = hn::Set(d, static_cast<double>(r.buckets - 1));
  const auto last_bin = hn::Set(d, static_cast<double>(r.bins - 1)), one = hn::Set(d, 1.0);
  const auto overflow = hn::Set(d, double{bin_overflow}), unsettled = hn::Set(d, double{simd_unsettled});
  return tile_loop(d, n, codes, unsettled_at, [&](std::int64_t j) {
    const auto v = load_f64(x + j);
    const auto below = hn::Not(hn::Ge(v, first));  // NaN too
    const auto at_or_above = hn::Ge(v, last);
    // Lanes outside [first, last) look up bucket 0 (their code is the flow's).
    const auto inside = hn::Not(hn::Or(below, at_or_above));
    const auto t = hn::Min(hn::Mul(hn::Sub(hn::IfThenElse(inside, v, first), first), scale), last_bucket);
    const auto bucket = hn::ConvertTo(di, t);  // truncation, as the table was built
    const auto lo = hn::GatherIndex(d, r.lo.data(), bucket);
    const auto split = hn::GatherIndex(d, r.split.data(), bucket);
    auto code = hn::IfThenElse(hn::Ge(v, split), hn::Add(lo, one), lo);
    code = hn::IfThenElse(hn::Eq(split, split), code, unsettled);
    code = hn::IfThenElse(at_or_above, hn::IfThenElse(hn::Eq(v, last), last_bin, overflow), code);
    return below_first(d, v, below, code);
  });
}

/// integer_rule::index_signed / index_unsigned of integer samples, every lane settled.
template <class T>
std::int64_t integer_tile(const void* rule, const void* samples, std::int64_t n, std::int32_t* codes,
                          std::int32_t* unsettled_at) {
  const auto& r = *static_cast<const integer_rule*>(rule);
  const T* x = static_cast<const T*>(samples);
  const di64 d;
  const auto lo = hn::Set(d, r.lo), bins = hn::Set(d, r.bins), zero = hn::Zero(d);
  // Unsigned comparison of the differences: both sides with the sign bit flipped, compared signed.
  const auto sign = hn::Set(d, std::numeric_limits<std::int64_t>::min());
  const auto bins_flipped = hn::Xor(bins, sign);
  const auto past = hn::Set(d, r.closed ? r.bins - 1 : std::int64_t{bin_overflow});  // a difference == bins
  const auto underflow = hn::Set(d, std::int64_t{bin_underflow}), overflow = hn::Set(d, std::int64_t{bin_overflow});
  return tile_loop(d, n, codes, unsettled_at, [&](std::int64_t j) {
    const auto v = load_i64(x + j);
    const auto diff = hn::Sub(v, lo);  // exact as unsigned where v >= lo
    auto code = hn::IfThenElse(hn::Lt(hn::Xor(diff, sign), bins_flipped), diff,
                               hn::IfThenElse(hn::Eq(diff, bins), past, overflow));
    code = hn::IfThenElse(hn::Lt(v, lo), underflow, code);
    if constexpr (std::is_same_v<T, std::uint64_t>) code = hn::IfThenElse(hn::Lt(v, zero), overflow, code);  // > INT64_MAX
    return code;
  });
}

/// integer_rule::index_floating of f32/f64 samples, every lane settled.
template <class T>
std::int64_t integer_floating_tile(const void* rule, const void* samples, std::int64_t n, std::int32_t* codes,
                                   std::int32_t* unsettled_at) {
  const auto& r = *static_cast<const integer_rule*>(rule);
  const T* x = static_cast<const T*>(samples);
  const df64 d;
  const double lo_d = static_cast<double>(r.lo), bins_d = static_cast<double>(r.bins);
  const auto lo = hn::Set(d, lo_d), bins = hn::Set(d, bins_d), end = hn::Set(d, lo_d + bins_d);
  const auto past = hn::Set(d, r.closed ? bins_d - 1 : double{bin_overflow});  // x == lo + bins
  const auto overflow = hn::Set(d, double{bin_overflow});
  return tile_loop(d, n, codes, unsettled_at, [&](std::int64_t j) {
    const auto v = load_f64(x + j);
    const auto f = hn::Floor(v);
    const auto offset = hn::Sub(f, lo);
    const auto code = hn::IfThenElse(hn::Ge(offset, bins), hn::IfThenElse(hn::Eq(v, end), past, overflow), offset);
    // NaN first, then floor(x) < lo (NaN fails that comparison).
    return below_first(d, v, hn::Not(hn::Ge(f, lo)), code);
  });
}

/// f(T*) for each type T (a null pointer: the type alone).
template <class... T, class F> void for_types(F&& f) {
  (f(static_cast<T*>(nullptr)), ...);
}

const simd_kernel_table& target_kernels() {
  static const simd_kernel_table table = [] {
    simd_kernel_table k{};
    auto at = [&](simd_rule r, dtype t) -> simd_tile_fn& { return k.fn[static_cast<int>(r)][static_cast<int>(t)]; };
    for_types<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t, float, double>([&](auto* p) {
      using T = std::remove_pointer_t<decltype(p)>;
      at(simd_rule::line, dtype_of<T>) = &line_tile<T>;
      at(simd_rule::variable, dtype_of<T>) = &variable_tile<T>;
    });
    at(simd_rule::regular32, dtype::f32) = &regular32_tile;
    at(simd_rule::regular_wide, dtype::i64) = &regular_wide_tile<std::int64_t>;
    at(simd_rule::regular_wide, dtype::u64) = &regular_wide_tile<std::uint64_t>;
    for_types<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t, std::uint64_t, std::int64_t>(
        [&](auto* p) {
          using T = std::remove_pointer_t<decltype(p)>;
          at(simd_rule::integer, dtype_of<T>) = &integer_tile<T>;
        });
    at(simd_rule::integer, dtype::f32) = &integer_floating_tile<float>;
    at(simd_rule::integer, dtype::f64) = &integer_floating_tile<double>;
    return k;
  }();
  return table;
}

}  // namespace HWY_NAMESPACE
}  // namespace tally::detail
HWY_AFTER_NAMESPACE();
#endif  // HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR

#if HWY_ONCE
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tally::detail {
namespace {

struct compiled_target {
  std::int64_t target;
  const simd_kernel_table& (*kernels)();
  bool (*runs_here)();
};

#if defined(TALLY_SIMD_X86)
// Highway's feature sets of each target (hwy/ops/set_macros-inl.h), as the CPU and OS report them.
bool avx2_runs() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
         __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("sse4.2") &&
         __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("aes");
}
bool avx3_runs() {
  return avx2_runs() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
}
#else
[[maybe_unused]] bool static_runs() { return true; }  // the build's own baseline
#endif

/// The targets compiled in, best first.
const std::vector<compiled_target>& compiled() {
  static const std::vector<compiled_target> all = {
#if defined(TALLY_SIMD_X86)
#if HWY_TARGETS & HWY_AVX3
      {HWY_AVX3, &N_AVX3::target_kernels, &avx3_runs},
#endif
#if HWY_TARGETS & HWY_AVX2
      {HWY_AVX2, &N_AVX2::target_kernels, &avx2_runs},
#endif
#elif HWY_STATIC_TARGET != HWY_EMU128 && HWY_STATIC_TARGET != HWY_SCALAR
      {HWY_STATIC_TARGET, &HWY_STATIC_DISPATCH(target_kernels), &static_runs},
#endif
  };
  return all;
}

const compiled_target* find_target(const std::string& name) {
  for (const auto& t : compiled())
    if (name == hwy::TargetName(t.target) && t.runs_here()) return &t;
  return nullptr;
}

/// The target in use (null: scalar): TALLY_SIMD's where it is "scalar" or names one that runs
/// here, else the best.
std::atomic<const compiled_target*>& current() {
  static std::atomic<const compiled_target*> in_use{[]() -> const compiled_target* {
    if (const char* asked = std::getenv("TALLY_SIMD"); asked && *asked) {
      if (std::string(asked) == "scalar") return nullptr;
      if (const compiled_target* t = find_target(asked)) return t;
    }
    for (const auto& t : compiled())
      if (t.runs_here()) return &t;
    return nullptr;
  }()};
  return in_use;
}

/// Finite f64s as integers in their order (-0 as +0).
std::int64_t key_of(double x) {
  std::int64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits >= 0 ? bits : std::numeric_limits<std::int64_t>::min() - bits;
}
double double_of(std::int64_t key) {
  const std::int64_t bits = key >= 0 ? key : std::numeric_limits<std::int64_t>::min() - key;
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace

std::int64_t simd_variable_bucket_count(std::int64_t bins) {
  return std::clamp<std::int64_t>(8 * bins, 256, std::int64_t{1} << 15);
}

simd_variable_rule make_simd_variable_rule(const variable_rule& r, std::int64_t buckets) {
  simd_variable_rule s;
  s.first = r.edges[0];
  s.last = r.edges[r.bins];
  s.bins = r.bins;
  s.scale = static_cast<double>(buckets) / (s.last - s.first);
  if (!(std::isfinite(s.scale) && s.scale > 0)) return s;
  s.buckets = buckets;
  const auto bucket_of = [&](std::int64_t key) {  // the kernel's arithmetic
    return static_cast<std::int64_t>(std::min((double_of(key) - s.first) * s.scale, static_cast<double>(buckets - 1)));
  };
  // starts[j]: the key of the least f64 in [first, last) whose bucket is j or more (the end of the
  // last bucket: last's key). Near first + j / scale, a few steps of one f64 find it; a bisection
  // (bucket_of is monotone) where they do not.
  const std::int64_t end = key_of(s.last);
  std::vector<std::int64_t> starts(static_cast<std::size_t>(buckets) + 1, end);
  starts[0] = key_of(s.first);
  for (std::int64_t j = 1; j < buckets; ++j) {
    const std::int64_t floor = starts[static_cast<std::size_t>(j - 1)];  // the answer is in [floor, end]
    const auto is_start = [&](std::int64_t k) { return (k == end || bucket_of(k) >= j) && (k == floor || bucket_of(k - 1) < j); };
    std::int64_t k = std::clamp(key_of(s.first + static_cast<double>(j) / s.scale), floor, end);
    for (int step = 0; step < 8 && !is_start(k); ++step) k += k < end && bucket_of(k) < j ? 1 : -1;
    if (!is_start(k)) {
      std::int64_t lo = floor, hi = end;
      while (lo < hi) {
        // (hi - lo may exceed INT64_MAX across zero; half of it does not.)
        const auto mid = lo + static_cast<std::int64_t>((static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo)) / 2);
        if (bucket_of(mid) >= j) hi = mid;
        else lo = mid + 1;
      }
      k = lo;
    }
    starts[static_cast<std::size_t>(j)] = k;
  }
  s.lo.assign(static_cast<std::size_t>(buckets), 0.0);
  s.split.assign(static_cast<std::size_t>(buckets), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t j = 0; j < s.lo.size(); ++j) {
    if (starts[j] >= starts[j + 1]) continue;  // no f64 lands here
    const std::int64_t lo = r.index(double_of(starts[j])), hi = r.index(double_of(starts[j + 1] - 1));
    s.lo[j] = static_cast<double>(lo);
    if (hi == lo) s.split[j] = std::numeric_limits<double>::infinity();
    else if (hi == lo + 1) s.split[j] = r.edges[lo + 1];
  }
  return s;
}

simd_tile_fn simd_kernel(simd_rule rule, dtype sample) {
  const compiled_target* t = current().load(std::memory_order_relaxed);
  if (!t) return nullptr;
  return t->kernels().fn[static_cast<int>(rule)][static_cast<int>(sample)];
}

std::string simd_target() {
  const compiled_target* t = current().load(std::memory_order_relaxed);
  return t ? hwy::TargetName(t->target) : "scalar";
}

std::vector<std::string> simd_targets() {
  std::vector<std::string> names;
  for (const auto& t : compiled())
    if (t.runs_here()) names.emplace_back(hwy::TargetName(t.target));
  names.emplace_back("scalar");
  return names;
}

bool use_simd_target(const std::string& name) {
  if (name == "scalar") {
    current().store(nullptr);
    return true;
  }
  const compiled_target* t = find_target(name);
  if (t) current().store(t);
  return t != nullptr;
}

}  // namespace tally::detail
#endif  // HWY_ONCE
