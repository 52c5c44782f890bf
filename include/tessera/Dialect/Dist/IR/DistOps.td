//===- DistOps.td - dist operations -------------------------*- tablegen -*-===//
//
// Communication of the per-rank program: each op runs on one rank, on its
// local tensors, over an explicit group of ranks.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_DIST_IR_DISTOPS_TD
#define TESSERA_DIALECT_DIST_IR_DISTOPS_TD

include "tessera/Dialect/Dist/IR/DistDialect.td"
include "tessera/Dialect/Dist/IR/DistAttrs.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "tessera/Interfaces/RankVariantInterface.td"
include "tessera/Interfaces/RuntimeCallInterface.td"

//===----------------------------------------------------------------------===//
// Types, enums and effects
//===----------------------------------------------------------------------===//

def Dist_Tensor : StaticShapeTensorOf<[F32, F64, BF16, F16, I32, I64, I1]>;

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the ranks' values", [
      I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
      I32EnumAttrCase<"min", 2>]> {
  let cppNamespace = "::tessera::dist";
}

// Every rank of a group must execute its side of a communication, in the
// same order as its peers: an effect on this resource keeps communication
// from being erased when its result is unused on one rank, merged, or
// reordered with other communication.
def Dist_CommResource : Resource<"::tessera::dist::CommResource">;
def Dist_Communicates : MemoryEffects<[MemRead<Dist_CommResource>,
                                       MemWrite<Dist_CommResource>]>;

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic,
         !listconcat(traits, [Dist_Communicates,
                              DeclareOpInterfaceMethods<RuntimeCallOpInterface>])> {
  // Op-specific prose; every op's docs end with the common note on dist.rvd.
  string opDescription = "";
  // The runtime call (Comm.h), as in Tessera_Op (TesseraOpBase.td).
  string rtCallee = mnemonic;
  code rtArgs = [{.operands()}];
  let extraClassDefinition = [{
    ::tessera::RuntimeCall $cppClass::getRuntimeCall() {
      return ::tessera::RuntimeCall(getOperation(), "}] # rtCallee # [{")}] #
      rtArgs # [{;
    }
  }];
  let description = opDescription # [{

    Like every dist op it may carry a `dist.rvd` string: the layout
    transition this op implements, e.g. `"V(tp) -> R(tp)"`.
  }];
  let hasVerifier = 1;
}

// The group, root and peer attributes differ between the ranks that run
// the same op (see RankVariantOpInterface; defined in DistOps.cpp).
def Dist_RankVariant : DeclareOpInterfaceMethods<RankVariantOpInterface,
    ["getRankVariantAttrNames"]>;

