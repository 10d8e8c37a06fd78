// zex: device-side exceptions for Level Zero. The umbrella header: include this one.
//
//   zex::Context ctx;                       // or zex::Context(driver, context) to adopt handles
//   zex::Device dev = ctx.device(0);
//   zex::Module mod(dev, spirv);            // validated, linked with the device library
//   zex::Kernel vadd = mod.kernel("vadd");
//   zex::Stream stream(dev);
//   stream.launch(vadd, cfg, c, a, b, n);   // the zex_state_t goes last, automatically
//   try { stream.synchronize(); } catch (const zex::KernelException& e) { ... }
#pragma once

#include <zex/abi.h>
#include <zex/context.hpp>
#include <zex/error.hpp>
#include <zex/exception.hpp>
#include <zex/module.hpp>
#include <zex/slab.hpp>
#include <zex/stream.hpp>
#include <zex/graph.hpp>
