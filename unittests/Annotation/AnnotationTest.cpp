//===- AnnotationTest.cpp - annotation parser, binding and splits ---------===//

#include "tessera/Annotation/Annotation.h"

#include <gtest/gtest.h>

using namespace tessera::annotation;

namespace {

Annotation parseOk(const std::string &text) {
  auto r = parse(text);
  EXPECT_TRUE(bool(r)) << text << ": " << (r ? "" : r.message());
  return r ? *r : Annotation{};
}

std::string parseError(const std::string &text) {
  auto r = parse(text);
  EXPECT_FALSE(bool(r)) << text << " parsed as " << (r ? r->str() : "");
  return r ? "" : r.message();
}

BoundAnnotation bindOk(const std::string &text, std::vector<Shape> in,
                       std::vector<Shape> out) {
  auto r = bindTemplate(parseOk(text), in, out);
  EXPECT_TRUE(bool(r)) << text << ": " << (r ? "" : r.message());
  return r ? *r : BoundAnnotation{};
}

std::string bindError(const std::string &text, std::vector<Shape> in,
                      std::vector<Shape> out) {
  auto r = bindTemplate(parseOk(text), in, out);
  EXPECT_FALSE(bool(r)) << text;
  return r ? "" : r.message();
}

TEST(AnnotationParse, MatmulRoundTrips) {
  Annotation a = parseOk("b m k+, k+ n -> b m n");
  ASSERT_EQ(a.inputs.size(), 2u);
  ASSERT_EQ(a.outputs.size(), 1u);
  EXPECT_EQ(a.inputs[0].dims.size(), 3u);
  EXPECT_EQ(a.inputs[0].dims[2].atoms[0].name, "k");
  EXPECT_EQ(a.inputs[0].dims[2].atoms[0].mark, DimMark::Reduced);
  EXPECT_EQ(a.str(), "b m k+, k+ n -> b m n");
  EXPECT_FALSE(a.isTemplate());
}

TEST(AnnotationParse, AllForms) {
  Annotation a = parseOk("  *^ (h^ d) 1 , () -> *  h d, ...");
  EXPECT_TRUE(a.isTemplate());
  EXPECT_EQ(a.str(), "*^ (h^ d) 1, () -> * h d, ...");
  ASSERT_EQ(a.inputs[0].dims.size(), 2u);
  EXPECT_TRUE(a.inputs[0].dims[0].isGroup());
  EXPECT_TRUE(a.inputs[0].dims[1].atoms[0].isBroadcast());
  EXPECT_EQ(*a.inputs[0].ellipsisPos, 0u);
  EXPECT_EQ(a.inputs[0].ellipsisMark, DimMark::Frozen);
  EXPECT_TRUE(a.inputs[1].dims.empty());
  EXPECT_TRUE(a.outputs[1].repeat);
  // Reparsing the canonical text gives the same text.
  EXPECT_EQ(parseOk(a.str()).str(), a.str());
}

TEST(AnnotationParse, NoOperandsOrNoResults) {
  EXPECT_EQ(parseOk("-> a b").str(), "-> a b");
  EXPECT_EQ(parseOk("a b ->").str(), "a b ->");
}

TEST(AnnotationParse, MalformedGivesExactMessages) {
  EXPECT_EQ(parseError("b m k+, k+ n"),
            "invalid annotation 'b m k+, k+ n': expected '->' between "
            "operands and results");
  EXPECT_EQ(parseError("a -> b -> c"),
            "invalid annotation 'a -> b -> c': column 8: unexpected second "
            "'->'");
  EXPECT_EQ(parseError("a, -> a"),
            "invalid annotation 'a, -> a': column 3: empty entry (write '()' "
            "for a rank-0 tensor)");
  EXPECT_EQ(parseError("a 2 -> a"),
            "invalid annotation 'a 2 -> a': column 3: '2' is not a "
            "dimension: names start with a letter or '_', and the only "
            "number is '1'");
  EXPECT_EQ(parseError("a+^ -> a"),
            "invalid annotation 'a+^ -> a': column 3: a dimension takes at "
            "most one mark ('+' or '^')");
  EXPECT_EQ(parseError("(a b)+ -> a b"),
            "invalid annotation '(a b)+ -> a b': column 6: a mark applies to "
            "a name inside a group, not to the group");
  EXPECT_EQ(parseError("(a (b c)) -> a"),
            "invalid annotation '(a (b c)) -> a': column 4: groups do not "
            "nest");
  EXPECT_EQ(parseError("(a b -> a"),
            "invalid annotation '(a b -> a': column 1: unclosed '('");
  EXPECT_EQ(parseError("a) -> a"),
            "invalid annotation 'a) -> a': column 2: ')' without '('");
  EXPECT_EQ(parseError("(a) -> a"),
            "invalid annotation '(a) -> a': column 1: a group needs at least "
            "two dimensions");
  EXPECT_EQ(parseError("* a * -> a"),
            "invalid annotation '* a * -> a': column 5: at most one '*' per "
            "entry");
  EXPECT_EQ(parseError("(* a) -> a"),
            "invalid annotation '(* a) -> a': column 2: '*' cannot be part of "
            "a group");
  EXPECT_EQ(parseError("a b a -> a"),
            "invalid annotation 'a b a -> a': column 5: dimension 'a' "
            "appears twice in entry 0");
  EXPECT_EQ(parseError("a+, a^ -> a"),
            "invalid annotation 'a+, a^ -> a': dimension 'a' is marked both "
            "'+' and '^'");
  EXPECT_EQ(parseError("..., a -> a"),
            "invalid annotation '..., a -> a': column 1: '...' needs a "
            "preceding operand to repeat");
  EXPECT_EQ(parseError("a, ..., a -> a"),
            "invalid annotation 'a, ..., a -> a': column 8: '...' must be "
            "the last entry");
  EXPECT_EQ(parseError("1+ -> a"),
            "invalid annotation '1+ -> a': column 2: a broadcast dimension "
            "'1' takes no mark");
  EXPECT_EQ(parseError("+a -> a"),
            "invalid annotation '+a -> a': column 1: mark '+' must follow a "
            "name");
  EXPECT_EQ(parseError("a$ -> a"),
            "invalid annotation 'a$ -> a': column 2: expected a dimension "
            "name, '1', '(' or '*', found '$'");
}

TEST(AnnotationInstantiate, EllipsisBroadcastsLikeNumpy) {
  auto r = instantiate(parseOk("*, * -> *"), {{4, 1, 8}, {3, 8}}, {{4, 3, 8}});
  ASSERT_TRUE(bool(r)) << r.message();
  EXPECT_EQ(r->str(), "_0 1 _2, _1 _2 -> _0 _1 _2");
}

TEST(AnnotationInstantiate, MatmulBatchBroadcast) {
  auto r = instantiate(parseOk("* m k+, * k+ n -> * m n"),
                       {{2, 3, 4, 5}, {5, 6}}, {{2, 3, 4, 6}});
  ASSERT_TRUE(bool(r)) << r.message();
  EXPECT_EQ(r->str(), "_0 _1 m k+, k+ n -> _0 _1 m n");
}

TEST(AnnotationInstantiate, EllipsisMarkAndRepeat) {
  auto r =
      instantiate(parseOk("*+ c, ... -> c"), {{2, 3, 4}, {2, 3, 4}}, {{4}});
  ASSERT_TRUE(bool(r)) << r.message();
  EXPECT_EQ(r->str(), "_0+ _1+ c, _0+ _1+ c -> c");
}

TEST(AnnotationInstantiate, Errors) {
  auto r = instantiate(parseOk("* m k -> * m"), {{4}}, {{4}});
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(r.message(), "operand 0 has rank 1 but the annotation needs at "
                         "least 2 dimensions");
  r = instantiate(parseOk("a, b -> a"), {{1}}, {{1}});
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(r.message(), "the annotation has 2 operand(s), the op has 1");
  r = instantiate(parseOk("a, b, ... -> a"), {{1}}, {{1}});
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(r.message(), "the annotation expects at least 2 operands, found 1");
  r = instantiate(parseOk("* _0 -> _0"), {{2, 3}}, {{3}});
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(r.message(), "dimension name '_0' is reserved for '*' dimensions");
}

TEST(AnnotationBind, SizesAndGroups) {
  BoundAnnotation b =
      bindOk("b t (h d) -> b t h d", {{2, 8, 12}}, {{2, 8, 3, 4}});
  EXPECT_EQ(b.sizes.at("h"), 3);
  EXPECT_EQ(b.sizes.at("d"), 4);
  EXPECT_TRUE(b.isSplittable("h"));
  EXPECT_FALSE(b.isSplittable("d")) << "inner atom of a group";
  std::vector<std::string> names = {"b", "t", "h", "d"};
  EXPECT_EQ(b.names(), names);
}

TEST(AnnotationBind, Errors) {
  EXPECT_EQ(bindError("a k+, k+ b -> a b", {{2, 3}, {4, 5}}, {{2, 5}}),
            "dimension 'k' has size 3 elsewhere but 4 in operand 1");
  EXPECT_EQ(bindError("a 1 -> a", {{2, 3}}, {{2}}),
            "dimension 1 of operand 0 is annotated '1' but has size 3");
  EXPECT_EQ(bindError("a b -> a b", {{2}}, {{2, 1}}),
            "operand 0 has shape 2 (rank 1) but the annotation 'a b -> a b' "
            "gives it 2 dimension(s)");
  EXPECT_EQ(bindError("(h d) -> (h d)", {{12}}, {{12}}),
            "cannot infer the sizes in group '(h d)' of operand 0: give all "
            "but one of them elsewhere");
  EXPECT_EQ(bindError("(h d), h -> h", {{12}, {5}}, {{5}}),
            "group in operand 0 has size 12, which is not a multiple of 5");
  EXPECT_EQ(bindError("a b -> a", {{2, 3}}, {{2}}),
            "dimension 'b' is dropped by result 0 but not marked '+' or '^'");
  EXPECT_EQ(bindError("a -> a", {{-1}}, {{-1}}),
            "operand 0 has a dynamic dimension 0; annotations need static "
            "shapes");
}

TEST(AnnotationSplit, MatmulOneAndSeveralNames) {
  BoundAnnotation b =
      bindOk("* m k+, * k+ n -> * m n", {{8, 4, 6}, {6, 10}}, {{8, 4, 10}});
  auto s = split(b, {{"_0", 2}, {"n", 5}});
  ASSERT_TRUE(bool(s)) << s.message();
  EXPECT_EQ(s->pieces, 10);
  EXPECT_EQ(s->inputShapes[0], (Shape{4, 4, 6}));
  EXPECT_EQ(s->inputShapes[1], (Shape{6, 2}));
  EXPECT_EQ(s->outputShapes[0], (Shape{4, 4, 2}));
  EXPECT_FALSE(s->outputPartial[0]);

  auto k = split(b, {{"k", 3}});
  ASSERT_TRUE(bool(k)) << k.message();
  EXPECT_EQ(k->inputShapes[0], (Shape{8, 4, 2}));
  EXPECT_EQ(k->inputShapes[1], (Shape{2, 10}));
  EXPECT_EQ(k->outputShapes[0], (Shape{8, 4, 10}));
  EXPECT_TRUE(k->outputPartial[0]) << "a split reduced dim leaves partials";
}

TEST(AnnotationSplit, GroupSplitsOnItsFirstAtom) {
  BoundAnnotation b =
      bindOk("b t (h d) -> b t h d", {{2, 8, 12}}, {{2, 8, 3, 4}});
  auto s = split(b, {{"h", 3}});
  ASSERT_TRUE(bool(s)) << s.message();
  EXPECT_EQ(s->inputShapes[0], (Shape{2, 8, 4}));
  EXPECT_EQ(s->outputShapes[0], (Shape{2, 8, 1, 4}));
}

TEST(AnnotationSplit, MultiResultPartialOnlyWhereDropped) {
  // layer_norm_grad-like: dx keeps the batch dim, dw drops it.
  BoundAnnotation b = bindOk("*+ d^, *+ d^, d^ -> * d^, d^",
                             {{4, 6}, {4, 6}, {6}}, {{4, 6}, {6}});
  auto s = split(b, {{"_0", 2}});
  ASSERT_TRUE(bool(s)) << s.message();
  EXPECT_EQ(s->outputShapes[0], (Shape{2, 6}));
  EXPECT_FALSE(s->outputPartial[0]);
  EXPECT_TRUE(s->outputPartial[1]);
}

TEST(AnnotationSplit, InfeasibleSplitsAreErrors) {
  BoundAnnotation b =
      bindOk("b (h d) c^ -> b h d c^", {{2, 12, 5}}, {{2, 3, 4, 5}});
  auto check = [&](std::map<std::string, int64_t> f, const std::string &msg) {
    auto s = split(b, f);
    ASSERT_FALSE(bool(s));
    EXPECT_EQ(s.message(), msg);
  };
  check({{"c", 5}}, "dimension 'c' is marked '^' and cannot be split");
  check({{"d", 2}},
        "dimension 'd' is not the first of its group (h ...) and cannot be "
        "split");
  check({{"b", 4}}, "dimension 'b' of size 2 cannot be split into 4 pieces");
  check({{"x", 2}}, "unknown dimension 'x' (the op has b, h, d, c)");
  check({{"b", 0}}, "dimension 'b' cannot be split into 0 pieces");
  auto ok = split(b, {{"c", 1}});
  EXPECT_TRUE(bool(ok)) << "a factor of 1 is no split";
}

} // namespace
