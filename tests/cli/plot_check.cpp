// Reading the plots back, and results built as `tally hist` builds them.
#include "plot_check.hpp"

#include <stb_image.h>

#include <algorithm>
#include <exception>
#include <set>

namespace cli_test {
namespace {

/// The value of attribute `name` in the tag that starts at `from` ("" where it has none).
std::string attribute(const std::string& text, std::size_t from, const std::string& name) {
  const std::size_t end = text.find('>', from);
  const std::size_t at = text.find(" " + name + "=\"", from);
  if (at == std::string::npos || at > end) return "";
  const std::size_t begin = at + name.size() + 3;
  return text.substr(begin, text.find('"', begin) - begin);
}

}  // namespace

svg_size size_of_svg(const std::string& svg) {
  const std::size_t tag = svg.find("<svg");
  svg_size s;
  if (tag == std::string::npos) return s;
  try {
    s.width = std::stoi(attribute(svg, tag, "width"));
    s.height = std::stoi(attribute(svg, tag, "height"));
  } catch (const std::exception&) {
  }
  return s;
}

int svg_glyphs(const std::string& svg) {
  // cairo defines each glyph once (<symbol id="glyph0-1"> or <g id="glyph-0-1">) around a path,
  // empty for a space, and draws it with <use xlink:href="#glyph0-1" x=".." y=".."/>.
  std::set<std::string> inked;
  for (std::size_t at = svg.find("id=\"glyph"); at != std::string::npos; at = svg.find("id=\"glyph", at + 1)) {
    const std::size_t begin = at + 4;
    const std::string id = svg.substr(begin, svg.find('"', begin) - begin);
    std::size_t end = svg.find("</symbol>", at);
    end = std::min(end, svg.find("</g>", at));
    const std::size_t d = svg.find(" d=\"", at);
    if (d < end && svg[d + 4] != '"') inked.insert(id);
  }
  int glyphs = 0;
  for (std::size_t at = svg.find("<use"); at != std::string::npos; at = svg.find("<use", at + 1)) {
    std::string href = attribute(svg, at, "xlink:href");
    if (href.empty()) href = attribute(svg, at, "href");
    if (!href.empty() && inked.count(href.substr(1))) ++glyphs;
  }
  return glyphs;
}

int ink_characters(const std::vector<std::string>& texts) {
  int n = 0;
  for (const std::string& t : texts)
    for (const unsigned char c : t) n += c != ' ' && (c & 0xC0) != 0x80;
  return n;
}

int image::dark_pixels(int x0, int y0, int x1, int y1) const {
  int n = 0;
  for (int y = std::max(y0, 0); y < std::min(y1, height); ++y)
    for (int x = std::max(x0, 0); x < std::min(x1, width); ++x) {
      const unsigned char* p = at(x, y);
      n += p[0] < 100 && p[1] < 100 && p[2] < 100;
    }
  return n;
}

image decode_png(const std::string& png) {
  image img;
  unsigned char* pixels = stbi_load_from_memory(reinterpret_cast<const unsigned char*>(png.data()),
                                                static_cast<int>(png.size()), &img.width, &img.height,
                                                &img.channels, 3);
  if (!pixels) return {};
  img.rgb.assign(pixels, pixels + static_cast<std::size_t>(img.width) * img.height * 3);
  stbi_image_free(pixels);
  return img;
}

namespace {

tally::options cli_options() {
  tally::options o;
  o.flow = true;  // as `tally hist` fills
  return o;
}

tally_cli::hist_result base(const std::string& path) {
  tally_cli::hist_result r;
  r.input.path = path;
  r.input.type = tally::dtype::f64;
  return r;
}

}  // namespace

tally_cli::hist_result result_of(const std::string& path, const std::vector<double>& values,
                                 const tally::axis& axis) {
  tally_cli::hist_result r = base(path);
  r.mode = tally_cli::layout_mode::single;
  r.names = {"0"};
  r.hists.emplace_back(axis, cli_options());
  r.hists.back().fill(tally::make_view(values.data(), static_cast<std::int64_t>(values.size())));
  return r;
}

tally_cli::hist_result channels_result(const std::string& path, const std::vector<std::vector<double>>& channels,
                                       const std::vector<std::string>& names, const tally::axis& axis) {
  tally_cli::hist_result r = base(path);
  r.mode = tally_cli::layout_mode::channels;
  r.names = names;
  for (const std::vector<double>& c : channels) {
    r.hists.emplace_back(axis, cli_options());
    r.hists.back().fill(tally::make_view(c.data(), static_cast<std::int64_t>(c.size())));
  }
  return r;
}

tally_cli::hist_result matrix_result(const std::string& path, const std::vector<double>& rows_by_columns,
                                     const std::vector<tally::axis>& axes) {
  tally_cli::hist_result r = base(path);
  r.mode = tally_cli::layout_mode::nd;
  const std::int64_t columns = static_cast<std::int64_t>(axes.size());
  const std::int64_t rows = static_cast<std::int64_t>(rows_by_columns.size()) / columns;
  std::vector<tally::view> views;
  for (std::int64_t c = 0; c < columns; ++c) {
    r.names.push_back("axis " + std::to_string(c));
    views.push_back(tally::make_view(rows_by_columns.data() + c, rows, columns));
  }
  r.hists.emplace_back(axes, cli_options());
  r.hists.back().fill(views);
  return r;
}

}  // namespace cli_test
