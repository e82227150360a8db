// Runtime sample type -> compile-time type: calls f(type_tag<T>{}) for the view's dtype.
#pragma once

#include <cstdint>

#include "base/hd.hpp"
#include "tally/dtype.hpp"

namespace tally::detail {

template <class T> struct type_tag { using type = T; };

// f may be host-only (a host caller's lambda) or device code: nvcc checks no execution space of
// this template's instantiations.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class F> TALLY_HD void with_sample_type(dtype t, F&& f) {
  switch (t) {
    case dtype::u8: return f(type_tag<std::uint8_t>{});
    case dtype::i8: return f(type_tag<std::int8_t>{});
    case dtype::u16: return f(type_tag<std::uint16_t>{});
    case dtype::i16: return f(type_tag<std::int16_t>{});
    case dtype::u32: return f(type_tag<std::uint32_t>{});
    case dtype::i32: return f(type_tag<std::int32_t>{});
    case dtype::u64: return f(type_tag<std::uint64_t>{});
    case dtype::i64: return f(type_tag<std::int64_t>{});
    case dtype::f16: return f(type_tag<half>{});
    case dtype::bf16: return f(type_tag<bfloat16>{});
    case dtype::f32: return f(type_tag<float>{});
    case dtype::f64: return f(type_tag<double>{});
  }
}

}  // namespace tally::detail
