// The typed count kernel for 8- and 16-bit integer samples, and the 8-bit value table.
#include "cuda/count_typed.cuh"

namespace tally::detail::cuda {

void count_typed_narrow(dtype sample, const device_axis& axis, const typed_count_args& args,
                        const launch_shape& shape) {
  launch_typed<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t>(sample, axis, args, shape);
}

void count_values(dtype sample, const typed_count_args& args, const launch_shape& shape) {
  if (sample == dtype::u8) return launch_with<std::uint8_t>(value_binner{value_lo<std::uint8_t>}, args, shape);
  if (sample == dtype::i8) return launch_with<std::int8_t>(value_binner{value_lo<std::int8_t>}, args, shape);
  throw error("count_values: not an 8-bit type");
}

void count_channel_values(dtype sample, int channels, int phase, const typed_count_args& args,
                          const launch_shape& shape) {
  const auto launch = [&](auto per_pixel) {
    constexpr int C = decltype(per_pixel)::value;
    if (sample == dtype::u8)
      return launch_with<std::uint8_t>(channel_value_binner<C>{value_lo<std::uint8_t>, phase}, args, shape);
    if (sample == dtype::i8)
      return launch_with<std::int8_t>(channel_value_binner<C>{value_lo<std::int8_t>, phase}, args, shape);
    throw error("count_channel_values: not an 8-bit type");
  };
  switch (channels) {
    case 2: return launch(std::integral_constant<int, 2>{});
    case 3: return launch(std::integral_constant<int, 3>{});
    case 4: return launch(std::integral_constant<int, 4>{});
    default: throw error("count_channel_values: 2, 3 or 4 channels, got " + std::to_string(channels));
  }
}

namespace {

/// Thread v maps value v + value_lo<T> (one of the 256 8-bit values) to its slot and adds its
/// count.
template <class T, class Binner>
__global__ void fold_values_kernel(Binner binner, const unsigned long long* raw, std::int64_t cells,
                                   unsigned long long* slots) {
  const int v = threadIdx.x;
  const unsigned long long n = raw[v];
  if (n == 0) return;
  atomicAdd(&slots[slot_of_index(binner(static_cast<T>(v + value_lo<T>)), cells)], n);
}

template <class T>
void fold(const device_axis& axis, const unsigned long long* raw, std::int64_t cells, unsigned long long* slots,
          cudaStream_t stream) {
  with_binner(axis, [&](const auto& binner) {
    fold_values_kernel<T><<<1, 256, 0, stream>>>(binner, raw, cells, slots);
    TALLY_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

void fold_values(dtype sample, const device_axis& axis, const unsigned long long* raw, std::int64_t cells,
                 unsigned long long* slots, cudaStream_t stream) {
  if (sample == dtype::u8) return fold<std::uint8_t>(axis, raw, cells, slots, stream);
  if (sample == dtype::i8) return fold<std::int8_t>(axis, raw, cells, slots, stream);
  throw error("fold_values: not an 8-bit type");
}

}  // namespace tally::detail::cuda
