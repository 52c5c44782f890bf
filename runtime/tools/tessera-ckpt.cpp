//===- tessera-ckpt.cpp - Reading training checkpoints --------------------===//
//
// tessera-ckpt info PATH: what a checkpoint written by OUT/run
// --checkpoint-dir holds (docs/training.md). PATH is a checkpoint
// (DIR/step-NNNNNNNN) or the checkpoint directory, whose newest complete
// checkpoint is read. Only the files' headers are read. A PyTorch state
// dict is written by the program itself: OUT/run --resume DIR --steps S
// --save FILE with S the checkpoint's step (docs/training.md, "Merging").
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"

#include <cstring>
#include <exception>
#include <iostream>

namespace {

const char *kUsage = "usage: tessera-ckpt info PATH\n"
                     "  PATH: a checkpoint (DIR/step-NNNNNNNN) or a "
                     "--checkpoint-dir (its newest one)\n";

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 &&
      (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    std::cout << kUsage;
    return 0;
  }
  if (argc != 3 || std::strcmp(argv[1], "info") != 0) {
    std::cerr << "tessera-ckpt: expected 'info PATH'\n" << kUsage;
    return 2;
  }
  try {
    tessera::rt::describeCheckpoint(argv[2], std::cout);
  } catch (const std::exception &e) {
    std::cerr << "tessera-ckpt: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
