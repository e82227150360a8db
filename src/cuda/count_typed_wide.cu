// The typed count kernel for 32- and 64-bit integer samples.
#include "cuda/count_typed.cuh"

namespace tally::detail::cuda {

void count_typed_wide(dtype sample, const axis_rule& rule, const typed_count_args& args,
                      const launch_shape& shape) {
  switch (sample) {
    case dtype::u32: return launch_typed<std::uint32_t>(rule, args, shape);
    case dtype::i32: return launch_typed<std::int32_t>(rule, args, shape);
    case dtype::u64: return launch_typed<std::uint64_t>(rule, args, shape);
    case dtype::i64: return launch_typed<std::int64_t>(rule, args, shape);
    default: throw error("count_typed_wide: not a 32- or 64-bit integer type");
  }
}

}  // namespace tally::detail::cuda
