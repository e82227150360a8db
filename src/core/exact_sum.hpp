// Exact sums of f32 and f64 values in fixed point, on host and device.
//
// The f32 format (the CUDA kernels' words): an f32 value is m 2^(s - 149) with an integer m < 2^24
// and 0 <= s <= 253, so every f32 is an integer number of units 2^-149. A sum is kept as
// kExactWords unsigned 64-bit words, word k weighing 2^(32 k) units (they overlap by 32 bits, so a
// value's m << (s mod 16), at 16-bit digit s / 16, always fits in word s / 32 shifted by 16 (s / 16
// mod 2), and a word that wraps carries 2^32 into the next). The words hold the sum modulo 2^320
// in two's complement; 2^40 values of the largest f32 sum to less than 2^318 units, so the sign
// survives.
//
// The wide format (options::exact_sums histograms, any weight type): an f64 value is m 2^s units
// of 2^-1074 with m < 2^53 and 0 <= s <= 2045. A sum is kWideWords plain 64-bit limbs (word k
// weighs 2^(64 k) units, a wrap carries 1), the sum modulo 2^2176 in two's complement: fewer than
// 2^64 values (a histogram's samples() is a u64) of magnitude below 2^2098 units sum to less than
// 2^2162, so the sign survives. A cell is those limbs and one word of flags (kWideCellWords).
//
// Integer additions commute: any order of the same values gives the same words, and the sum
// converted once, correctly rounded, gives the same bits on every run, grid and device.
#pragma once

#include <math.h>
#include <string.h>

#include <cstdint>

#include "base/hd.hpp"

