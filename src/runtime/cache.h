// The on-disk cubin cache (hopper-notes §4): key = sha256 of the generated source, the content of
// every header under kernels/, the NVRTC flags and the NVRTC version. Files are written to a
// temporary name and renamed (atomic on POSIX), in $MEGAKITTENS_CACHE_DIR or ~/.cache/megakittens.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace mk::rt {

std::string sha256_hex(const std::string& data);

// Concatenated (relative path, content) of every file under `dir`, sorted by path.
std::string tree_digest_input(const std::string& dir);

std::string default_cache_dir();

std::optional<std::vector<char>> cache_load(const std::string& dir, const std::string& key);
// Best effort: a failure to write leaves the cache as it was.
void cache_store(const std::string& dir, const std::string& key, const std::vector<char>& cubin,
                 const std::string& meta);

}  // namespace mk::rt
