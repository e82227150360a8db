// stb's image decoder (the tool reads PNG and JPEG with it) and encoder (the tests and
// data/make_sample.cpp write PNGs with it), compiled once from Debian's packaged headers
// (libstb-dev), so that the tool needs no shared stb library where it runs (a wheel's `tally`
// included).
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