namespace tally::detail {

constexpr int kExactWords = 9;  // words 0-7 take values, word 8 only carries
/// The 16-bit digits of a cell's words: word k's low and high halves are digits 2k and 2k + 1.
constexpr int kExactDigits = 2 * kExactWords;
/// A GPU block keeps a window of each cell's digits in shared memory: kExactWindowDigits of them
/// from an even digit lo, each in a 32-bit counter, then the cell's flags (an odd number of
/// counters, so that neighbouring cells fall in different banks). A run of terms at digit d adds
/// to digits d, d + 1 and d + 2, so the window takes the runs at digits lo .. lo + 3 (f32 values
/// over 64 binades); a term outside it goes to the device words. Each block picks the window that
/// holds most of its first weights and moves it after an epoch in which more than half of its
/// samples fell outside it on one side (cuda/exact_sums.cu).
constexpr int kExactWindowDigits = 6;
constexpr int kExactWindowWords = kExactWindowDigits / 2;
constexpr int kExactCellCounters = kExactWindowDigits + 1;
static_assert(kExactWindowDigits % 2 == 0 && kExactWindowDigits >= 4, "whole words, and room for a run's digits");
/// The runs outside a block's window in one epoch (between two drains): how many there were above
/// and below it, and the highest digit of each side.
struct exact_window_epoch {
  int above, below, highest_above, highest_below;
};
/// A block's shared record of its window: two epochs' (the one running, and the next, reset while
/// the running one's is read), and how many of its first weights have a term at each digit.
struct exact_window_stats {
  exact_window_epoch epoch[2];
  int probes[16];
};
/// The GPU kernel's threads per block, and the bytes of a block's copy of `cells` cells' windows.
constexpr int kExactThreads = 512;
TALLY_HD constexpr std::int64_t exact_words_bytes(std::int64_t cells) { return cells * kExactCellCounters * 4; }
/// The exact kernel's shared memory, where a block keeps its copy: the record of its window
/// (kExactStatsBytes), then the cells' windows, then, at a 128-byte boundary where there is room,
/// a contiguous column streams through a ring: each thread's own kExactStages slots of four samples
/// (up to 16 bytes) and four f32 weights, filled by cp.async kExactStages - 1 rounds ahead. (From
/// a ring off a 128-byte boundary, L2 served every copy twice: bench/PERFORMANCE.md, "Exact sums
/// of weights".)
constexpr std::int64_t kExactStatsBytes = 128;
static_assert(sizeof(exact_window_stats) <= kExactStatsBytes, "the record fits its place");
TALLY_HD constexpr std::int64_t exact_shared_bytes(std::int64_t cells) { return kExactStatsBytes + exact_words_bytes(cells); }
constexpr int kExactStages = 4;
constexpr std::int64_t kExactRingBytes = std::int64_t{kExactStages} * kExactThreads * 32;
TALLY_HD constexpr std::int64_t exact_ring_offset(std::int64_t bytes_before) { return (bytes_before + 127) / 128 * 128; }

/// A fixed-point format: Words 64-bit words, word k weighing 2^(Stride k) units of 2^-UnitBits.
template <int Words, int Stride, int UnitBits> struct exact_format {
  static constexpr int words = Words;
  static constexpr int stride = Stride;
  static constexpr int unit_bits = UnitBits;
  /// The bits of the whole number, modulo which the words hold the sum.
  static constexpr int bits = Stride * (Words - 1) + 64;
};
using f32_exact = exact_format<kExactWords, 32, 149>;
constexpr int kWideWords = 34;
constexpr int kWideCellWords = kWideWords + 1;  // the limbs, then the flags
using wide_exact = exact_format<kWideWords, 64, 1074>;

/// Non-finite values are not added to the words; each sets a flag of its cell instead.
enum : unsigned { exact_plus_inf = 1, exact_minus_inf = 2, exact_nan = 4 };

/// One f32 value as a signed term at one of the sum's 16-bit digits (digit d weighs 2^(16 d)
/// units: the low or high half of word d / 2), or a flag.
struct exact_term {
  int digit = 0;           // 0-15
  std::int64_t value = 0;  // |value| < 2^39: m << (s mod 16), m < 2^24
  unsigned flag = 0;
};

/// The flag of a non-finite f32 (given as its bits), 0 for a finite one.
TALLY_HD_HOT unsigned exact_flag_of(std::uint32_t bits) {
  if (((bits >> 23) & 0xFFu) != 0xFFu) return 0;
  return (bits & 0x7FFFFFu) ? exact_nan : (bits >> 31) ? exact_minus_inf : exact_plus_inf;
}

/// The term of a finite f32, given as its bits.
TALLY_HD_HOT exact_term exact_term_of_finite(std::uint32_t bits) {
  const std::uint32_t e = (bits >> 23) & 0xFFu;
  const std::uint32_t m = (bits & 0x7FFFFFu) | (e ? 0x800000u : 0u);
  const std::uint32_t s = e ? e - 1 : 0;  // subnormals share the smallest normal's scale
  const auto v = static_cast<std::int64_t>(static_cast<std::uint64_t>(m) << (s & 15));
  exact_term t;
  t.digit = static_cast<int>(s >> 4);
  t.value = bits >> 31 ? -v : v;
  return t;
}

TALLY_HD_HOT exact_term exact_term_of(float x) {
  std::uint32_t bits;
  memcpy(&bits, &x, sizeof bits);
  exact_term t;
  t.flag = exact_flag_of(bits);
  return t.flag ? t : exact_term_of_finite(bits);
}

/// Adds `addend` to word k of `words` and carries up, where the addend stands for itself, or
/// (negative) for addend - 2^64. fetch_add(word pointer, addend) adds modulo 2^64 and returns the
/// old word (an atomic one on the device). The unsigned addition's carry-out, less 1 for a
/// negative addend, is the change in units of 2^64 at word k, which is 2^(64 - Stride) at word
/// k + 1 (2^32 in the f32 format, 1 in the wide one). Past the last word it drops.
template <class Format = f32_exact, class FetchAdd>
TALLY_HD_HOT void add_exact_bits(std::uint64_t* words, int k, std::uint64_t addend, bool negative,
                                 FetchAdd&& fetch_add) {
  constexpr int carry_shift = 64 - Format::stride;
  while (addend != 0) {
    const std::uint64_t old = fetch_add(words + k, addend);
    const int carry = (old + addend < old ? 1 : 0) - (negative ? 1 : 0);
    if (carry == 0 || ++k == Format::words) return;
    negative = carry < 0;
    addend = negative ? ~std::uint64_t{0} << carry_shift : std::uint64_t{1} << carry_shift;
  }
}

/// fetch_add for words that one thread owns.
struct plain_fetch_add {
  TALLY_HD_HOT std::uint64_t operator()(std::uint64_t* word, std::uint64_t addend) const {
    const std::uint64_t old = *word;
    *word = old + addend;
    return old;
  }
};

#if defined(__CUDACC__)
/// fetch_add for device words that threads share.
struct atomic_fetch_add {
  __device__ __forceinline__ std::uint64_t operator()(std::uint64_t* word, std::uint64_t addend) const {
    return atomicAdd(reinterpret_cast<unsigned long long*>(word), static_cast<unsigned long long>(addend));
  }
};
#endif

/// Adds a wide cell (kWideWords limbs, then flags) into another: the limbs with carries, the
/// flags or-ed (one thread owns `to`).
template <class FetchAdd> TALLY_HD void add_wide_cell(std::uint64_t* to, const std::uint64_t* from, FetchAdd&& fetch_add) {
  for (int k = 0; k < wide_exact::words; ++k)
    if (from[k]) add_exact_bits<wide_exact>(to, k, from[k], false, fetch_add);
  to[wide_exact::words] |= from[wide_exact::words];
}

/// Adds a signed value to word k (|value| < 2^63).
template <class FetchAdd>
TALLY_HD_HOT void add_exact(std::uint64_t* words, int k, std::int64_t value, FetchAdd&& fetch_add) {
  add_exact_bits(words, k, static_cast<std::uint64_t>(value), value < 0, fetch_add);
}

/// Adds a signed value at digit d (a term's, or a sum of up to 2^8 terms' at one digit: |value| <
/// 2^47, so that its shift into word d / 2 stays below 2^63).
template <class FetchAdd>
TALLY_HD_HOT void add_exact_at_digit(std::uint64_t* words, int d, std::int64_t value, FetchAdd&& fetch_add) {
  const std::uint64_t shifted = static_cast<std::uint64_t>(value) << (16 * (d & 1));
  add_exact_bits(words, d >> 1, shifted, value < 0, fetch_add);
}

TALLY_HD double double_of(std::uint64_t bits) {
  double x;
  memcpy(&x, &bits, sizeof x);
  return x;
}

/// The flag of a non-finite f64 (given as its bits), 0 for a finite one.
TALLY_HD_HOT unsigned exact_flag_of_f64(std::uint64_t bits) {
  if (((bits >> 52) & 0x7FFu) != 0x7FFu) return 0;
  return (bits & 0xFFFFFFFFFFFFFull) ? exact_nan : (bits >> 63) ? exact_minus_inf : exact_plus_inf;
}

/// A finite f64 term of a wide sum: its value m x 2^b (b < 64) at limb `limb`, a signed 128-bit
/// number (lo, hi) in two's complement.
struct wide_term {
  int limb;
  std::uint64_t lo, hi;
};

/// The wide term of finite f64 bits.
TALLY_HD_HOT wide_term wide_term_of_finite(std::uint64_t bits) {
  const std::uint64_t e = (bits >> 52) & 0x7FFu;
  const std::uint64_t m = (bits & 0xFFFFFFFFFFFFFull) | (e ? std::uint64_t{1} << 52 : 0);
  const int s = e ? static_cast<int>(e) - 1 : 0;  // subnormals share the smallest normal's scale
  const int b = s & 63;
  wide_term t{s >> 6, m << b, b ? m >> (64 - b) : 0};
  if (bits >> 63) {  // -(hi, lo): the complement plus one, carried into hi where lo was 0
    t.lo = ~t.lo + 1;
    t.hi = ~t.hi + (t.lo == 0 ? 1 : 0);
  }
  return t;
}

/// Terms of one limb a run adds in registers before its value goes to the words: each is below
/// 2^117 in magnitude (m < 2^53 shifted by b < 64), so a run's sum stays below 2^126 and its high
/// word is a signed addend at limb + 1.
constexpr int kWideRunTerms = 512;

/// Consecutive terms of one cell and limb, summed as a signed 128-bit number.
struct wide_run {
  int limb = -1;
  int terms = 0;
  std::uint64_t lo = 0, hi = 0;
  TALLY_HD_HOT void start(const wide_term& t) {
    limb = t.limb;
    terms = 1;
    lo = t.lo;
    hi = t.hi;
  }
  TALLY_HD_HOT void add(const wide_term& t) {
    const std::uint64_t sum = lo + t.lo;
    hi += t.hi + (sum < lo ? 1 : 0);
    lo = sum;
    ++terms;
  }
};

/// Adds a run's value into a wide sum: lo at its limb, hi (signed) at the next, each with its carries.
template <class FetchAdd>
TALLY_HD_HOT void add_wide_run(std::uint64_t* words, const wide_run& r, FetchAdd&& fetch_add) {
  add_exact_bits<wide_exact>(words, r.limb, r.lo, false, fetch_add);
  add_exact_bits<wide_exact>(words, r.limb + 1, r.hi, static_cast<std::int64_t>(r.hi) < 0, fetch_add);
}

/// Two runs of one thread's terms, each of one cell and limb: a term joins the run of its cell
/// and limb, or takes the place of the run of fewer terms, which goes to flush(cell, run) first;
/// a full run goes to flush and starts again. A hot cell keeps its run while other cells' terms
/// come between. finish() flushes what is left.
struct wide_runs {
  wide_run run[2];
  std::int64_t cell[2] = {-1, -1};
  template <class Flush> TALLY_HD_HOT void take(std::int64_t c, const wide_term& t, Flush&& flush) {
    const bool in0 = c == cell[0] && t.limb == run[0].limb;
    const bool in1 = !in0 && c == cell[1] && t.limb == run[1].limb;
    if (in0 || (!in1 && run[0].terms <= run[1].terms)) place(0, in0, c, t, flush);
    else place(1, in1, c, t, flush);
  }
  template <class Flush> TALLY_HD_HOT void finish(Flush&& flush) {
    for (int k = 0; k < 2; ++k)
      if (run[k].terms) flush(cell[k], run[k]);
  }

