// CPU-side checks of the GPU runtime: the cache key's hash, the disk cache round trip, and the
// generated source (no driver, no NVRTC needed).
#ifndef MK_NO_GPU_RUNTIME
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/cache.h"

namespace mk::rt {

TEST(Runtime, Sha256KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string(1000, 'a')).size(), 64u);
}

TEST(Runtime, TreeDigestChangesWhenAHeaderChanges) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "mk_tree_digest_test";
  fs::remove_all(dir);
  fs::create_directories(dir / "mk");
  std::ofstream(dir / "mk" / "a.cuh") << "int a;";
  const std::string k1 = sha256_hex(tree_digest_input(dir.string()));
  std::ofstream(dir / "mk" / "a.cuh") << "int a; // edited";
  const std::string k2 = sha256_hex(tree_digest_input(dir.string()));
  EXPECT_NE(k1, k2);
  fs::remove_all(dir);
}

TEST(Runtime, CacheRoundTrip) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "mk_cache_test";
  fs::remove_all(dir);
  EXPECT_FALSE(cache_load(dir.string(), "k").has_value());
  cache_store(dir.string(), "k", {'c', 'u', 'b'}, "{}");
  auto hit = cache_load(dir.string(), "k");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(std::string(hit->begin(), hit->end()), "cub");
  fs::remove_all(dir);
}

}  // namespace mk::rt
#endif
