// The typed count kernel for 8- and 16-bit integer samples, and the 8-bit value table.
#include "cuda/count_typed.cuh"

namespace tally::detail::cuda {

void count_typed_narrow(dtype sample, const axis_rule& rule, const typed_count_args& args,
                        const launch_shape& shape) {
  switch (sample) {
    case dtype::u8: return launch_typed<std::uint8_t>(rule, args, shape);
    case dtype::i8: return launch_typed<std::int8_t>(rule, args, shape);
    case dtype::u16: return launch_typed<std::uint16_t>(rule, args, shape);
    case dtype::i16: return launch_typed<std::int16_t>(rule, args, shape);
    default: throw error("count_typed_narrow: not an 8- or 16-bit integer type");
  }
}

void count_values(dtype sample, const typed_count_args& args, const launch_shape& shape) {
  if (sample == dtype::u8) return launch_with<std::uint8_t>(value_binner{0}, args, shape);
  if (sample == dtype::i8) return launch_with<std::int8_t>(value_binner{-128}, args, shape);
  throw error("count_values: not an 8-bit type");
}

namespace {

/// Thread v maps value v + lo (one of the 256 8-bit values) to its slot and adds its count.
template <class T, class Binner>
__global__ void fold_values_kernel(Binner binner, const unsigned long long* raw, std::int64_t cells,
                                   unsigned long long* slots) {
  const int v = threadIdx.x;
  const unsigned long long n = raw[v];
  if (n == 0) return;
  const int lo = std::is_signed_v<T> ? -128 : 0;
  atomicAdd(&slots[slot_of_index(binner(static_cast<T>(v + lo)), cells)], n);
}

template <class T>
void fold(const axis_rule& rule, const unsigned long long* raw, std::int64_t cells,
          unsigned long long* slots, cudaStream_t stream) {
  const auto launch = [&](auto binner) {
    fold_values_kernel<T><<<1, 256, 0, stream>>>(binner, raw, cells, slots);
    TALLY_CUDA_CHECK(cudaGetLastError());
  };
  switch (rule.kind) {
    case axis_kind::regular: return launch(rule.regular);
    case axis_kind::variable: return launch(rule.variable);
    case axis_kind::integer: return launch(rule.integer);
  }
}

}  // namespace

void fold_values(dtype sample, const axis_rule& rule, const unsigned long long* raw, std::int64_t cells,
                 unsigned long long* slots, cudaStream_t stream) {
  if (sample == dtype::u8) return fold<std::uint8_t>(rule, raw, cells, slots, stream);
  if (sample == dtype::i8) return fold<std::int8_t>(rule, raw, cells, slots, stream);
  throw error("fold_values: not an 8-bit type");
}

}  // namespace tally::detail::cuda
