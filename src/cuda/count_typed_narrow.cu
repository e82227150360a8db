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

void count_channel_values(dtype sample, int channels, int counted, int phase, const typed_count_args& args,
                          const launch_shape& shape) {
  const auto launch = [&](auto per_pixel) {
    constexpr int C = decltype(per_pixel)::value;
    if (sample == dtype::u8)
      return launch_with<std::uint8_t>(channel_value_binner<C>{value_lo<std::uint8_t>, phase, counted}, args, shape);
    if (sample == dtype::i8)
      return launch_with<std::int8_t>(channel_value_binner<C>{value_lo<std::int8_t>, phase, counted}, args, shape);
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

/// Block c maps channel c's value counts (thread v: value v + value_lo<T>) through its axis' rule
/// to its slots: every channel folded in one launch.
template <class T> __global__ void fold_values_kernel(value_folds f) {
  const value_fold& c = f.channel[blockIdx.x];
  const int v = threadIdx.x;
  const unsigned long long n = f.raw[256 * blockIdx.x + v];
  if (n == 0) return;
  std::int64_t k = 0;
  with_binner(c.axis, [&](const auto& binner) { k = binner(static_cast<T>(v + value_lo<T>)); });
  atomicAdd(&c.slots[slot_of_index(k, c.cells)], n);
}

}  // namespace

void fold_values(dtype sample, const value_folds& folds, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(folds.channels);
  if (sample == dtype::u8) fold_values_kernel<std::uint8_t><<<blocks, 256, 0, stream>>>(folds);
  else if (sample == dtype::i8) fold_values_kernel<std::int8_t><<<blocks, 256, 0, stream>>>(folds);
  else throw error("fold_values: not an 8-bit type");
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::detail::cuda