// A collective over `ranks`: sorted, unique, non-negative, non-empty, and
// including the executing rank.
class Dist_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits,
                                    [Dist_RankVariant])> {
  let extraClassDeclaration = [{
    /// The number of ranks in the group.
    int64_t getGroupSize() { return getRanks().size(); }
  }];
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce",
    [AllTypesMatch<["input", "result"]>]> {
  let rtArgs = [{.operands().ints(getRanks(), "ranks")
                    .enumValue("ReduceKind", stringifyReductionKind(getKind()))}];
  let summary = "combine the ranks' tensors elementwise; every rank gets it";
  let opDescription = [{
    Each rank of `ranks` gets the elementwise `kind` (sum, max or min;
    default sum) of the `input`s of all of them. Implements `V -> R` along
    the group's axes.

    ```mlir
    %r = dist.all_reduce %x {ranks = array<i64: 0, 1>} : tensor<4x8xf32>
    %m = dist.all_reduce %x kind max {ranks = array<i64: 0, 1>} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, DenseI64ArrayAttr:$ranks,
                       DefaultValuedAttr<Dist_ReductionKind,
                                         "ReductionKind::sum">:$kind);
  let results = (outs Dist_Tensor:$result);
  let assemblyFormat = [{
    $input (`kind` $kind^)? attr-dict `:` type($input)
  }];
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather"> {
  let rtArgs = [{.operands().ints(getRanks(), "ranks").i64(getDim())}];
  let summary = "concatenate the ranks' tensors along a dimension";
  let opDescription = [{
    Each rank of `ranks` gets the `input`s of all of them concatenated along
    `dim`, in the order of `ranks`: the result's `dim` is the operand's times
    the number of ranks. Implements `D<dim> -> R`.

    ```mlir
    %g = dist.all_gather %x {dim = 1 : i64, ranks = array<i64: 0, 1>} : tensor<4x4xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, DenseI64ArrayAttr:$ranks,
                       I64Attr:$dim);
  let results = (outs Dist_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let builders = [
    // Builds the op with the result type the verifier expects.
    OpBuilder<(ins "::mlir::Value":$input, "::llvm::ArrayRef<int64_t>":$ranks,
                   "int64_t":$dim)>
  ];
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter"> {
  let rtArgs = [{.operands().ints(getRanks(), "ranks").i64(getDim())
                    .enumValue("ReduceKind", stringifyReductionKind(getKind()))}];
  let summary = "combine the ranks' tensors and give each rank one piece";
  let opDescription = [{
    Combines the `input`s of all ranks elementwise by `kind` (default sum),
    splits the result along `dim` into as many equal pieces as there are
    ranks, and gives the i-th rank of `ranks` the i-th piece. `dim` must be
    divisible by the number of ranks. Implements `V -> D<dim>`.

    ```mlir
    %s = dist.reduce_scatter %x {dim = 1 : i64, ranks = array<i64: 0, 1>} : tensor<4x8xf32> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, DenseI64ArrayAttr:$ranks,
                       I64Attr:$dim,
                       DefaultValuedAttr<Dist_ReductionKind,
                                         "ReductionKind::sum">:$kind);
  let results = (outs Dist_Tensor:$result);
  let assemblyFormat = [{
    $input (`kind` $kind^)? attr-dict `:` type($input) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::llvm::ArrayRef<int64_t>":$ranks,
                   "int64_t":$dim)>
  ];
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all"> {
  let rtArgs = [{.operands().ints(getRanks(), "ranks").i64(getSplitDim())
                    .i64(getConcatDim())}];
  let summary = "exchange pieces: split one dimension, concatenate another";
  let opDescription = [{
    Each rank splits its `input` along `split_dim` into as many equal pieces
    as there are ranks and sends the j-th piece to the j-th rank of `ranks`;
    it concatenates the pieces it receives along `concat_dim`, in the order
    of `ranks`. `split_dim` must be divisible by the number of ranks and
    differ from `concat_dim`. Implements `D<concat_dim> -> D<split_dim>`.

    ```mlir
    %a = dist.all_to_all %x {concat_dim = 1 : i64, ranks = array<i64: 0, 1>, split_dim = 0 : i64} : tensor<4x4xf32> -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, DenseI64ArrayAttr:$ranks,
                       I64Attr:$split_dim, I64Attr:$concat_dim);
  let results = (outs Dist_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::llvm::ArrayRef<int64_t>":$ranks,
                   "int64_t":$splitDim, "int64_t":$concatDim)>
  ];
}

def Dist_BroadcastOp : Dist_CollectiveOp<"broadcast",
    [AllTypesMatch<["input", "result"]>]> {
  let rtArgs = [{.operands().ints(getRanks(), "ranks")
                    .i64(int64_t(getRoot()), "root")}];
  let summary = "every rank gets the root's tensor";
  let opDescription = [{
    Each rank of `ranks` gets the `input` of rank `root`, which must be one
    of `ranks`. The other ranks' `input` gives only the type (its values are
    not read).

    ```mlir
    %b = dist.broadcast %x {ranks = array<i64: 0, 1>, root = 0 : i64} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, DenseI64ArrayAttr:$ranks,
                       I64Attr:$root);
  let results = (outs Dist_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Point to point
//===----------------------------------------------------------------------===//

def Dist_SendOp : Dist_Op<"send", [Dist_RankVariant]> {
  let rtArgs = [{.operands().i64(int64_t(getPeer()), "peer")
                    .i64(int64_t(getTag()), "tag")}];
  let summary = "send a tensor to one rank";
  let opDescription = [{
    Sends `input` to rank `peer`. It matches the `dist.recv` on `peer` whose
    `peer` is this rank and whose `tag` is the same; the two tensor types
    must agree (checked where both ranks' programs are known). Pipeline
    stages exchange activations and gradients this way.

    ```mlir
    dist.send %x {peer = 3 : i64, tag = 7 : i64} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Dist_Tensor:$input, I64Attr:$peer, I64Attr:$tag);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Dist_RecvOp : Dist_Op<"recv", [Dist_RankVariant]> {
  let rtArgs = [{.shape(getType()).dtype(getType())
                    .i64(int64_t(getPeer()), "peer").i64(int64_t(getTag()), "tag")}];
  let summary = "receive a tensor from one rank";
  let opDescription = [{
    Receives the tensor that rank `peer` sends with the same `tag` (see
    `dist.send`).

    ```mlir
    %r = dist.recv {peer = 0 : i64, tag = 7 : i64} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$tag);
  let results = (outs Dist_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

#endif // TESSERA_DIALECT_DIST_IR_DISTOPS_TD
