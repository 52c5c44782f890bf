//===- DiscardableAttrs.td - declaring discardable attributes -*- tablegen -*-===//
//
// A Tessera dialect declares each of its discardable attributes once, as a
// TesseraDiscardableAttr in one list. From that list the dialect gets:
//   - upstream's typed helpers (Dialect.discardableAttrs, through
//     DiscardableAttrDag), e.g. DistDialect::RankAttrHelper;
//   - the table of its documentation (DiscardableAttrDocTable), so the
//     generated docs/Dialects/*.md list every attribute;
//   - the table its verifier walks (DiscardableAttrTable): the name, where
//     the attribute may appear and the kind of value, checked by
//     tessera::verifyDiscardableAttr before the dialect's own checks.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_COMMON_DISCARDABLEATTRS_TD
#define TESSERA_DIALECT_COMMON_DISCARDABLEATTRS_TD

// `where` is a tessera::AttrPlacement enumerator: Module, Func, Op (an op in
// a function body), Arg (a function argument), Result (a function result) or
// ArgOrResult. `storage` is the attribute class of the value; `form` names it
// in diagnostics ("'dist.rank' must be <form>, found ...").
class TesseraDiscardableAttr<string attrName, string storage, string where,
                             string form, string summary> {
  string name = attrName;
  string cppStorage = storage;
  string placement = where;
  string expected = form;
  string doc = summary;
}

// Dialect.discardableAttrs from a list.
class DiscardableAttrDag<list<TesseraDiscardableAttr> attrs> {
  dag value = !dag(ins, !foreach(a, attrs, a.cppStorage),
                   !foreach(a, attrs, a.name));
}

class DiscardablePlacementDoc<string where> {
  string value = !cond(!eq(where, "Module") : "`builtin.module`",
                       !eq(where, "Func") : "`func.func`",
                       !eq(where, "Op") : "an op",
                       !eq(where, "Arg") : "function argument",
                       !eq(where, "Result") : "function result",
                       !eq(where, "ArgOrResult") : "function argument or result");
}

// The Markdown table of a dialect description (indented like the
// description's text, which mlir-tblgen re-indents as a whole).
class DiscardableAttrDocTable<string dialect,
                              list<TesseraDiscardableAttr> attrs> {
  string value = "\n\n    | attribute | on | value | meaning |\n"
    # "    |---|---|---|---|\n"
    # !interleave(!foreach(a, attrs, "    | `" # dialect # "." # a.name
        # "` | " # DiscardablePlacementDoc<a.placement>.value # " | "
        # !subst("<", "\\<", a.expected) # " | " # a.doc # " |"), "\n")
    # "\n";
}

// The verifier's table, for the dialect's extraClassDeclaration.
class DiscardableAttrTable<string dialect,
                           list<TesseraDiscardableAttr> attrs> {
  string value = "\n  static constexpr ::tessera::DiscardableAttrInfo "
    # "kDiscardableAttrs[] = {\n"
    # !interleave(!foreach(a, attrs, "    {\"" # dialect # "." # a.name
        # "\", ::tessera::AttrPlacement::" # a.placement # ", \""
        # !subst("\"", "\\\"", a.expected) # "\", &::tessera::attrIsA<"
        # a.cppStorage # ">}"), ",\n") # "};\n";
}

#endif // TESSERA_DIALECT_COMMON_DISCARDABLEATTRS_TD
