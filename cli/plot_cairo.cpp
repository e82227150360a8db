// The plot, drawn with cairo: the same calls on an SVG surface (vectors, glyphs as outlines) or
// on an image surface written as PNG. Bars as filled step outlines, or heat-map cells with a
// colour bar; axes with tick labels, axis labels, a title, and a legend for several series.
// Text goes through cairo's toy API in the "sans-serif" face (fontconfig picks the font).
#include <cairo-svg.h>
#include <cairo.h>
#if TALLY_CLI_FONTCONFIG
#include <fontconfig/fontconfig.h>
#endif

#include <algorithm>
#include <cmath>
#include <memory>
#include <new>

#include "errors.hpp"
#include "plot.hpp"

namespace tally_cli {
namespace {

// Font sizes, in pixels.
constexpr double kTitleSize = 16, kLabelSize = 13, kTickSize = 11, kLegendSize = 12;
// A long title or axis label shrinks down to these sizes, then takes two lines.
constexpr double kMinTitleSize = 11, kMinLabelSize = 10;
constexpr double kInk = 0.1;        // text and axes: near black
constexpr double kTickLength = 5;
constexpr double kColourBarWidth = 16, kColourBarGap = 18;
constexpr double kSwatch = 12;  // a legend entry's colour box

struct surface_deleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct context_deleter {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};
struct options_deleter {
  void operator()(cairo_font_options_t* o) const { cairo_font_options_destroy(o); }
};
using surface_ptr = std::unique_ptr<cairo_surface_t, surface_deleter>;
using context_ptr = std::unique_ptr<cairo_t, context_deleter>;

void check(cairo_status_t status) {
  if (status != CAIRO_STATUS_SUCCESS)
    throw failure(std::string("--plot: cairo cannot draw the plot: ") + cairo_status_to_string(status));
}

/// A context on `surface` with the face and font options every text is drawn (and measured) with:
/// metrics unhinted, so text is as wide on the PNG as on the SVG.
context_ptr make_context(cairo_surface_t* surface) {
  context_ptr cr(cairo_create(surface));
  check(cairo_status(cr.get()));
  cairo_select_font_face(cr.get(), "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  std::unique_ptr<cairo_font_options_t, options_deleter> options(cairo_font_options_create());
  cairo_font_options_set_hint_metrics(options.get(), CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_hint_style(options.get(), CAIRO_HINT_STYLE_SLIGHT);
  cairo_set_font_options(cr.get(), options.get());
  return cr;
}

double text_width(cairo_t* cr, double size, const std::string& s) {
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  return e.x_advance;
}

double widest(cairo_t* cr, double size, const std::vector<tick>& ticks) {
  double w = 0;
  for (const tick& t : ticks) w = std::max(w, text_width(cr, size, t.label));
  return w;
}

/// `size`, or smaller so that `s` fits in `room`.
double fitting_size(cairo_t* cr, double size, const std::string& s, double room) {
  const double w = text_width(cr, size, s);
  return w > room && w > 0 ? size * room / w : size;
}

/// A text in one or two lines of one size.
struct block {
  std::vector<std::string> lines;
  double size = 0;
  double line_height() const { return 1.2 * size; }
  double extra() const { return line_height() * (lines.size() - 1); }  // beyond one line
  double width(cairo_t* cr) const {
    double w = 0;
    for (const std::string& line : lines) w = std::max(w, text_width(cr, size, line));
    return w;
  }
};

/// `s` at `size` where it fits in `room`, else smaller down to `least`; then in two lines broken
/// at the space that makes the longer one shortest; where no break fits either, in one line as
/// small as it must be. Every character is drawn, inside the picture.
block wrap(cairo_t* cr, const std::string& s, double size, double least, double room) {
  block one{{s}, fitting_size(cr, size, s, room)};
  if (one.size >= least) return one;
  double best = 0;
  std::size_t at = std::string::npos;
  for (std::size_t k = s.find(' '); k != std::string::npos; k = s.find(' ', k + 1)) {
    const double w = std::max(text_width(cr, size, s.substr(0, k)), text_width(cr, size, s.substr(k + 1)));
    if (at == std::string::npos || w < best) best = w, at = k;
  }
  if (at == std::string::npos || size * room / best < least) return one;
  return {{s.substr(0, at), s.substr(at + 1)}, std::min(size, size * room / best)};
}

/// Where the texts around the plot area go; the frame's margins leave room for them.
struct layout {
  frame f;
  block title, x_label, y_label;
  double title_x = 0, title_y = 26;  // the centre of the title's lines, the first one's baseline
  double x_label_x = 0, x_label_y = 0;
  double y_label_x = 0;  // the rotated y label's first baseline
  struct place {
    double x, y;  // the left of its colour box, the baseline of its name
  };
  std::vector<place> legend;  // an entry a series, where has_legend
};

double entry_width(cairo_t* cr, const plot_series& s) {
  return kSwatch + 4 + text_width(cr, kLegendSize, s.name);
}
constexpr double kEntryGap = 14, kLegendLine = 18;

/// The legend's entries in rows no wider than `row` (each a row at least), in order.
std::vector<std::vector<std::size_t>> legend_rows(cairo_t* cr, const plot_model& m, double row) {
  std::vector<std::vector<std::size_t>> rows;
  double used = 0;
  for (std::size_t k = 0; k < m.series.size(); ++k) {
    const double w = entry_width(cr, m.series[k]);
    if (rows.empty() || used + kEntryGap + w > row) {
      rows.emplace_back();
      used = w;
    } else {
      used += kEntryGap + w;
    }
    rows.back().push_back(k);
  }
  return rows;
}

/// The centre of a text `w` wide: `centre`, or nearer the middle so that it stays inside.
double inside(double centre, double w) {
  return std::clamp(centre, 8 + w / 2, std::max(8 + w / 2, frame::width - 8 - w / 2));
}

layout layout_of(cairo_t* cr, const plot_model& m) {
  layout l;
  frame& f = l.f;
  f.x_lo = m.x_lo, f.x_hi = m.x_hi, f.y_lo = m.y_lo, f.y_hi = m.y_hi, f.log_y = m.log_y;
  const double room = frame::width - 16;

  // Right: room for the last x tick label's half, or the colour bar and its labels.
  const std::vector<tick> xt = x_ticks(m);
  f.right = xt.empty() ? 20.0 : std::max(20.0, std::ceil(text_width(cr, kTickSize, xt.back().label) / 2 + 6));
  if (m.heat)
    f.right = std::ceil(kColourBarGap + kColourBarWidth + 3 + widest(cr, kTickSize, colour_ticks(m)) + 10);
  // Bottom: the x tick labels, then the x label, its last line 12 pixels above the edge.
  l.x_label = wrap(cr, m.x_label, kLabelSize, kMinLabelSize, room);
  f.bottom = 56 + std::ceil(l.x_label.extra());
  l.x_label_y = frame::height - 12 - l.x_label.extra();
  // Top: the title; the legend at the right end of its line where they fit side by side, else
  // in right-aligned rows below it.
  l.title = wrap(cr, m.title, kTitleSize, kMinTitleSize, room);
  const double title_w = l.title.width(cr);
  const double last_line = l.title_y + l.title.extra();
  f.top = last_line + 16;
  double title_right = frame::width;  // the title ends left of this
  if (has_legend(m)) {
    const auto rows = legend_rows(cr, m, f.x_end() - 60);
    double w = 0;  // of the first row
    for (const std::size_t k : rows.front()) w += entry_width(cr, m.series[k]) + kEntryGap;
    const bool beside = rows.size() == 1 && l.title.lines.size() == 1 && 8 + title_w + 16 + w - kEntryGap <= f.x_end();
    if (beside) title_right = f.x_end() - (w - kEntryGap) - 16;
    double y = beside ? last_line : last_line + 20;
    l.legend.resize(m.series.size());
    for (const auto& row : rows) {
      double x = f.x_end() + kEntryGap;
      for (const std::size_t k : row) x -= entry_width(cr, m.series[k]) + kEntryGap;
      for (const std::size_t k : row) {
        l.legend[k] = {x, y};
        x += entry_width(cr, m.series[k]) + kEntryGap;
      }
      y += kLegendLine;
    }
    f.top = y - kLegendLine + 16;
  }
  // Left: the rotated y label (as long as the plot area is high, and a little), then the y tick
  // labels, right-aligned, then the tick marks.
  l.y_label = wrap(cr, m.y_label, kLabelSize, kMinLabelSize, f.y_base() - f.top + 30);
  l.y_label_x = 6 + 0.95 * l.y_label.size;
  f.left = std::max(60.0, std::ceil(l.y_label_x + l.y_label.extra() + 0.25 * l.y_label.size + 10 +
                                    widest(cr, kTickSize, y_ticks(m)) + 3 + kTickLength));

  // The title centred over the plot area, or left of the legend beside it.
  l.title_x = inside(std::min((f.left + f.x_end()) / 2, title_right - title_w / 2), title_w);
  l.x_label_x = inside((f.left + f.x_end()) / 2, l.x_label.width(cr));
  return l;
}

void set_rgb(cairo_t* cr, rgb c, double alpha = 1.0) {
  cairo_set_source_rgba(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0, alpha);
}
void set_ink(cairo_t* cr) { cairo_set_source_rgb(cr, kInk, kInk, kInk); }

/// A 1-pixel line on the pixel grid (crisp in the PNG): horizontal at y or vertical at x.
void hline(cairo_t* cr, double x0, double x1, double y) {
  const double py = std::floor(y) + 0.5;
  cairo_move_to(cr, x0, py);
  cairo_line_to(cr, x1, py);
  cairo_stroke(cr);
}
void vline(cairo_t* cr, double x, double y0, double y1) {
  const double px = std::floor(x) + 0.5;
  cairo_move_to(cr, px, y0);
  cairo_line_to(cr, px, y1);
  cairo_stroke(cr);
}

enum class align { left, centre, right };

/// `s` at baseline y: x is its left end, centre or right end.
void text_at(cairo_t* cr, double size, const std::string& s, double x, double y, align a) {
  if (s.empty()) return;
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  const double dx = a == align::left ? 0 : a == align::centre ? -e.x_advance / 2 : -e.x_advance;
  cairo_move_to(cr, x + dx, y);
  cairo_show_text(cr, s.c_str());
}

/// The lines of `b`, each centred on x, the first one's baseline at y.
void draw_block(cairo_t* cr, const block& b, double x, double y) {
  for (std::size_t k = 0; k < b.lines.size(); ++k)
    text_at(cr, b.size, b.lines[k], x, y + b.line_height() * k, align::centre);
}

/// Tick labels are centred on their tick by the height of a digit, so every label sits alike.
double digit_middle(cairo_t* cr, double size) {
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, "0", &e);
  return e.y_bearing + e.height / 2;  // negative: above the baseline
}

void draw_series(cairo_t* cr, const frame& f, const plot_series& s, double alpha) {
  const double base = f.py(0);
  cairo_move_to(cr, f.px(s.bins.edges.front()), base);
  for (std::size_t k = 0; k < s.bins.values.size(); ++k) {
    const double y = f.py(std::max(0.0, s.bins.values[k]));
    cairo_line_to(cr, f.px(s.bins.edges[k]), y);
    cairo_line_to(cr, f.px(s.bins.edges[k + 1]), y);
  }
  cairo_line_to(cr, f.px(s.bins.edges.back()), base);
  cairo_close_path(cr);
  set_rgb(cr, s.color, alpha);
  cairo_fill_preserve(cr);
  set_rgb(cr, s.color);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
}

void draw_heat(cairo_t* cr, const frame& f, const plot_model& m) {
  // Cells on whole pixels: neighbours meet without a seam of blended edges.
  for (const heat_cell& c : heat_cells(m, f)) {
    const double x0 = std::round(c.x0), y0 = std::round(c.y0);
    cairo_rectangle(cr, x0, y0, std::max(1.0, std::round(c.x1) - x0), std::max(1.0, std::round(c.y1) - y0));
    set_rgb(cr, c.color);
    cairo_fill(cr);
  }
}

void draw_colour_bar(cairo_t* cr, const frame& f, const plot_model& m) {
  const colour_scale s = colour_scale_of(m);
  const double x = f.x_end() + kColourBarGap, top = f.top, bottom = f.y_base();
  // Colours are linear in the bar's position (in the value, or in its log), so two stops draw it.
  cairo_pattern_t* gradient = cairo_pattern_create_linear(0, bottom, 0, top);
  const rgb lo = heat_color(m, s.lo), hi = heat_color(m, s.hi);
  cairo_pattern_add_color_stop_rgb(gradient, 0, lo.r / 255.0, lo.g / 255.0, lo.b / 255.0);
  cairo_pattern_add_color_stop_rgb(gradient, 1, hi.r / 255.0, hi.g / 255.0, hi.b / 255.0);
  cairo_rectangle(cr, x, top, kColourBarWidth, bottom - top);
  cairo_set_source(cr, gradient);
  cairo_fill(cr);
  cairo_pattern_destroy(gradient);
  set_ink(cr);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, x + 0.5, std::floor(top) + 0.5, kColourBarWidth - 1, std::floor(bottom) - std::floor(top));
  cairo_stroke(cr);
  const double middle = digit_middle(cr, kTickSize);
  for (const tick& t : colour_ticks(m)) {
    const double y = bottom - std::clamp(s.at(t.value), 0.0, 1.0) * (bottom - top);
    hline(cr, x + kColourBarWidth, x + kColourBarWidth + 3, y);
    text_at(cr, kTickSize, t.label, x + kColourBarWidth + 6, y - middle, align::left);
  }
}

void draw(cairo_t* cr, const plot_model& m, const layout& l) {
  const frame& f = l.f;
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_set_line_width(cr, 1);

  const std::vector<tick> xt = x_ticks(m), yt = y_ticks(m);
  if (!m.heat) {  // grid lines under the bars
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    for (const tick& t : yt) hline(cr, f.left, f.x_end(), f.py(t.value));
  }

  cairo_save(cr);
  cairo_rectangle(cr, f.left, f.top, f.x_end() - f.left, f.y_base() - f.top);
  cairo_clip(cr);
  if (m.heat) draw_heat(cr, f, m);
  const double alpha = m.series.size() > 1 ? 0.35 : 0.7;
  for (const plot_series& s : m.series) draw_series(cr, f, s, alpha);
  cairo_restore(cr);

  set_ink(cr);
  cairo_set_line_width(cr, 1);
  vline(cr, f.left, f.top, f.y_base() + 1);
  hline(cr, f.left, f.x_end(), f.y_base());
  const double middle = digit_middle(cr, kTickSize);
  for (const tick& t : yt) {
    const double y = f.py(t.value);
    hline(cr, f.left - kTickLength, f.left, y);
    text_at(cr, kTickSize, t.label, f.left - kTickLength - 3, y - middle, align::right);
  }
  for (const tick& t : xt) {
    const double x = f.px(t.value);
    vline(cr, x, f.y_base(), f.y_base() + kTickLength);
    text_at(cr, kTickSize, t.label, x, f.y_base() + kTickLength + 4 + kTickSize * 0.75, align::centre);
  }

  draw_block(cr, l.x_label, l.x_label_x, l.x_label_y);
  cairo_save(cr);
  cairo_translate(cr, l.y_label_x, (f.top + f.y_base()) / 2);
  // A quarter turn: it reads upwards, and its second line, below the first, lies right of it.
  cairo_rotate(cr, -std::acos(0.0));
  draw_block(cr, l.y_label, 0, 0);
  cairo_restore(cr);
  draw_block(cr, l.title, l.title_x, l.title_y);

  for (std::size_t k = 0; k < l.legend.size(); ++k) {
    const plot_series& s = m.series[k];
    cairo_rectangle(cr, l.legend[k].x, l.legend[k].y - kSwatch + 1, kSwatch, kSwatch);
    set_rgb(cr, s.color, 0.6);
    cairo_fill_preserve(cr);
    set_rgb(cr, s.color);
    cairo_stroke(cr);
    set_ink(cr);
    text_at(cr, kLegendSize, s.name, l.legend[k].x + kSwatch + 4, l.legend[k].y, align::left);
  }
  if (m.heat) draw_colour_bar(cr, f, m);
  check(cairo_status(cr));
}

/// The layout, measured on a scratch image surface: the same metrics for PNG and SVG.
layout measure(const plot_model& m) {
  surface_ptr scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
  check(cairo_surface_status(scratch.get()));
  context_ptr cr = make_context(scratch.get());
  const layout l = layout_of(cr.get(), m);
  check(cairo_status(cr.get()));
  return l;
}

/// cairo's write callback: appends to a std::string (no exception may cross cairo's C code).
cairo_status_t append(void* closure, const unsigned char* data, unsigned int length) {
  try {
    static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
    return CAIRO_STATUS_SUCCESS;
  } catch (const std::bad_alloc&) {
    return CAIRO_STATUS_NO_MEMORY;
  } catch (...) {
    return CAIRO_STATUS_WRITE_ERROR;
  }
}

/// Gives back, once its objects are gone, what cairo and fontconfig keep from one plot to the
/// next (font caches, the configuration): the tool draws one plot, and a leak checker (the asan
/// build's) finds nothing left. The next plot loads them again.
struct release_fonts {
  release_fonts() = default;
  release_fonts(const release_fonts&) = delete;
  release_fonts& operator=(const release_fonts&) = delete;
  ~release_fonts() {
    cairo_debug_reset_static_data();
#if TALLY_CLI_FONTCONFIG
    FcFini();
#endif
  }
};

}  // namespace

bool plots_available() { return true; }

frame plot_frame(const plot_model& m) {
  const release_fonts after;
  return measure(m).f;
}

std::string render_plot(const plot_model& m, plot_format format) {
  const release_fonts after;  // destroyed last, after the surfaces
  const layout l = measure(m);
  std::string out;
  if (format == plot_format::svg) {
    surface_ptr surface(cairo_svg_surface_create_for_stream(append, &out, frame::width, frame::height));
    check(cairo_surface_status(surface.get()));
#if CAIRO_VERSION >= CAIRO_VERSION_ENCODE(1, 16, 0)
    cairo_svg_surface_set_document_unit(surface.get(), CAIRO_SVG_UNIT_USER);  // width="800", not pt
#endif
    {
      context_ptr cr = make_context(surface.get());
      draw(cr.get(), m, l);
    }
    cairo_surface_finish(surface.get());  // writes the document
    check(cairo_surface_status(surface.get()));
  } else {
    surface_ptr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, frame::width, frame::height));
    check(cairo_surface_status(surface.get()));
    {
      context_ptr cr = make_context(surface.get());
      draw(cr.get(), m, l);
    }
    cairo_surface_flush(surface.get());
    check(cairo_surface_write_to_png_stream(surface.get(), append, &out));
  }
  return out;
}

}  // namespace tally_cli
