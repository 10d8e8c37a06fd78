// What a launch record knows about the launch that threw, in the form the report path takes it
// (ThrowOrigin; SlabPool::read_and_reset): the one translation zex::Stream and zex::Graph share.
#pragma once

#include <zex/module.hpp>
#include <zex/slab.hpp>

namespace zex {
namespace detail {

/// `run`: the record's run of the launch that threw (LaunchRecord<Kernel::State>::Run), or null when
/// the report names a launch nobody recorded; `fallback_level` is then the launch level to assume.
template <class Run>
ThrowOrigin origin_of(const Run* run, int fallback_level) {
  ThrowOrigin o;
  // A run's level is the variant it launched (detail::variant_of): the level, with or without early stop.
  o.launch_level = run ? run->level % kLevels : fallback_level;
  if (!run) return o;
  o.kernel_name = *run->kernel->name;
  o.known = run->kernel->module->known_strings(run->level);
  o.sites = &run->kernel->module->sites();
  o.site_base = run->kernel->module->site_base();
  if (run->file) o.launch_site = SourceLocation{run->file, run->line};
  for (int k = 0; k < 3; ++k) o.group_size[k] = run->group[k];
  return o;
}

}  // namespace detail
}  // namespace zex
