// Sample types, 16-bit float storage types and the strided view that carries samples in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tally {

/// The twelve sample types. Weights are f32 or f64.
enum class dtype : std::uint8_t { u8, i8, u16, i16, u32, i32, u64, i64, f16, bf16, f32, f64 };

/// IEEE binary16, stored as its bits (no CUDA header needed).
struct half {
  std::uint16_t bits;
};
/// bfloat16 (the upper half of an f32), stored as its bits.
struct bfloat16 {
  std::uint16_t bits;
};

/// Every sample type, in the enum's order: the one table of names and sizes that the bindings,
/// the Python package and the CLI read.
const std::vector<dtype>& sample_types();
std::size_t size_of(dtype t);
std::string_view name_of(dtype t);
/// numpy's name of the type ("uint8", ..., "bfloat16" for bf16, which numpy itself lacks).
std::string_view numpy_name_of(dtype t);
/// Every sample type's name, space-separated ("u8 i8 ... f64"), for messages and help texts.
std::string sample_type_names();
/// Parses "u8", "i32", "f16", "bf16", "f64", ... (also numpy's "uint8", "float32", ...).
/// Throws tally::error for an unknown name.
dtype dtype_from_name(std::string_view name);
bool is_floating(dtype t);
bool is_signed_integer(dtype t);

/// Exact widening conversions, and correctly rounded (to nearest even) narrowing ones.
double to_double(half h);
double to_double(bfloat16 b);
half to_half(double x);
bfloat16 to_bfloat16(double x);

template <class T> struct dtype_of_t;
template <> struct dtype_of_t<std::uint8_t> { static constexpr dtype value = dtype::u8; };
template <> struct dtype_of_t<std::int8_t> { static constexpr dtype value = dtype::i8; };
template <> struct dtype_of_t<std::uint16_t> { static constexpr dtype value = dtype::u16; };
template <> struct dtype_of_t<std::int16_t> { static constexpr dtype value = dtype::i16; };
template <> struct dtype_of_t<std::uint32_t> { static constexpr dtype value = dtype::u32; };
template <> struct dtype_of_t<std::int32_t> { static constexpr dtype value = dtype::i32; };
template <> struct dtype_of_t<std::uint64_t> { static constexpr dtype value = dtype::u64; };
template <> struct dtype_of_t<std::int64_t> { static constexpr dtype value = dtype::i64; };
template <> struct dtype_of_t<half> { static constexpr dtype value = dtype::f16; };
template <> struct dtype_of_t<bfloat16> { static constexpr dtype value = dtype::bf16; };
template <> struct dtype_of_t<float> { static constexpr dtype value = dtype::f32; };
template <> struct dtype_of_t<double> { static constexpr dtype value = dtype::f64; };
template <class T> inline constexpr dtype dtype_of = dtype_of_t<T>::value;

/// A read-only, strided, typed sequence of `size` elements: element i is at
/// `static_cast<const char*>(data) + i * stride * size_of(type)`. 64-bit sizes and strides,
/// so inputs longer than 2^31 elements and strided columns work. Stride is in elements, >= 0:
/// stride 0 repeats element 0 (a value broadcast to every sample, as numpy's broadcast_to).
/// The memory may be host or device memory; backend::automatic picks the backend from it.
struct view {
  const void* data = nullptr;
  std::int64_t size = 0;
  std::int64_t stride = 1;
  dtype type = dtype::f64;
};

template <class T>
view make_view(const T* data, std::int64_t size, std::int64_t stride = 1) {
  return view{data, size, stride, dtype_of<T>};
}

}  // namespace tally
