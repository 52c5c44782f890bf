// RUN: tessera-opt %s -tsr-internalize | FileCheck %s

// Only the functions marked as entry points stay public, whatever their
// names.
// CHECK: func.func private @train_step_unmarked
// CHECK: func.func @step(){{.*}}tsr.train_step = "sgd"
// CHECK: func.func @dump(){{.*}}tsr.grad_step
// CHECK: func.func private @forward
func.func @train_step_unmarked() {
  return
}
func.func @step() attributes {tsr.train_step = "sgd"} {
  return
}
func.func @dump() attributes {tsr.grad_step} {
  return
}
func.func @forward() {
  return
}
