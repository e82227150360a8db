// .npz archives (numpy.savez, numpy.savez_compressed): a zip file of .npy members.
#pragma once

#include <cstdio>
#include <string>

namespace tally_cli {

/// Whether the file starts as a zip archive does (a local file header).
bool is_zip(std::FILE* f);

/// The array `key` of the archive (`key` empty: its only array, whose name `found` tells),
/// copied or inflated into an anonymous temporary file positioned at its start, ready to be read
/// as a .npy file. Throws failure for damaged archives and unknown compression, usage_error for
/// a missing key (or none where the archive holds several arrays).
std::FILE* npz_member(std::FILE* f, const std::string& path, const std::string& key, std::string& found);

}  // namespace tally_cli
