// Renders data/sample.png, the image `tally hist` uses without FILE: a deterministic
// procedural scene (sky and ground gradients, a sun, coloured discs, mild noise).
// Build: cmake --build <dir> --target tally_make_sample; run: tally_make_sample data/sample.png
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr int kSize = 256;

/// splitmix64: the same noise on every platform, unlike std:: distributions.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct color {
  double r, g, b;
};

color lerp(color a, color b, double t) {
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

struct disc {
  double cx, cy, radius;
  color fill;
};

color scene(int x, int y) {
  const double u = x / double(kSize - 1), v = y / double(kSize - 1);
  const double horizon = 0.62 + 0.05 * std::sin(u * 6.0);
  color c = v < horizon ? lerp({40, 90, 200}, {190, 215, 245}, v / horizon)
                        : lerp({70, 140, 60}, {35, 75, 30}, (v - horizon) / (1 - horizon));
  const disc discs[] = {{190, 60, 30, {250, 215, 80}},
                        {60, 200, 22, {200, 60, 50}},
                        {120, 215, 14, {240, 240, 240}},
                        {215, 200, 18, {120, 70, 160}}};
  for (const disc& d : discs) {
    const double dist = std::hypot(x - d.cx, y - d.cy);
    // A one-pixel soft edge, so the discs are not jagged.
    const double cover = std::clamp(d.radius + 0.5 - dist, 0.0, 1.0);
    c = lerp(c, d.fill, cover);
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "sample.png";
  std::vector<unsigned char> pixels(kSize * kSize * 3);
  for (int y = 0; y < kSize; ++y)
    for (int x = 0; x < kSize; ++x) {
      const color c = scene(x, y);
      const double rgb[3] = {c.r, c.g, c.b};
      for (int k = 0; k < 3; ++k) {
        const std::uint64_t h = mix((std::uint64_t(y) * kSize + x) * 3 + k);
        const double noise = double(h % 7) - 3.0;  // -3..3
        pixels[(y * kSize + x) * 3 + k] =
            static_cast<unsigned char>(std::clamp(std::lround(rgb[k] + noise), 0L, 255L));
      }
    }
  if (!stbi_write_png(path, kSize, kSize, 3, pixels.data(), kSize * 3)) {
    std::fprintf(stderr, "make_sample: cannot write %s\n", path);
    return 1;
  }
  return 0;
}
