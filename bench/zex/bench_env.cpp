// The shared objects and the idle streams (bench_env.hpp).
#include "bench_env.hpp"

namespace zex_bench {

Env* g_env = nullptr;
const char* g_spv_path = nullptr;

std::vector<zex::Stream>& idle_streams() {
  static std::vector<zex::Stream> v;
  return v;
}

void set_live_streams(int n) {
  auto& v = idle_streams();
  while (int(v.size()) > n - 1) v.pop_back();
  while (int(v.size()) < n - 1) v.emplace_back(g_env->dev);
}

zex::LaunchConfig one_item(int level) {
  zex::LaunchConfig c;
  c.groups = {1, 1, 1};
  c.group_size = {1, 1, 1};
  c.debug_level = level;
  return c;
}

std::vector<std::unique_ptr<IdleRaw>>& idle_raw() {
  static std::vector<std::unique_ptr<IdleRaw>> v;
  return v;
}

void set_live_raw(int n) {
  idle_streams().clear();
  auto& v = idle_raw();
  while (int(v.size()) > n - 1) v.pop_back();
  while (int(v.size()) < n - 1) v.push_back(std::make_unique<IdleRaw>());
}

void set_live_zex(int n) {
  idle_raw().clear();
  set_live_streams(n);
}

CEnv* g_c = nullptr;

void c_check(zex_result_t r, const char* what) {
  if (r != ZEX_SUCCESS) throw std::runtime_error(std::string(what) + ": " + zex_last_error_message());
}

std::vector<char> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(std::string("cannot open ") + path);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace zex_bench
