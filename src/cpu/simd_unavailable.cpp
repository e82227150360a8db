// simd_binning.hpp in a build without Highway: no kernel, the scalar rule bins every sample.
#include "cpu/simd_binning.hpp"

namespace tally::detail {

simd_tile_fn simd_kernel(simd_rule, dtype) { return nullptr; }
std::string simd_target() { return "scalar"; }
std::vector<std::string> simd_targets() { return {"scalar"}; }
bool use_simd_target(const std::string& name) { return name == "scalar"; }
std::int64_t simd_variable_bucket_count(std::int64_t) { return 0; }
simd_variable_rule make_simd_variable_rule(const variable_rule&, std::int64_t) { return {}; }

}  // namespace tally::detail
