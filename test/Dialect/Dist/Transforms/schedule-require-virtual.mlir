// RUN: tessera-opt %s -dist-schedule="schedule=interleaved require-pipeline=1" -verify-diagnostics

// An interleaving schedule the user asked for needs a pp axis, even where
// micro-batches give it something to order.

// expected-error @+1 {{dist-schedule: schedule interleaved interleaves virtual pipeline stages, but the plan has one stage (pp = 1)}}
module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 1, pp = 1]>, dist.pipeline = #dist.pipeline<micro_batches = 2>} {
}
