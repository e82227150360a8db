// Sample type names, sizes and the 16-bit float conversions of the public API.
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "core/float_format.hpp"
#include "tally/dtype.hpp"
#include "tally/error.hpp"

namespace tally {
namespace {

enum class number : std::uint8_t { unsigned_integer, signed_integer, floating };

struct dtype_entry {
  dtype type;
  std::size_t size;
  number kind;
  std::string_view name;
  std::string_view numpy_name;
};

// The one table of sample types, in the enum's order (the bindings derive DLPack's codes from it).
constexpr std::array<dtype_entry, 12> kTypes{{
    {dtype::u8, 1, number::unsigned_integer, "u8", "uint8"},
    {dtype::i8, 1, number::signed_integer, "i8", "int8"},
    {dtype::u16, 2, number::unsigned_integer, "u16", "uint16"},
    {dtype::i16, 2, number::signed_integer, "i16", "int16"},
    {dtype::u32, 4, number::unsigned_integer, "u32", "uint32"},
    {dtype::i32, 4, number::signed_integer, "i32", "int32"},
    {dtype::u64, 8, number::unsigned_integer, "u64", "uint64"},
    {dtype::i64, 8, number::signed_integer, "i64", "int64"},
    {dtype::f16, 2, number::floating, "f16", "float16"},
    {dtype::bf16, 2, number::floating, "bf16", "bfloat16"},
    {dtype::f32, 4, number::floating, "f32", "float32"},
    {dtype::f64, 8, number::floating, "f64", "float64"},
}};

constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < kTypes.size(); ++i)
    if (static_cast<std::size_t>(kTypes[i].type) != i) return false;
  return true;
}
static_assert(in_enum_order(), "kTypes: one row per dtype, in the enum's order");

const dtype_entry& entry(dtype t) {
  auto i = static_cast<std::size_t>(t);
  if (i >= kTypes.size()) throw error("unsupported sample type code " + std::to_string(i));
  return kTypes[i];
}

}  // namespace

const std::vector<dtype>& sample_types() {
  static const std::vector<dtype> all = [] {
    std::vector<dtype> v;
    for (const auto& e : kTypes) v.push_back(e.type);
    return v;
  }();
  return all;
}

std::size_t size_of(dtype t) { return entry(t).size; }
std::string_view name_of(dtype t) { return entry(t).name; }
std::string_view numpy_name_of(dtype t) { return entry(t).numpy_name; }

std::string sample_type_names() {
  std::string names;
  for (const auto& e : kTypes) names += (names.empty() ? "" : " ") + std::string(e.name);
  return names;
}

dtype dtype_from_name(std::string_view name) {
  for (const auto& e : kTypes)
    if (name == e.name || name == e.numpy_name) return e.type;
  throw error("unknown dtype '" + std::string(name) + "': expected one of " + sample_type_names());
}

bool is_floating(dtype t) { return entry(t).kind == number::floating; }
bool is_signed_integer(dtype t) { return entry(t).kind == number::signed_integer; }

double to_double(half h) { return detail::half_bits_to_double(h.bits); }
double to_double(bfloat16 b) { return detail::bfloat16_bits_to_double(b.bits); }

half to_half(double x) {
  if (std::isnan(x)) return half{static_cast<std::uint16_t>(std::signbit(x) ? 0xfe00 : 0x7e00)};
  double r = detail::round_to_format(x, detail::f16_format);
  std::uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  double a = std::fabs(r);
  if (std::isinf(a)) return half{static_cast<std::uint16_t>(sign | 0x7c00)};
  if (a < std::ldexp(1.0, -14)) {  // subnormal or zero: a multiple of 2^-24
    return half{static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::ldexp(a, 24)))};
  }
  int e = 0;
  double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  auto fraction = static_cast<std::uint16_t>(std::ldexp(m, 11)) & 0x3ff;
  auto biased = static_cast<std::uint16_t>(e - 1 + 15);
  return half{static_cast<std::uint16_t>(sign | (biased << 10) | fraction)};
}

bfloat16 to_bfloat16(double x) {
  if (std::isnan(x)) return bfloat16{static_cast<std::uint16_t>(std::signbit(x) ? 0xffc0 : 0x7fc0)};
  // The rounded value is exactly representable as a float, whose upper half are the bits.
  auto f = static_cast<float>(detail::round_to_format(x, detail::bf16_format));
  std::uint32_t word;
  std::memcpy(&word, &f, sizeof word);
  return bfloat16{static_cast<std::uint16_t>(word >> 16)};
}

}  // namespace tally
