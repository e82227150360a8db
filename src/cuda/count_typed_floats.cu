// The typed count kernel for floating-point samples.
#include "cuda/count_typed.cuh"

namespace tally::detail::cuda {

void count_typed_floats(dtype sample, const device_axis& axis, const typed_count_args& args,
                        const launch_shape& shape) {
  launch_typed<half, bfloat16, float, double>(sample, axis, args, shape);
}

}  // namespace tally::detail::cuda
