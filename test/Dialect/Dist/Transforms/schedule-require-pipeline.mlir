// RUN: tessera-opt %s -split-input-file -dist-schedule="schedule=gpipe require-pipeline=1" -verify-diagnostics
// RUN: tessera-opt %s -split-input-file -dist-schedule="schedule=gpipe" | FileCheck %s --check-prefix=OPTIONAL

// A schedule the user asked for (require-pipeline) needs pipeline stages or
// micro-batches to order; without the option a plan without them is simply
// left in program order.

// expected-error @+1 {{dist-schedule: schedule gpipe orders micro-batches through pipeline stages, but the plan has one stage and one micro-batch}}
module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 1, pp = 1]>, dist.pipeline = #dist.pipeline<micro_batches = 1>} {
}

// -----

// OPTIONAL: dist.pipeline = #dist.pipeline<micro_batches = 2, schedule = "gpipe"
module attributes {dist.mesh = #dist.mesh<[dp = 2, tp = 1, pp = 1]>, dist.pipeline = #dist.pipeline<micro_batches = 2>} {
}
