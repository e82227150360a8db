// From a finished run to what a plot shows: merged bars per channel or a 2-D heat map.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "format.hpp"
#include "plot.hpp"

namespace tally_cli {
namespace {

rgb color_for(const std::string& name, int index) {
  if (name == "R") return {214, 39, 40};
  if (name == "G") return {44, 160, 44};
  if (name == "B") return {31, 119, 180};
  if (name == "A") return {127, 127, 127};
  if (name == "L" || name == "gray") return {70, 70, 70};
  static const rgb palette[] = {{31, 119, 180},  {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
                                {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {23, 190, 207}};
  return palette[index % 8];
}

/// Bars never need to be finer than a pixel (the plot area of the default margins).
constexpr std::int64_t kMaxBars = frame::width - 80 - 20;
constexpr std::int64_t kMaxHeatCells = 200;

/// Each value over `total` and its bin's width (numpy's density; a total of 0 leaves zeros).
void to_density(merged_bins& b, double total) {
  for (std::size_t k = 0; k < b.values.size(); ++k) {
    const double width = b.edges[k + 1] - b.edges[k];
    b.values[k] = total > 0 && width > 0 ? b.values[k] / total / width : 0.0;
  }
}

/// Light to dark blue: a sequential map that prints well in gray (NaN: the lightest, as 0 / 0
/// for a fraction of an empty map's fullest cell).
rgb blues(double fraction) {
  const double t = fraction > 0 ? std::min(fraction, 1.0) : 0.0;
  auto mix = [t](double from, double to) {
    return static_cast<unsigned char>(from + (to - from) * t);
  };
  return {mix(222, 8), mix(235, 48), mix(247, 107)};
}

/// Tick labels: whole numbers below ten million in full (10000, not 1e+04), other values with
/// as many significant digits as keep neighbours apart.
std::vector<tick> labelled(const std::vector<double>& values) {
  const int digits = distinct_digits(values);
  std::vector<tick> ticks;
  for (const double v : values)
    ticks.push_back({v, v == std::round(v) && std::fabs(v) < 1e7 ? sig(v, 7) : sig(v, digits)});
  return ticks;
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  const double raw = (hi - lo) / target;
  if (!(raw > 0) || !std::isfinite(raw)) return {lo};
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {2.0, 5.0, 10.0})
    if (raw > step) step = m * power;
  std::vector<double> ticks;
  const double first = std::ceil(lo / step);
  // A step is 1, 2 or 5 times raw at most, so a few more than `target` ticks at most.
  for (int i = 0; i <= 2 * target + 1; ++i) {
    const double t = (first + i) * step;
    if (t > hi + std::fabs(hi) * 1e-12) break;
    if (!ticks.empty() && t == ticks.back()) break;  // the step is below lo's resolution
    ticks.push_back(t == 0 ? 0.0 : t);               // no "-0"
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  if (!(lo > 0) || !(hi >= lo) || !std::isfinite(hi)) return {lo};
  const bool fine = hi / lo < 100;
  const int first = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
  const int stride = std::max(1, (last - first + 8) / 8);  // at most 8 powers of ten
  std::vector<double> ticks;
  for (int e = first - 1; e <= last; ++e) {
    if (!fine && e % stride != 0) continue;
    const double decade = std::pow(10.0, e);
    for (const double k : {1.0, 2.0, 5.0}) {
      const double t = decade * k;
      if ((k == 1.0 || fine) && t >= lo * (1 - 1e-12) && t <= hi * (1 + 1e-12)) ticks.push_back(t);
    }
  }
  if (ticks.empty()) {
    ticks.push_back(lo);
    if (hi > lo) ticks.push_back(hi);
  }
  return ticks;
}

std::vector<tick> x_ticks(const plot_model& m) {
  return m.x_names.empty() ? labelled(nice_ticks(m.x_lo, m.x_hi)) : m.x_names;
}

std::vector<tick> y_ticks(const plot_model& m) {
  return labelled(m.log_y ? log_ticks(m.y_lo, m.y_hi) : nice_ticks(m.y_lo, m.y_hi));
}

colour_scale colour_scale_of(const plot_model& m) {
  if (m.log_heat && m.heat_min > 0) return {m.heat_min, m.heat_max, true};
  return {0.0, m.heat_max > 0 ? m.heat_max : 1.0, false};
}

std::vector<tick> colour_ticks(const plot_model& m) {
  if (!m.heat) return {};
  const colour_scale s = colour_scale_of(m);
  return labelled(s.log ? log_ticks(s.lo, s.hi) : nice_ticks(s.lo, s.hi, 5));
}

rgb heat_color(const plot_model& m, double v) {
  // log: the lightest colour a decade below the least nonzero cell, so that one still shows.
  if (m.log_heat && m.heat_min > 0)
    return blues((1 + std::log10(v / m.heat_min)) / (1 + std::log10(m.heat_max / m.heat_min)));
  return blues(v / m.heat_max);
}

std::vector<heat_cell> heat_cells(const plot_model& m, const frame& f) {
  std::vector<heat_cell> out;
  if (!m.heat) return out;
  const merged_grid& g = *m.heat;
  const std::size_t ncols = g.cols.values.size();
  for (std::size_t i = 0; i < g.rows.values.size(); ++i)
    for (std::size_t j = 0; j < ncols; ++j) {
      const double v = g.cells[i * ncols + j];
      if (v > 0)
        out.push_back({f.px(g.rows.edges[i]), f.py(g.cols.edges[j + 1]), f.px(g.rows.edges[i + 1]),
                       f.py(g.cols.edges[j]), v, heat_color(m, v)});
    }
  return out;
}

std::vector<std::string> plot_texts(const plot_model& m) {
  std::vector<std::string> texts = {m.title, m.x_label, m.y_label};
  for (const tick& t : x_ticks(m)) texts.push_back(t.label);
  for (const tick& t : y_ticks(m)) texts.push_back(t.label);
  if (has_legend(m))
    for (const plot_series& s : m.series) texts.push_back(s.name);
  for (const tick& t : colour_ticks(m)) texts.push_back(t.label);
  texts.erase(std::remove(texts.begin(), texts.end(), std::string()), texts.end());
  return texts;
}

/// The model with tally's own title and labels.
static plot_model make_default_model(const hist_result& r, const plot_options& options) {
  plot_model m;
  const std::string file = std::filesystem::path(r.input.path).filename().string();
  m.title = file + " (" + std::string(tally::name_of(r.input.type)) + ")";
  const std::string value = options.density ? "density" : r.weighted() ? "sum of weights" : "count";

  if (r.mode == layout_mode::nd) {
    const tally::histogram& h = r.hists.front();
    m.heat = merge_2d(h, kMaxHeatCells, kMaxHeatCells);
    if (options.density) {  // over the in-range total and each cell's area
      double total = 0;
      for (const double v : m.heat->cells) total += v;
      const std::size_t ncols = m.heat->cols.values.size();
      for (std::size_t i = 0; i < m.heat->rows.values.size(); ++i)
        for (std::size_t j = 0; j < ncols; ++j) {
          const double area = (m.heat->rows.edges[i + 1] - m.heat->rows.edges[i]) *
                              (m.heat->cols.edges[j + 1] - m.heat->cols.edges[j]);
          double& v = m.heat->cells[i * ncols + j];
          v = total > 0 && area > 0 ? v / total / area : 0.0;
        }
    }
    m.log_heat = options.log;
    m.heat_max = std::max(0.0, *std::max_element(m.heat->cells.begin(), m.heat->cells.end()));
    m.heat_min = m.heat_max;
    for (const double v : m.heat->cells)
      if (v > 0) m.heat_min = std::min(m.heat_min, v);
    m.x_lo = h.axes()[0].lo();
    m.x_hi = h.axes()[0].hi();
    m.y_lo = h.axes()[1].lo();
    m.y_hi = h.axes()[1].hi();
    m.x_label = r.names[0];
    m.y_label = r.names[1];
    m.title += ", " + value + " per cell" + (options.log ? " (log colours)" : "") + ", darkest " +
               (options.density ? sig(m.heat_max, 4) : value_text(m.heat_max, r.weighted())) +
               (r.columns() > 2 ? " summed over axes 2.." + std::to_string(r.columns() - 1) : "");
    return m;
  }

  m.x_lo = r.axis_of(0).lo();
  m.x_hi = r.axis_of(0).hi();
  double top = 0;
  std::int64_t group = 1;
  for (int c = 0; c < r.columns(); ++c) {
    const tally::axis& a = r.axis_of(c);
    plot_series s{r.names[c], color_for(r.names[c], c), merge(a.edges(), r.values_of(c), kMaxBars)};
    if (options.density) {
      double total = 0;
      for (const double v : s.bins.values) total += v;
      to_density(s.bins, total);
    }
    m.x_lo = std::min(m.x_lo, a.lo());
    m.x_hi = std::max(m.x_hi, a.hi());
    for (double v : s.bins.values) top = std::max(top, v);
    group = std::max(group, s.bins.group);
    m.series.push_back(std::move(s));
  }
  if (group > 1) m.title += ", up to " + std::to_string(group) + " bins per bar";
  m.y_hi = top > 0 ? top * 1.05 : 1;
  if (options.log) {  // from a power of ten at least half a decade below the least bar drawn
    double least = top;
    for (const plot_series& s : m.series)
      for (const double v : s.bins.values)
        if (v > 0) least = std::min(least, v);
    m.log_y = top > 0;
    if (m.log_y) {
      m.y_lo = std::pow(10.0, std::floor(std::log10(least) - 0.5));  // the least bar stands out
      m.y_hi = top * 1.5;
    }
  }
  m.x_label = "value";
  if (r.named) {
    const tally::axis& a = r.axis_of(0);
    for (std::int64_t k = 0; k < a.bins(); ++k)
      m.x_names.push_back({(a.edge(k) + a.edge(k + 1)) / 2, r.named->labels[k]});
    m.x_label = r.named->unit;
  }
  m.y_label = value;
  return m;
}

plot_model make_plot_model(const hist_result& r, const plot_options& options) {
  plot_model m = make_default_model(r, options);
  if (!options.title.empty()) m.title = options.title;
  if (!options.x_label.empty()) m.x_label = options.x_label;
  if (!options.y_label.empty()) m.y_label = options.y_label;
  return m;
}

}  // namespace tally_cli