 private:
  template <class Flush>
  TALLY_HD_HOT void place(int k, bool in, std::int64_t c, const wide_term& t, Flush&& flush) {
    if (in && run[k].terms < kWideRunTerms) {
      run[k].add(t);
      return;
    }
    if (run[k].terms) flush(cell[k], run[k]);
    run[k].start(t);
    cell[k] = c;
  }
};

/// Adds an f64 value to a wide sum (kWideWords limbs) and returns 0, or returns its flag, adding
/// nothing, for a non-finite one: its term's value at limbs limb and limb + 1, with their carries.
template <class FetchAdd> TALLY_HD_HOT unsigned add_wide(std::uint64_t* words, double x, FetchAdd&& fetch_add) {
  std::uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  if (const unsigned flag = exact_flag_of_f64(bits)) return flag;
  wide_run one;
  one.start(wide_term_of_finite(bits));
  add_wide_run(words, one, fetch_add);
  return 0;
}

/// The 32-bit limbs of a sum in Format, modulo 2^Format::bits (two's complement).
template <class Format> struct exact_limbs {
  static constexpr int count = Format::bits / 32;
  std::uint32_t limb[count] = {};
  TALLY_HD explicit exact_limbs(const std::uint64_t* words) {
    for (int k = 0; k < Format::words; ++k) {
      std::uint64_t carry = 0;
      for (int j = k * Format::stride / 32, part = 0; j < count; ++j, ++part) {
        const std::uint64_t add = part == 0 ? (words[k] & 0xFFFFFFFFu) : part == 1 ? (words[k] >> 32) : 0;
        if (part > 1 && carry == 0) break;
        const std::uint64_t sum = limb[j] + add + carry;
        limb[j] = static_cast<std::uint32_t>(sum);
        carry = sum >> 32;
      }
    }
  }
  TALLY_HD bool negative() const { return limb[count - 1] >> 31; }
};

/// Adds an f32-format sum (kExactWords words, units of 2^-149) into a wide sum (units of 2^-1074):
/// the sign-extended 320-bit number shifted up by 925 bits, limb by limb with carries.
template <class FetchAdd>
TALLY_HD void add_f32_words_to_wide(std::uint64_t* wide, const std::uint64_t* words, FetchAdd&& fetch_add) {
  constexpr int shift = wide_exact::unit_bits - f32_exact::unit_bits;  // 925 = 28 x 32 + 29
  const exact_limbs<f32_exact> from(words);
  const std::uint32_t fill = from.negative() ? 0xFFFFFFFFu : 0u;
  const auto limb_at = [&](int j) { return j < 0 ? 0u : j < from.count ? from.limb[j] : fill; };
  // Wide 32-bit limb i holds bits [32 i, 32 i + 32) of the shifted number: parts of from's limbs
  // i - 29 and i - 28.
  constexpr int whole = shift / 32, rest = shift % 32;
  const auto shifted = [&](int i) {
    const std::uint64_t pair =
        (static_cast<std::uint64_t>(limb_at(i - whole)) << 32) | limb_at(i - whole - 1);
    return static_cast<std::uint32_t>(pair >> (32 - rest));
  };
  // From wide limb `whole` up; the sign's limbs continue to the top, where the sum's modulus drops them.
  for (int k = whole / 2; k < wide_exact::words; ++k) {
    const std::uint64_t v = (static_cast<std::uint64_t>(shifted(2 * k + 1)) << 32) | shifted(2 * k);
    if (v) add_exact_bits<wide_exact>(wide, k, v, false, fetch_add);
  }
}

/// The words' value (units of 2^-Format::unit_bits), correctly rounded to the nearest double, ties
/// to even; then the flags: NaN, or an infinity, as IEEE addition of the values in any order gives.
template <class Format = f32_exact> TALLY_HD double exact_value(const std::uint64_t* words, unsigned flags) {
  if (flags & exact_nan || (flags & exact_plus_inf && flags & exact_minus_inf)) return double_of(0x7FF8000000000000u);
  if (flags & exact_plus_inf) return double_of(0x7FF0000000000000u);
  if (flags & exact_minus_inf) return double_of(0xFFF0000000000000u);
  exact_limbs<Format> sum(words);
  constexpr int kLimbs = exact_limbs<Format>::count;
  std::uint32_t* limb = sum.limb;
  const bool negative = sum.negative();
  if (negative) {  // two's complement: invert and add one
    std::uint64_t carry = 1;
    for (int j = 0; j < kLimbs; ++j) {
      const std::uint64_t s = static_cast<std::uint64_t>(~limb[j]) + carry;
      limb[j] = static_cast<std::uint32_t>(s);
      carry = s >> 32;
    }
  }
  int top = kLimbs - 1;
  while (top > 0 && limb[top] == 0) --top;
  if (top < 2) {  // below 2^64 units: one conversion, exact scaling (or exact subnormal, wide: below 2^53)
    const std::uint64_t v = (static_cast<std::uint64_t>(limb[1]) << 32) | limb[0];
    const double x = ::ldexp(static_cast<double>(v), -Format::unit_bits);
    return negative ? -x : x;
  }
  // The 64 bits from the highest set bit down, with every lower bit folded into the lowest of
  // them (a sticky bit: 64 > 53 + 2, so rounding to 53 bits sees it as the tie-breaker it is):
  // the u64 -> double conversion then rounds once, and the scaling is exact (or overflows to the
  // infinity that rounding gives).
  int lead = 0;  // leading zeros of limb[top]
  while (!((limb[top] << lead) & 0x80000000u)) ++lead;
  const std::uint64_t upper = (static_cast<std::uint64_t>(limb[top]) << 32) | limb[top - 1];
  std::uint64_t mantissa = upper, rest = limb[top - 2];
  if (lead) {
    mantissa = (upper << lead) | (limb[top - 2] >> (32 - lead));
    rest = limb[top - 2] & ((1u << (32 - lead)) - 1);
  }
  for (int j = 0; j < top - 2; ++j) rest |= limb[j];
  const int low = 32 * (top - 2) + 32 - lead;  // the bit index of the mantissa's lowest bit
  const double x = ::ldexp(static_cast<double>(mantissa | (rest ? 1u : 0u)), low - Format::unit_bits);
  return negative ? -x : x;
}

/// A wide cell as digits that an integer sum (NCCL's, torch.distributed's) adds without carries:
/// each limb's low and high 32 bits in a word of its own, then one counter a flag (+inf, -inf,
/// NaN). Digit-wise sums of fewer than 2^31 cells' digits stay below 2^63, and join_wide_digits
/// turns them into the cells' exact sum: the limbs with their carries, each flag set where its
/// counter is not 0.
constexpr int kWideDigits = 2 * kWideWords + 3;

TALLY_HD void split_wide_digits(const std::uint64_t* cell, std::uint64_t* digits) {
  for (int k = 0; k < kWideWords; ++k) {
    digits[2 * k] = cell[k] & 0xFFFFFFFFu;
    digits[2 * k + 1] = cell[k] >> 32;
  }
  const std::uint64_t flags = cell[kWideWords];
  digits[2 * kWideWords] = (flags & exact_plus_inf) != 0;
  digits[2 * kWideWords + 1] = (flags & exact_minus_inf) != 0;
  digits[2 * kWideWords + 2] = (flags & exact_nan) != 0;
}

TALLY_HD void join_wide_digits(const std::uint64_t* digits, std::uint64_t* cell) {
  std::uint64_t carry = 0;  // below 2^31: the top of a digit sum below 2^63
  for (int k = 0; k < kWideWords; ++k) {
    const std::uint64_t lo = digits[2 * k] + carry;
    const std::uint64_t hi = digits[2 * k + 1] + (lo >> 32);
    cell[k] = (lo & 0xFFFFFFFFu) | (hi << 32);
    carry = hi >> 32;
  }  // the last carry is 2^2176: the sum's modulus drops it
  cell[kWideWords] = (digits[2 * kWideWords] ? exact_plus_inf : 0u) | (digits[2 * kWideWords + 1] ? exact_minus_inf : 0u) |
                     (digits[2 * kWideWords + 2] ? exact_nan : 0u);
}

}  // namespace tally::detail
