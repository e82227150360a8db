// The samples of the sums' kernels, shared by exact_sums.cu (exact sums of f32 weights) and
// ordered_sums.cu (fixed-order f64 weighted sums): any layout through the generic bin rule, or one
// contiguous column through the typed kernels' binner where a 32-bit rule applies to it.
#pragma once

#include "cuda/count_typed.cuh"

namespace tally::detail::cuda {

/// Samples of the generic kernels: any type, stride and number of axes.
struct any_samples {
  device_axes axes;
  __device__ __forceinline__ std::int64_t slot(std::int64_t i, std::int64_t cells) const {
    return slot_of(axes, i, cells);
  }
};

/// One contiguous column of T, with the typed kernels' binner for it.
template <class T, class Binner> struct column_samples {
  using type = T;
  const T* x;
  Binner binner;
  __device__ __forceinline__ std::int64_t slot(std::int64_t i, std::int64_t cells) const {
    return slot_for(binner, __ldg(x + i), cells);
  }
};
template <class S> struct is_column : std::false_type {};
template <class T, class B> struct is_column<column_samples<T, B>> : std::true_type {};

/// Calls f(column_samples) for the one column of `axes` where a 32-bit typed rule applies to it
/// (integers within the sample type, f32 samples) and returns true; else returns false, calling
/// nothing (the generic loop's case).
template <class F> bool with_column_samples(const device_axes& axes, F&& f) {
  if (axes.count != 1) return false;
  const device_axis& axis = axes.axis[0];
  bool called = false;
  with_typed_binner<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t, float>(
      axis.type, axis, [&](auto tag, const auto& binner) {
        using T = typename decltype(tag)::type;
        using B = std::decay_t<decltype(binner)>;
        if constexpr (gives_slots<B>::value || std::is_same_v<B, variable32_binner>) {
          f(column_samples<T, B>{reinterpret_cast<const T*>(axis.data), binner});
          called = true;
        }
      });
  return called;
}

}  // namespace tally::detail::cuda
