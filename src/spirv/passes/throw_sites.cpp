// number_throw_paths, reading a throw site (throw_paths.hpp): the constant strings, line and value
// count a zex_throw call passes (through access chains, casts, OpPhis and OpSelects of constants),
// and the frames a call's debug location names (DebugScope, DebugInlinedAt, OpLine, OpName).
#include "spirv/passes/throw_paths.hpp"

#include <zex/abi.h>

#include <spirv/unified1/OpenCLDebugInfo100.h>

#include <algorithm>
#include <string>

namespace zex {
namespace passes {
namespace throw_paths {

bool SiteReader::op_string(uint32_t id, std::string* out) const {
  const Instruction* i = ctx_.def(id);
  if (!i || i->opcode != spv::OpString) return false;
  *out = i->string_at(2);
  return true;
}

bool SiteReader::has_name(uint32_t fn) const { return renamed_.count(fn) || !ctx_.names(fn).empty(); }

bool SiteReader::constant_u32(uint32_t id, uint32_t* v) const { return passes::constant_u32(ctx_, id, v); }
bool SiteReader::string_of(uint32_t id, std::string* out) const { return constant_string(ctx_, id, out); }

std::string SiteReader::function_name(uint32_t fn) const {
  auto r = renamed_.find(fn);
  if (r != renamed_.end()) return r->second;
  const std::vector<std::string>& n = ctx_.names(fn);
  return n.empty() ? "<function %" + std::to_string(fn) + ">" : n.front();
}
// The DebugFunction a scope belongs to (0: none).
uint32_t SiteReader::debug_function(uint32_t scope) const {
  for (int d = 0; d < 64 && scope; ++d) {
    const Instruction* s = ctx_.def(scope);
    if (!s) return 0;
    if (g_.is_debug(*s, OpenCLDebugInfo100DebugFunction)) return scope;
    if (g_.is_debug(*s, OpenCLDebugInfo100DebugLexicalBlock)) scope = s->word(8);
    else if (g_.is_debug(*s, OpenCLDebugInfo100DebugLexicalBlockDiscriminator)) scope = s->word(7);
    else return 0;
  }
  return 0;
}
std::string SiteReader::scope_function_name(uint32_t scope, uint32_t fallback_fn) const {
  const Instruction* f = ctx_.def(debug_function(scope));
  if (f) {
    std::string s;
    if (op_string(f->word(5), &s)) return s;
  }
  return function_name(fallback_fn);
}
std::string SiteReader::scope_file(uint32_t scope) const {
  const Instruction* s = ctx_.def(scope);
  if (!s || !(g_.is_debug(*s, OpenCLDebugInfo100DebugFunction) || g_.is_debug(*s, OpenCLDebugInfo100DebugLexicalBlock) ||
              g_.is_debug(*s, OpenCLDebugInfo100DebugLexicalBlockDiscriminator)))
    return {};
  const Instruction* src = ctx_.def(g_.is_debug(*s, OpenCLDebugInfo100DebugFunction) ? s->word(7) : s->word(5));
  if (!src || !g_.is_debug(*src, OpenCLDebugInfo100DebugSource)) return {};
  std::string f;
  op_string(src->word(5), &f);
  return f;
}
// The frames of the functions `inlined` (a DebugInlinedAt) says a location was inlined into.
void SiteReader::inlined_frames(uint32_t inlined, uint32_t fn, std::vector<Frame>& out) const {
  for (int d = 0; d < 256 && inlined; ++d) {
    const Instruction* ia = ctx_.def(inlined);
    if (!ia || !g_.is_debug(*ia, OpenCLDebugInfo100DebugInlinedAt) || ia->size() < 7) return;
    Frame f;
    f.function = scope_function_name(ia->word(6), fn);
    f.file = scope_file(ia->word(6));
    f.line = ia->word(5);
    if (f.line == 0) f.file.clear();
    out.push_back(std::move(f));
    inlined = ia->size() > 7 ? ia->word(7) : 0;
  }
}
// The frames of a call at `loc` in function `fn`, innermost first.
std::vector<Frame> SiteReader::call_frames(const Loc& loc, uint32_t fn) const {
  std::vector<Frame> out;
  Frame f;
  f.function = loc.scope ? scope_function_name(loc.scope, fn) : function_name(fn);
  if (loc.line) {
    if (!op_string(loc.file, &f.file)) f.file = scope_file(loc.scope);
    f.line = loc.line;
  }
  out.push_back(std::move(f));
  inlined_frames(loc.inlined, fn, out);
  return out;
}

// A zex_throw whose strings and line are constants: its name, reason and own frames. `value(w)` is
// the id the site passes as word w of the call (the call's own, or what a phi or select chooses).
template <class Value>
bool SiteReader::identify_one(const Function& f, const Call& c, Value value, detail::ThrowSite* site) const {
  Frame own;
  if (!string_of(value(5), &site->name) || !string_of(value(6), &site->reason) ||
      !constant_u32(value(7), &site->value_count) || !constant_u32(value(8), &site->value_kind) ||
      !string_of(value(11), &own.function) || !string_of(value(12), &own.file) || !constant_u32(value(13), &own.line))
    return false;
  site->value_count = std::min<uint32_t>(site->value_count, ZEX_MAX_VALUES);
  site->frames = {own};
  inlined_frames(c.loc.inlined, f.id, site->frames);
  // Without debug information, a throw the front end inlined into another function says only its
  // own name: the function that holds it now is a frame too (the ones in between are gone).
  if (!c.loc.scope && !f.wrapper && function_name(f.id) != own.function && has_name(f.id))
    site->frames.push_back(Frame{function_name(f.id), {}, 0});
  return true;
}
bool SiteReader::identify(const Function& f, const Call& c, Sites* out) const {
  auto e = g_.throw_entry.find(c.callee);
  if (e == g_.throw_entry.end() || e->second != "zex_throw") return false;
  const Block& b = f.blocks[c.block];
  const Instruction& i = b.insts[c.index];
  if (i.size() != 14) return false;  // zex, name, reason, count, kind, a, b, function, file, line
  auto phi = [&](uint32_t id) -> const Instruction* {
    for (const Instruction& p : b.insts)
      if (p.opcode != spv::OpPhi) break;
      else if (p.result_id == id) return &p;
    return nullptr;
  };
  for (size_t w : {5, 6, 7, 8, 11, 12, 13}) {
    const Instruction* d = ctx_.def(i.word(w));
    if (const Instruction* p = phi(i.word(w))) {
      if (out->cond) return false;
      if (out->preds.empty())
        for (size_t k = 4; k < p->size(); k += 2) out->preds.push_back(p->word(k));
    } else if (d && d->opcode == spv::OpSelect && d->size() == 6) {
      if (!out->preds.empty() || (out->cond && out->cond != d->word(3))) return false;
      out->cond = d->word(3);
    }
  }
  const size_t choices = out->cond ? 2 : std::max<size_t>(out->preds.size(), 1);
  for (size_t k = 0; k < choices; ++k) {
    bool ok = true;
    auto value = [&](size_t w) -> uint32_t {
      const uint32_t v = i.word(w);
      if (const Instruction* p = phi(v)) {
        for (size_t x = 4; x < p->size(); x += 2)
          if (p->word(x) == out->preds[k]) return p->word(x - 1);
        ok = false;
        return 0;
      }
      const Instruction* d = ctx_.def(v);
      if (out->cond && d && d->opcode == spv::OpSelect && d->size() == 6) return d->word(k == 0 ? 4 : 5);
      return v;
    };
    detail::ThrowSite site;
    if (!identify_one(f, c, value, &site) || !ok) return false;
    auto same = std::find_if(out->sites.begin(), out->sites.end(), [&](const detail::ThrowSite& x) {
      return x.name == site.name && x.reason == site.reason && x.value_count == site.value_count &&
             x.value_kind == site.value_kind && x.frames[0].function == site.frames[0].function &&
             x.frames[0].file == site.frames[0].file && x.frames[0].line == site.frames[0].line;
    });
    out->site_of.push_back(static_cast<size_t>(same - out->sites.begin()));
    if (same == out->sites.end()) out->sites.push_back(std::move(site));
  }
  return true;
}

}  // namespace throw_paths
}  // namespace passes
}  // namespace zex
