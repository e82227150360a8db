// The typed count kernel for floating-point samples.
#include "cuda/count_typed.cuh"

namespace tally::detail::cuda {

void count_typed_floats(dtype sample, const axis_rule& rule, const typed_count_args& args,
                        const launch_shape& shape) {
  switch (sample) {
    case dtype::f16: return launch_typed<half>(rule, args, shape);
    case dtype::bf16: return launch_typed<bfloat16>(rule, args, shape);
    case dtype::f32: return launch_typed<float>(rule, args, shape);
    case dtype::f64: return launch_typed<double>(rule, args, shape);
    default: throw error("count_typed_floats: not a floating-point type");
  }
}

}  // namespace tally::detail::cuda
