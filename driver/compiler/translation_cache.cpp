// The translation cache (translation_cache.hpp): hash to find, full compare to hit.
#include "compiler/translation_cache.hpp"

namespace zexcpu {

std::string TranslationCache::key(const std::string& spirv, const std::string& applied_constants) {
  // The SPIR-V size first, so that no (bytes, constants) split of one string equals another's.
  std::string k;
  uint64_t n = spirv.size();
  k.assign(reinterpret_cast<const char*>(&n), sizeof n);
  k += spirv;
  k += applied_constants;
  return k;
}

uint64_t TranslationCache::default_hash(std::string_view data) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : data) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

TranslationCache::List::iterator TranslationCache::find_locked(uint64_t h, const std::string& key) {
  auto [b, e] = map_.equal_range(h);
  for (auto it = b; it != e; ++it)
    if (it->second->key == key) return it->second;
  return lru_.end();
}

bool TranslationCache::get(const std::string& key, std::string* bitcode) {
  const uint64_t h = hash_(key);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = find_locked(h, key);
  if (it == lru_.end()) return false;
  lru_.splice(lru_.begin(), lru_, it);
  *bitcode = it->bitcode;
  return true;
}

void TranslationCache::put(const std::string& key, const std::string& bitcode) {
  const size_t size = key.size() + bitcode.size();
  if (size > budget_ / 4) return;
  const uint64_t h = hash_(key);
  std::lock_guard<std::mutex> lock(mu_);
  if (find_locked(h, key) != lru_.end()) return;
  lru_.push_front(Entry{h, key, bitcode});
  map_.emplace(h, lru_.begin());
  bytes_ += size;
  while (bytes_ > budget_ && !lru_.empty()) {
    auto last = std::prev(lru_.end());
    auto [b, e] = map_.equal_range(last->hash);
    for (auto it = b; it != e; ++it)
      if (it->second == last) {
        map_.erase(it);
        break;
      }
    bytes_ -= last->key.size() + last->bitcode.size();
    lru_.erase(last);
  }
}

size_t TranslationCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

TranslationCache& TranslationCache::instance() {
  static TranslationCache* c = new TranslationCache(64u << 20);
  return *c;
}

}  // namespace zexcpu
