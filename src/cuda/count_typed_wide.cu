// The typed count kernel for 32- and 64-bit integer samples.
#include "cuda/count_typed.cuh"

namespace tally::detail::cuda {

void count_typed_wide(dtype sample, const device_axis& axis, const typed_count_args& args,
                      const launch_shape& shape) {
  launch_typed<std::uint32_t, std::int32_t, std::uint64_t, std::int64_t>(sample, axis, args, shape);
}

}  // namespace tally::detail::cuda
