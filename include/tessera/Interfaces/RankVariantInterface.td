//===- RankVariantInterface.td - attributes that name a rank -*- tablegen -*-===//
//
// The attributes of an op whose values depend on the rank that runs it: the
// offsets of a local slice, the group of a collective, the peer of a send.
// Two ranks whose programs differ only in such values share one compiled
// program (dist-share-rank-programs), which picks the values at run time.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_INTERFACES_RANKVARIANTINTERFACE_TD
#define TESSERA_INTERFACES_RANKVARIANTINTERFACE_TD

include "mlir/IR/OpBase.td"

def RankVariantOpInterface : OpInterface<"RankVariantOpInterface"> {
  let cppNamespace = "::tessera";
  let description = [{
    Names the inherent attributes of an op that may differ between the
    ranks running "the same" op: in per-rank programs that are otherwise
    equal op by op, only these attributes may differ for the ranks to share
    one program. Each such attribute is an integer (`IntegerAttr`) or an
    integer array (`DenseI64ArrayAttr`), so that the emitted program can
    hold one value per rank in a table. Every other attribute, operand and
    type must be equal, which is what makes sharing safe: an op that is not
    rank-variant never differs silently.
  }];

  let methods = [
    StaticInterfaceMethod<
      /*desc=*/"The names of the rank-dependent inherent attributes.",
      /*retTy=*/"::llvm::ArrayRef<::llvm::StringRef>",
      /*methodName=*/"getRankVariantAttrNames">,
  ];
}

#endif // TESSERA_INTERFACES_RANKVARIANTINTERFACE_TD
