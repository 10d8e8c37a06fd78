// Translations of this process, by input (docs/cpu-driver-compiler.md, "Translation cache"): a module
// built again (zex builds one per debug level, tests and applications rebuild the same ones) skips the
// translator and its child process. Entries are found by a 64-bit hash of the key and then compared in
// full (the SPIR-V bytes and the applied specialization constants), so two inputs whose hashes collide
// never share a translation. Bounded in bytes (keys and bitcode), least recently used out first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace zexcpu {

class TranslationCache {
 public:
  using Hash = uint64_t (*)(std::string_view);
  /// `hash` may be replaced by tests (a constant one makes every key collide).
  explicit TranslationCache(size_t budget_bytes, Hash hash = &default_hash) : budget_(budget_bytes), hash_(hash) {}

  /// The key of a translation: the SPIR-V bytes, then the constants as the translator applies them.
  static std::string key(const std::string& spirv, const std::string& applied_constants);
  static uint64_t default_hash(std::string_view data);

  /// True with the translation of exactly `key`.
  bool get(const std::string& key, std::string* bitcode);
  void put(const std::string& key, const std::string& bitcode);
  size_t entries() const;

  /// The process's cache (never destroyed: builds may run at exit).
  static TranslationCache& instance();

 private:
  struct Entry {
    uint64_t hash;
    std::string key, bitcode;
  };
  using List = std::list<Entry>;
  List::iterator find_locked(uint64_t h, const std::string& key);

  const size_t budget_;
  const Hash hash_;
  mutable std::mutex mu_;
  List lru_;                                            // most recently used first
  std::unordered_multimap<uint64_t, List::iterator> map_;  // hash -> entries with that hash
  size_t bytes_ = 0;
};

}  // namespace zexcpu
