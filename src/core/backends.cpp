// The backend table and the public backends() report.
#include <thread>

#include "core/backend.hpp"

namespace tally {
namespace detail {

const std::vector<backend_ops>& backend_table() {
  static const std::vector<backend_ops> table = [] {
    std::vector<backend_ops> t{cpu_backend()};
#if defined(TALLY_HAVE_CUDA)
    t.push_back(cuda_backend());
#endif
    return t;
  }();
  return table;
}

const backend_ops* find_backend(backend which) {
  for (const auto& b : backend_table())
    if (b.which == which) return &b;
  return nullptr;
}

}  // namespace detail

std::vector<backend_info> backends() {
  std::vector<backend_info> out;
  for (backend which : {backend::cpu, backend::cuda}) {
    backend_info info;
    info.which = which;
    if (const auto* ops = detail::find_backend(which)) {
      info.compiled = true;
      info.usable = ops->usable(info.detail);
    } else {
      info.detail = "not compiled in (configure with -DTALLY_CUDA=ON where nvcc is found)";
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::string_view version() { return TALLY_VERSION; }

}  // namespace tally
