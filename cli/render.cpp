// Terminal charts drawn with unicode block characters, eighth-of-a-cell resolution.
#include "render.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "format.hpp"

namespace tally_cli {
namespace {

/// Partial blocks, one to seven eighths of a cell wide.
constexpr const char* kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
constexpr const char* kFull = "█";

std::string bar(double value, double max, int width) {
  if (!(value > 0) || !(max > 0)) return std::string(width, ' ');
  // A nonzero bin always shows at least a sliver, so it is not mistaken for an empty one.
  const int eighths = std::max(1, static_cast<int>(std::lround(value / max * width * 8)));
  std::string out;
  for (int k = 0; k < eighths / 8; ++k) out += kFull;
  out += kEighths[eighths % 8];
  const int cells = eighths / 8 + (eighths % 8 ? 1 : 0);
  return out + std::string(width - cells, ' ');
}

std::size_t widest(const std::vector<std::string>& texts) {
  std::size_t w = 0;
  for (const auto& t : texts) w = std::max(w, t.size());
  return w;
}

/// One label per merged bin: "[lo, hi)" (the last one closed), or for integer axes the integers
/// "k" / "a..b", computed from the axis in int64 (the double edges lose integers past 2^53).
std::vector<std::string> range_labels(const merged_bins& m, const tally::axis& a) {
  std::vector<std::string> labels;
  const std::size_t n = m.values.size();
  const int digits = distinct_digits(m.edges);
  for (std::size_t k = 0; k < n; ++k) {
    if (a.kind() == tally::axis_kind::integer) {
      const std::int64_t first = static_cast<std::int64_t>(k) * m.group;
      const std::int64_t last = std::min(first + m.group, a.bins()) - 1;
      labels.push_back(last > first ? edge_text(a, first) + ".." + edge_text(a, last)
                                    : edge_text(a, first));
    } else {
      labels.push_back("[" + sig(m.edges[k], digits) + ", " + sig(m.edges[k + 1], digits) +
                       (k + 1 == n ? "]" : ")"));
    }
  }
  return labels;
}

}  // namespace

std::string bar_chart(const tally::axis& a, const std::vector<double>& values, bool weighted,
                      const std::vector<std::string>& names, int max_lines, int width) {
  const merged_bins m = merge(a.edges(), values, max_lines);
  const std::vector<std::string> labels =
      m.group == 1 && names.size() == values.size() ? names : range_labels(m, a);
  std::vector<std::string> texts;
  for (double v : m.values) texts.push_back(value_text(v, weighted));
  const double max = *std::max_element(m.values.begin(), m.values.end());
  const std::size_t label_w = widest(labels), text_w = widest(texts);

  std::ostringstream out;
  if (m.group > 1) out << "  (" << m.group << " bins per line)\n";
  for (std::size_t k = 0; k < m.values.size(); ++k)
    out << "  " << pad_right(labels[k], label_w) << " │" << bar(m.values[k], max, width) << " "
        << pad_left(texts[k], text_w) << "\n";
  return out.str();
}

namespace {

/// Rows are axis 0, columns axis 1. Columns are headed by their lower edge only, which keeps
/// the table narrow; the line above it says where the last column ends.
std::string table_2d(const tally::histogram& h) {
  const merged_grid g = merge_2d(h, 16, 8);
  const std::vector<std::string> row_labels = range_labels(g.rows, h.axes()[0]);
  const int col_digits = distinct_digits(g.cols.edges);
  std::vector<std::string> col_labels;
  for (std::size_t c = 0; c < g.cols.values.size(); ++c)
    col_labels.push_back(sig(g.cols.edges[c], col_digits));
  std::vector<std::string> texts;
  for (double c : g.cells) texts.push_back(value_text(c, h.weighted()));
  const std::size_t row_w = std::max<std::size_t>(widest(row_labels), 6);
  const std::size_t col_w = std::max(widest(col_labels), widest(texts)) + 2;

  std::ostringstream out;
  out << "  rows: axis 0; columns: axis 1 from these lower edges up to "
      << sig(g.cols.edges.back(), col_digits) << "\n";
  out << "  " << pad_right("", row_w);
  for (const auto& l : col_labels) out << pad_left(l, col_w);
  out << "\n";
  for (std::size_t r = 0; r < row_labels.size(); ++r) {
    out << "  " << pad_right(row_labels[r], row_w);
    for (std::size_t c = 0; c < col_labels.size(); ++c)
      out << pad_left(texts[r * col_labels.size() + c], col_w);
    out << "\n";
  }
  return out.str();
}

std::string nonzero_cells(const tally::histogram& h, int max_lines) {
  const std::vector<double> values = h.values();
  const std::vector<std::int64_t> shape = h.shape();
  std::ostringstream out;
  int shown = 0;
  std::int64_t more = 0;
  for (std::int64_t cell = 0; cell < static_cast<std::int64_t>(values.size()); ++cell) {
    if (values[cell] == 0) continue;
    if (shown == max_lines) {
      ++more;
      continue;
    }
    // Row-major: peel the last axis off first.
    std::vector<std::int64_t> index(shape.size());
    for (std::int64_t d = static_cast<std::int64_t>(shape.size()) - 1, rest = cell; d >= 0; --d) {
      index[d] = rest % shape[d];
      rest /= shape[d];
    }
    out << "  (";
    for (std::size_t d = 0; d < index.size(); ++d) {
      const tally::axis& a = h.axes()[d];
      out << (d ? ") x [" : "[") << sig(a.edge(index[d])) << ", " << sig(a.edge(index[d] + 1));
    }
    out << "))  " << value_text(values[cell], h.weighted()) << "\n";
    ++shown;
  }
  if (shown == 0) out << "  (all cells are empty)\n";
  if (more) out << "  ... and " << more << " more nonzero cells\n";
  return out.str();
}

}  // namespace

std::string nd_chart(const tally::histogram& h, int max_lines) {
  return h.axes().size() == 2 ? table_2d(h) : nonzero_cells(h, max_lines);
}

}  // namespace tally_cli
