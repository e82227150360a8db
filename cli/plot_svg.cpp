// The SVG plot, written by hand: bars as filled step outlines or heat-map cells, with axes,
// tick values, axis labels, a title and a legend.
#include <sstream>

#include "format.hpp"
#include "plot.hpp"

namespace tally_cli {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string color(rgb c) {
  return "rgb(" + std::to_string(c.r) + "," + std::to_string(c.g) + "," + std::to_string(c.b) + ")";
}

std::string num(double v) { return sig(v, 6); }

void series_path(std::ostream& out, const frame& f, const plot_series& s, double opacity) {
  const std::string base = num(f.py(0));
  out << "<path d=\"M" << num(f.px(s.bins.edges.front())) << " " << base;
  for (std::size_t k = 0; k < s.bins.values.size(); ++k) {
    const std::string y = num(f.py(std::max(0.0, s.bins.values[k])));
    out << " L" << num(f.px(s.bins.edges[k])) << " " << y << " L" << num(f.px(s.bins.edges[k + 1]))
        << " " << y;
  }
  out << " L" << num(f.px(s.bins.edges.back())) << " " << base << " Z\" fill=\"" << color(s.color)
      << "\" fill-opacity=\"" << opacity << "\" stroke=\"" << color(s.color)
      << "\" stroke-width=\"1\"/>\n";
}

void draw_heat(std::ostream& out, const frame& f, const plot_model& m) {
  for (const heat_cell& c : heat_cells(m, f))
    out << "<rect x=\"" << num(c.x0) << "\" y=\"" << num(c.y0) << "\" width=\"" << num(c.x1 - c.x0)
        << "\" height=\"" << num(c.y1 - c.y0) << "\" fill=\"" << color(c.color) << "\"><title>"
        << num(c.value) << "</title></rect>\n";
}

}  // namespace

std::string render_svg(const plot_model& m) {
  const frame f{m.x_lo, m.x_hi, m.y_lo, m.y_hi, m.log_y};
  const int x_end = frame::width - frame::right, y_base = frame::height - frame::bottom;
  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << frame::width << "\" height=\""
      << frame::height << "\" viewBox=\"0 0 " << frame::width << " " << frame::height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << frame::width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">"
      << escape(m.title) << "</text>\n";

  const int x_digits = distinct_digits(nice_ticks(m.x_lo, m.x_hi));
  for (double t : y_ticks(m)) {
    const std::string y = num(f.py(t));
    out << "<line x1=\"" << frame::left << "\" y1=\"" << y << "\" x2=\"" << x_end << "\" y2=\"" << y
        << "\" stroke=\"#e1e1e1\"/>\n<text x=\"" << frame::left - 8 << "\" y=\"" << y
        << "\" text-anchor=\"end\" dominant-baseline=\"middle\">" << num(t) << "</text>\n";
  }
  for (double t : nice_ticks(m.x_lo, m.x_hi)) {
    const std::string x = num(f.px(t));
    out << "<line x1=\"" << x << "\" y1=\"" << y_base << "\" x2=\"" << x << "\" y2=\"" << y_base + 5
        << "\" stroke=\"black\"/>\n<text x=\"" << x << "\" y=\"" << y_base + 18
        << "\" text-anchor=\"middle\">" << sig(t, x_digits) << "</text>\n";
  }

  draw_heat(out, f, m);
  const double opacity = m.series.size() > 1 ? 0.35 : 0.7;
  for (const plot_series& s : m.series) series_path(out, f, s, opacity);

  out << "<line x1=\"" << frame::left << "\" y1=\"" << frame::top << "\" x2=\"" << frame::left
      << "\" y2=\"" << y_base << "\" stroke=\"black\"/>\n"
      << "<line x1=\"" << frame::left << "\" y1=\"" << y_base << "\" x2=\"" << x_end << "\" y2=\""
      << y_base << "\" stroke=\"black\"/>\n"
      << "<text x=\"" << (frame::left + x_end) / 2 << "\" y=\"" << frame::height - 15
      << "\" text-anchor=\"middle\">" << escape(m.x_label) << "</text>\n"
      << "<text transform=\"translate(18," << (frame::top + y_base) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(m.y_label) << "</text>\n";
  if (m.series.size() > 1) {
    // In the top margin, right-aligned, so the legend never covers bars.
    const int item = 56;
    for (std::size_t k = 0; k < m.series.size(); ++k) {
      const int x = x_end - item * static_cast<int>(m.series.size() - k);
      out << "<rect x=\"" << x << "\" y=\"10\" width=\"12\" height=\"12\" fill=\""
          << color(m.series[k].color) << "\"/><text x=\"" << x + 16 << "\" y=\"20\">"
          << escape(m.series[k].name) << "</text>\n";
    }
  }
  out << "</svg>\n";
  return out.str();
}

}  // namespace tally_cli
