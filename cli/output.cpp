// CSV and JSON renderings of a finished run; edges and values printed so they read back exactly.
#include "output.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "format.hpp"
#include "summary.hpp"

namespace tally_cli {
namespace {

/// Each cell's count (exact 64-bit) or sum of weights (shortest round-trip).
std::vector<std::string> cell_texts(const tally::histogram& h) {
  std::vector<std::string> out;
  if (h.weighted()) {
    for (double s : h.sums()) out.push_back(shortest(s));
  } else {
    for (std::uint64_t c : h.counts()) out.push_back(std::to_string(c));
  }
  return out;
}

const char* value_name(const hist_result& r) { return r.weighted() ? "sum" : "count"; }

std::string nd_csv(const hist_result& r) {
  const tally::histogram& h = r.hists.front();
  const std::vector<std::int64_t> shape = h.shape();
  std::ostringstream out;
  for (std::size_t d = 0; d < shape.size(); ++d) out << "axis" << d << "_lo,axis" << d << "_hi,";
  out << value_name(r) << "\n";
  const std::vector<std::string> cells = cell_texts(h);
  std::vector<std::int64_t> index(shape.size(), 0);
  for (const std::string& cell : cells) {
    for (std::size_t d = 0; d < shape.size(); ++d) {
      const tally::axis& a = h.axes()[d];
      out << edge_text(a, index[d]) << "," << edge_text(a, index[d] + 1) << ",";
    }
    out << cell << "\n";
    // Row-major order: the last axis advances fastest.
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out.str();
}

nlohmann::json exact_json(const exact& v) {
  return std::visit(
      [](auto x) -> nlohmann::json {
        if constexpr (std::is_floating_point_v<decltype(x)>)
          return static_cast<double>(x);
        else
          return x;
      },
      v);
}

nlohmann::json axis_json(const hist_result& r, int c) {
  const tally::axis& a = r.axis_of(c);
  static const char* kinds[] = {"regular", "variable", "integer"};
  nlohmann::json j = {{"name", r.names[c]}, {"kind", kinds[static_cast<int>(a.kind())]}};
  if (a.kind() == tally::axis_kind::integer) {
    // Exact integers: a double edge past 2^53 would name a neighbouring integer.
    std::vector<std::int64_t> edges;
    for (std::int64_t k = 0; k <= a.bins(); ++k) edges.push_back(a.integer_lo() + k);
    j["edges"] = edges;
  } else {
    j["edges"] = a.edges();
  }
  if (a.kind() == tally::axis_kind::regular)
    j["edge_type"] = std::string(tally::name_of(a.edge_type()));
  if (r.named) {  // named bins: their names, and no summary of their byte codes
    j["labels"] = r.named->labels;
    return j;
  }
  const extrema& b = r.bounds[c];
  j["min"] = b.any ? exact_json(b.lo) : nlohmann::json();
  j["max"] = b.any ? exact_json(b.hi) : nlohmann::json();
  const estimate e = estimate_of(value_edges(a, r.input.type), r.values_of(c));
  nlohmann::json est = {{"mean", e.mean}, {"std", e.stddev}};
  for (std::size_t q = 0; q < kQuantiles.size(); ++q)
    est["p" + sig(kQuantiles[q] * 100)] = e.quantiles[q];
  j["estimated"] = est;
  return j;
}

nlohmann::json hist_json(const hist_result& r, const tally::histogram& h, int first_column) {
  nlohmann::json axes = nlohmann::json::array();
  for (std::size_t d = 0; d < h.axes().size(); ++d)
    axes.push_back(axis_json(r, first_column + static_cast<int>(d)));
  const tally::flow_counts f = h.flow();
  nlohmann::json j = {
      {"axes", axes},
      {"shape", h.shape()},
      {"samples", h.samples()},
      {"in_bins", h.samples() - f.total()},
      {"flow", {{"underflow", f.underflow}, {"overflow", f.overflow}, {"nan", f.nan}}}};
  if (h.weighted())
    j["sums"] = h.sums();
  else
    j["counts"] = h.counts();
  return j;
}

}  // namespace

std::string to_csv(const hist_result& r) {
  if (r.mode == layout_mode::nd) return nd_csv(r);
  std::ostringstream out;
  // Named bins add their names as a last column.
  out << "channel,bin_lo,bin_hi," << value_name(r) << (r.named ? ",label" : "") << "\n";
  for (int c = 0; c < r.columns(); ++c) {
    const tally::axis& a = r.axis_of(c);
    const std::vector<std::string> cells = cell_texts(r.hist_of(c));
    for (std::int64_t k = 0; k < a.bins(); ++k)
      out << r.names[c] << "," << edge_text(a, k) << "," << edge_text(a, k + 1) << "," << cells[k]
          << (r.named ? "," + r.named->labels[k] : "") << "\n";
  }
  return out.str();
}

std::string to_json(const hist_result& r) {
  static const char* modes[] = {"single", "channels", "nd"};
  nlohmann::json j = {{"file", r.input.path},
                      {"format", r.input.format},
                      {"layout", r.input.layout},
                      {"dtype", std::string(tally::name_of(r.input.type))},
                      {"mode", modes[static_cast<int>(r.mode)]},
                      {"value", value_name(r)}};
  if (!r.weights_path.empty()) j["weights"] = r.weights_path;
  nlohmann::json hists = nlohmann::json::array();
  if (r.mode == layout_mode::channels) {
    for (int c = 0; c < r.columns(); ++c) hists.push_back(hist_json(r, r.hists[c], c));
  } else {
    hists.push_back(hist_json(r, r.hists.front(), 0));
  }
  j["histograms"] = hists;
  return j.dump() + "\n";
}

}  // namespace tally_cli
