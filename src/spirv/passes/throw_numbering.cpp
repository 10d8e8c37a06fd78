// number_throw_paths, the throw-path ids (throw_paths.hpp): paths per function bottom-up, how many
// kernels' paths reach each function (one: its ids are constants; several: a hidden base parameter),
// and the table of every path from every kernel, in call order, ids from 1.
#include "spirv/passes/throw_paths.hpp"

#include <zex/abi.h>

#include <algorithm>
#include <functional>

namespace zex {
namespace passes {
namespace throw_paths {

void number_paths(CallGraph& g, const SiteReader& reader, detail::SiteTable* out, Numbering* num) {
  // paths(f), bottom-up (the call graph is a DAG: mark_may_throw checked).
  std::vector<int> done(g.fns.size(), 0);
  bool overflow = false;
  std::function<uint64_t(size_t)> paths = [&](size_t k) -> uint64_t {
    Function& f = g.fns[k];
    if (done[k]) return f.paths;
    done[k] = 1;
    uint64_t n = 0;
    std::vector<Item>& items = num->items[f.id];
    for (size_t c = 0; c < f.calls.size(); ++c) {
      const Call& call = f.calls[c];
      uint64_t add = 0;
      Sites s;
      if (reader.identify(f, call, &s)) {
        add = s.sites.size();
        num->site_info[{f.id, c}] = std::move(s);
      } else if (g.fn_index.count(call.callee)) {
        add = paths(g.fn_index.at(call.callee));
      }
      if (!add) continue;
      items.push_back({c, n});
      n += add;
      if (n > kMaxPaths) overflow = true;
    }
    return f.paths = std::min<uint64_t>(n, kMaxPaths + 1);
  };
  uint64_t total = 0;
  for (size_t k = 0; k < g.fns.size(); ++k) {
    paths(k);
    if (g.fns[k].entry) total += g.fns[k].paths;
  }
  if (overflow || total > kMaxPaths) {
    num->site_info.clear();
    num->items.clear();
    return;
  }
  // reach(f): paths from kernels to f, top-down in a topological order.
  std::vector<size_t> order;
  std::vector<int> seen(g.fns.size(), 0);
  std::function<void(size_t)> post = [&](size_t k) {
    if (seen[k]) return;
    seen[k] = 1;
    for (const Call& c : g.fns[k].calls)
      if (g.fn_index.count(c.callee)) post(g.fn_index.at(c.callee));
    order.push_back(k);
  };
  for (size_t k = 0; k < g.fns.size(); ++k) post(k);
  std::reverse(order.begin(), order.end());  // callers first
  for (Function& f : g.fns) f.reach = f.entry ? 1 : 0;
  for (size_t k : order)
    for (const Call& c : g.fns[k].calls)
      if (g.fn_index.count(c.callee)) {
        Function& callee = g.fns[g.fn_index.at(c.callee)];
        callee.reach = std::min<uint64_t>(callee.reach + g.fns[k].reach, 2);
      }
  for (Function& f : g.fns) f.hidden = f.reach > 1 && f.paths > 0 && !f.entry;

  // Every path from every kernel, in order: ids from 1.
  out->assign(total, detail::ThrowSite{});
  uint64_t next = 1;
  std::function<void(size_t, uint64_t, const std::vector<Frame>&)> walk = [&](size_t k, uint64_t base,
                                                                              const std::vector<Frame>& chain) {
    Function& f = g.fns[k];
    if (f.reach == 1) f.base = base;
    for (const Item& it : num->items[f.id]) {
      const Call& c = f.calls[it.call];
      auto s = num->site_info.find({f.id, it.call});
      if (s != num->site_info.end()) {
        for (size_t t = 0; t < s->second.sites.size(); ++t) {
          detail::ThrowSite site = s->second.sites[t];
          site.frames.insert(site.frames.end(), chain.begin(), chain.end());
          site.depth = static_cast<uint32_t>(site.frames.size());
          if (site.frames.size() > ZEX_MAX_FRAMES) site.frames.resize(ZEX_MAX_FRAMES);
          (*out)[base + it.offset + t - 1] = std::move(site);
        }
        continue;
      }
      std::vector<Frame> inner;
      if (!f.wrapper) inner = reader.call_frames(c.loc, f.id);
      // Longer chains than the report shows are cut on the host side, after the depth is counted.
      inner.insert(inner.end(), chain.begin(), chain.end());
      walk(g.fn_index.at(c.callee), base + it.offset, inner);
    }
  };
  for (size_t k = 0; k < g.fns.size(); ++k)
    if (g.fns[k].entry && g.fns[k].paths) {
      walk(k, next, {});
      next += g.fns[k].paths;
    }
  num->numbered = true;
}

}  // namespace throw_paths
}  // namespace passes
}  // namespace zex
