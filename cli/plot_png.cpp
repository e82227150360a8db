// The PNG plot: pixels blended into an RGB canvas, encoded by stb_image_write (no text).
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>

#include "plot.hpp"

namespace tally_cli {
namespace {

class canvas {
 public:
  canvas() : px_(std::size_t{frame::width} * frame::height * 3, 255) {}

  /// Fills [x0, x1) x [y0, y1), mixing `alpha` of `c` into what is there.
  void fill(int x0, int y0, int x1, int y1, rgb c, double alpha = 1.0) {
    x0 = std::max(x0, 0), y0 = std::max(y0, 0);
    x1 = std::min(x1, frame::width), y1 = std::min(y1, frame::height);
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        unsigned char* p = &px_[(std::size_t{static_cast<unsigned>(y)} * frame::width + x) * 3];
        const unsigned char src[3] = {c.r, c.g, c.b};
        for (int k = 0; k < 3; ++k)
          p[k] = static_cast<unsigned char>(std::lround(p[k] * (1 - alpha) + src[k] * alpha));
      }
  }

  std::string encode() const {
    std::string out;
    auto append = [](void* ctx, void* data, int size) {
      static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), size);
    };
    stbi_write_png_to_func(append, &out, frame::width, frame::height, 3, px_.data(),
                           frame::width * 3);
    return out;
  }

 private:
  std::vector<unsigned char> px_;
};

int round_px(double v) { return static_cast<int>(std::lround(v)); }

/// One series: each pixel column is filled once, up to the tallest bar covering it, so bars
/// narrower than a pixel do not blend into each other.
void draw_series(canvas& img, const frame& f, const plot_series& s, double alpha) {
  std::vector<int> top(frame::width, -1);
  const int base = round_px(f.py(0));
  for (std::size_t k = 0; k < s.bins.values.size(); ++k) {
    if (!(s.bins.values[k] > 0)) continue;
    const int x0 = round_px(f.px(s.bins.edges[k]));
    const int x1 = std::max(x0 + 1, round_px(f.px(s.bins.edges[k + 1])));
    const int y = std::min(base - 1, round_px(f.py(s.bins.values[k])));
    for (int x = std::max(x0, 0); x < std::min(x1, frame::width); ++x)
      top[x] = top[x] < 0 ? y : std::min(top[x], y);
  }
  for (int x = 0; x < frame::width; ++x)
    if (top[x] >= 0) img.fill(x, top[x], x + 1, base, s.color, alpha);
}

void draw_heat(canvas& img, const frame& f, const plot_model& m) {
  for (const heat_cell& c : heat_cells(m, f)) {
    const int x0 = round_px(c.x0), y0 = round_px(c.y0);
    img.fill(x0, y0, std::max(round_px(c.x1), x0 + 1), std::max(round_px(c.y1), y0 + 1), c.color);
  }
}

}  // namespace

std::string render_png(const plot_model& m) {
  const frame f{m.x_lo, m.x_hi, m.y_lo, m.y_hi, m.log_y};
  canvas img;
  const rgb grid{225, 225, 225}, ink{0, 0, 0};
  const int x_end = frame::width - frame::right, y_base = frame::height - frame::bottom;
  for (double t : y_ticks(m)) {
    const int y = round_px(f.py(t));
    img.fill(frame::left, y, x_end, y + 1, grid);
    img.fill(frame::left - 5, y, frame::left, y + 1, ink);
  }
  for (double t : nice_ticks(m.x_lo, m.x_hi)) {
    const int x = round_px(f.px(t));
    img.fill(x, y_base, x + 1, y_base + 5, ink);
  }
  if (m.heat) draw_heat(img, f, m);
  const double alpha = m.series.size() > 1 ? 0.5 : 0.85;
  for (const plot_series& s : m.series) draw_series(img, f, s, alpha);
  img.fill(frame::left, frame::top, frame::left + 1, y_base + 1, ink);  // y axis
  img.fill(frame::left, y_base, x_end, y_base + 1, ink);                // x axis
  return img.encode();
}

}  // namespace tally_cli
