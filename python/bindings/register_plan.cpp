// The library by name: its version, backends and strategies; histogram options from the names
// the package passes; a plan (tally::policy) as a dict.
#include "bindings.hpp"
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <tuple>

namespace tally_bindings {

tally::backend backend_named(const std::string& name) {
  if (name == "auto" || name.empty()) return tally::backend::automatic;
  return tally::backend_from_name(name);
}

tally::options make_options(bool weighted, const std::string& strategy, tally::backend backend, bool flow,
                            bool counts32, int threads, bool exact_sums, std::int64_t sum_block) {
  tally::options o;
  o.weighted = weighted;
  o.exact_sums = exact_sums;
  o.strategy = tally::strategy_from_name(strategy);
  o.backend = backend;
  o.flow = flow;
  o.counts = counts32 ? tally::count_type::u32 : tally::count_type::u64;
  o.threads = threads;
  o.sum_block = sum_block;
  return o;
}

nb::dict policy_dict(const tally::policy& p) {
  nb::dict d;
  d["backend"] = std::string(tally::name_of(p.where));
  d["strategy"] = std::string(tally::name_of(p.chosen));
  d["threads"] = p.threads;
  d["replicas"] = p.replicas;
  d["edge_table"] = p.edge_table;
  d["block"] = p.block;
  d["block_threads"] = p.block_threads;
  d["grid_blocks"] = p.grid_blocks;
  d["cluster_blocks"] = p.cluster_blocks;
  d["vector_bytes"] = p.vector_bytes;
  d["unroll"] = p.unroll;
  d["value_table"] = p.value_table;
  d["tables_in_shared"] = p.tables_in_shared;
  d["shared_bytes"] = p.shared_bytes;
  d["window_cells"] = p.window_cells;
  d["exact_sums"] = p.exact_sums;
  d["exact_wide"] = p.exact_wide;
  d["reasons"] = p.reasons;
  d["description"] = tally::describe(p);
  return d;
}

void register_plan(nb::module_& m) {
  m.def("version", [] { return std::string(tally::version()); });
  m.def("backends", [] {
    std::vector<std::tuple<std::string, bool, bool, std::string>> out;
    for (const auto& b : tally::backends())
      out.emplace_back(std::string(tally::name_of(b.which)), b.compiled, b.usable, b.detail);
    return out;
  });
  // The strategy registry (tally/strategy.hpp), a dict a row.
  m.def("strategies", [] {
    nb::list rows;
    for (const tally::strategy_info& s : tally::strategies()) {
      nb::dict row;
      row["name"] = std::string(s.name);
      row["backend"] = std::string(tally::name_of(s.where));
      row["technique"] = std::string(s.technique);
      row["applies"] = std::string(s.applies);
      row["chosen_when"] = std::string(s.chosen_when);
      rows.append(row);
    }
    return rows;
  });
  // bincount's plan (tally/bincount.hpp): (length, learn), and its learned length.
  m.def("plan_bincount", [](bool on_cuda, std::int64_t n, const std::string& sample, std::int64_t minlength,
                            bool weighted) {
    const tally::bincount_plan p = tally::plan_bincount(on_cuda, n, tally::dtype_from_name(sample), minlength, weighted);
    return std::make_tuple(p.length, p.learn);
  }, nb::arg("on_cuda"), nb::arg("n"), nb::arg("sample"), nb::arg("minlength"), nb::arg("weighted"));
  m.def("remember_bincount_length", &tally::remember_bincount_length, nb::arg("length"));
  m.def("bincount_guess", &tally::bincount_guess);
  m.def("reset_bincount_guess", &tally::reset_bincount_guess);
  // The small host calls' limits (tally/plan.hpp), which the package's numpy calls follow.
  m.attr("host_call_max_cells") = tally::host_call_max_cells;
  m.attr("host_call_max_samples") = tally::host_call_max_samples;
}

}  // namespace tally_bindings
