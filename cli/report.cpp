// Composes the stdout report: exact facts from the data, estimates from the bins, charts.
#include "report.hpp"

#include <algorithm>

#include <sstream>

#include "format.hpp"
#include "render.hpp"
#include "summary.hpp"

namespace tally_cli {
namespace {

/// "regular [0, 1], 64 bins, f32 edges", "integer [0, 256), 256 bins", ...
std::string describe_axis(const tally::axis& a) {
  const std::string bins = std::to_string(a.bins()) + (a.bins() == 1 ? " bin" : " bins");
  const std::string lo = edge_text(a, 0), hi = edge_text(a, a.bins());
  switch (a.kind()) {
    case tally::axis_kind::regular:
      return "regular [" + lo + ", " + hi + "], " + bins +
             (a.edge_type() == tally::dtype::f64
                  ? ""
                  : ", " + std::string(tally::name_of(a.edge_type())) + " edges");
    case tally::axis_kind::variable:
      return "variable [" + lo + ", " + hi + "], " + bins;
    case tally::axis_kind::integer:
      return "integer [" + lo + ", " + hi + "), " + bins;
  }
  return bins;
}

/// `dropped` says what the samples in no bin are, where the bins say it (named bins).
void counts_line(std::ostream& out, const tally::histogram& h, bool show_flow, const std::string& dropped = "") {
  const tally::flow_counts f = h.flow();
  out << "  samples " << h.samples() << "   in bins " << h.samples() - f.total() << "   dropped "
      << f.total();
  if (!dropped.empty() || show_flow) {
    out << " (" << dropped << (!dropped.empty() && show_flow ? "; " : "");
    if (show_flow) out << "underflow " << f.underflow << ", overflow " << f.overflow << ", nan " << f.nan;
    out << ")";
  }
  if (h.weighted()) {
    double sum = 0;
    for (double v : h.sums()) sum += v;
    out << "   sum of weights in bins " << sig(sum, 10);
  }
  out << "\n";
}

void column_lines(std::ostream& out, const hist_result& r, int c) {
  const extrema& b = r.bounds[c];
  if (b.any)
    out << "  min " << to_text(b.lo) << "   max " << to_text(b.hi) << "   (exact)\n";
  else
    out << "  min -   max -   ("
        << (r.hist_of(c).samples() == 0 ? "no values" : "no values other than NaN") << ")\n";
  const tally::axis& a = r.axis_of(c);
  const estimate e = estimate_of(value_edges(a, r.input.type), r.values_of(c));
  if (!(e.total > 0)) {
    out << "  (nothing in the bins to estimate from)\n";
    return;
  }
  out << "  mean " << sig(e.mean) << "   std " << sig(e.stddev)
      << "   (estimated from bin centres)\n  ";
  for (std::size_t q = 0; q < kQuantiles.size(); ++q) {
    // Interpolated in a bin, an estimate may pass the data's exact extremes: kept within them.
    const double v = b.any ? std::clamp(e.quantiles[q], to_double(b.lo), to_double(b.hi)) : e.quantiles[q];
    out << "p" << sig(kQuantiles[q] * 100) << " " << sig(v) << "   ";
  }
  out << "(estimated, interpolated in bins)\n";
}

}  // namespace

std::string report(const hist_result& r, bool bars) {
  std::ostringstream out;
  const source_info& in = r.input;
  out << "file     " << in.path << "\n"
      << "format   " << in.format << ", " << in.layout << "\n"
      << "dtype    " << tally::name_of(in.type) << "\n";
  if (!r.weights_path.empty()) out << "weights  " << r.weights_path << "\n";

  if (r.mode == layout_mode::nd) {
    const tally::histogram& h = r.hists.front();
    out << "\nN-D histogram, " << r.columns() << " axes, " << h.size() << " cells\n";
    counts_line(out, h, r.show_flow);
    for (int c = 0; c < r.columns(); ++c) {
      out << "axis " << c << ": " << describe_axis(r.axis_of(c)) << " (marginal)\n";
      column_lines(out, r, c);
    }
    if (bars) out << nd_chart(h);
    return out.str();
  }
  if (r.named) {  // one histogram of named bins: no numeric summary of their byte codes
    out << "\nhistogram: " << r.named->title << "; byte codes " << describe_axis(r.axis_of(0)) << "\n";
    counts_line(out, r.hist_of(0), r.show_flow, r.named->dropped);
    if (bars) out << bar_chart(r.axis_of(0), r.values_of(0), r.weighted(), r.named->labels);
    return out.str();
  }
  for (int c = 0; c < r.columns(); ++c) {
    out << "\n";
    out << (r.mode == layout_mode::channels ? "channel " + r.names[c] : std::string("histogram"))
        << ": " << describe_axis(r.axis_of(c)) << "\n";
    counts_line(out, r.hist_of(c), r.show_flow);
    column_lines(out, r, c);
    if (bars) out << bar_chart(r.axis_of(c), r.values_of(c), r.weighted());
  }
  return out.str();
}

}  // namespace tally_cli
