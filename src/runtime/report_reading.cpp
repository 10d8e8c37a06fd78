// The one path from a thrown report to a KernelException, top-down (docs/design.md, "How an exception
// travels", step 5): zex::Stream, SlabPool::check and the C API's zex_slot_check all come here with
// what they know about the launch (ThrowOrigin, looked up by the report's launch id before this runs).
//
//   1. copy the report out of host USM (the device is done with it: the caller synchronized);
//   2. find the throw-site table of a numbered site the caller did not name (the process's registry);
//   3. decode it (decoder.hpp: every string address placed and bounded, nothing trusted), and read
//      the thrower count beside the claim word, on the pool's helper list;
//   4. add the origin: the kernel's name, the launch site, group and local ids from the global id;
//   5. reset the claim word (appended to the caller's list, or on the helper list, waited for) and
//      only then clear the report: a reset that cannot be appended leaves the report set, so the
//      exception is raised again by a later check and the slot is never handed on armed.
#include <zex/slab.hpp>

#include "runtime/decoder.hpp"
#include "runtime/slab_pool_impl.hpp"

#include <cstring>
#include <mutex>
#include <string>
#include <utility>

namespace zex {

KernelExceptionInfo SlabPool::read_and_reset(const Slot& s, const ThrowOrigin& origin,
                                             ze_command_list_handle_t reset_list, ze_event_handle_t signal) {
  // 1.
  zex_report_t copy;
  std::memcpy(&copy, s.report, sizeof copy);

  // 2. Site ids are unique in the process, so the registry finds the table of whichever live
  // zex::Module the kernel came from.
  const detail::SiteTable* sites = origin.sites;
  uint32_t site_base = origin.site_base;
  std::shared_ptr<const detail::SiteTable> found;
  if (!sites && copy.abi_version >= 3 && detail::known_abi_version(copy.abi_version) && copy.site != 0) {
    found = detail::find_site_table(copy.site & ZEX_SITE_ID_MASK, &site_base);
    sites = found.get();
  }

  // 3.
  detail::DecodedReport d;
  {
    std::lock_guard<std::mutex> lock(impl_->helper_mu);
    detail::ZeMemoryReader mem(impl_->helper);
    d = detail::decode_report(copy, mem, origin.known, sites, site_base);
    // The thrower count, from device memory next to the claim word: one more read on the path that
    // already reads strings, only for a report that can have one (version >= 2, level >= 1).
    if (d.abi_version >= 2 && detail::known_abi_version(d.abi_version) && d.debug_level >= 1 && d.debug_level <= 2) {
      std::vector<detail::ReadRequest> q(1);
      q[0].address = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s.claim)) + ZEX_COUNT_OFFSET;
      q[0].size = sizeof(uint64_t);
      mem.read(q);
      if (q[0].ok && q[0].out.size() == sizeof(uint64_t)) std::memcpy(&d.thrower_count, q[0].out.data(), sizeof(uint64_t));
    }
  }

  // 4.
  std::string kname = origin.kernel_name;
  if (kname.empty()) kname = "<unknown kernel of launch " + std::to_string(d.launch_id) + ">";
  KernelExceptionInfo info = detail::exception_info(std::move(d), std::move(kname), device_name_, origin.launch_level);
  if (origin.launch_site) info.launch_site = origin.launch_site;
  // A numbered throw site stores the global id only (docs/abi.md): zex launches have no global offset,
  // so the group and local ids follow from the launch's group size.
  const uint32_t* g = origin.group_size;
  if (info.global_id && !info.group_id && g[0] && g[1] && g[2]) {
    std::array<uint64_t, 3> group{}, local{};
    for (int k = 0; k < 3; ++k) {
      group[k] = (*info.global_id)[k] / g[k];
      local[k] = (*info.global_id)[k] % g[k];
    }
    info.group_id = group;
    info.local_id = local;
  }

  // 5.
  discard(s, reset_list, signal);
  return info;
}

void SlabPool::raise(const Slot& s, const ThrowOrigin& origin, ze_command_list_handle_t reset_list) {
  throw KernelException(read_and_reset(s, origin, reset_list));
}

}  // namespace zex
