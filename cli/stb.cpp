// stb's image decoder and encoder, compiled once from Debian's packaged headers (libstb-dev), so
// that the tool needs no shared stb library where it runs (a wheel's `tally` included).
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
