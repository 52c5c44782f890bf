//===- EnumNames.h - One spelling table per enum, read both ways -*- C++
//-*-===//
//
// An enum whose values are spelled in files and reports (collective kinds,
// block kinds, schedule names, RVD primitives) keeps its spellings in one
// table that both the printer and the parser read, so the two cannot drift
// apart and a new value is added in one place:
//
//   constexpr support::EnumName<Kind> kKindNames[] = {{Kind::A, "a"}, ...};
//   const char *kindName(Kind k) { return support::enumName(kKindNames, k); }
//   std::optional<Kind> parseKind(std::string_view s) {
//     return support::parseEnum(kKindNames, s);
//   }
//
// Plain C++17, header only.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SUPPORT_ENUMNAMES_H
#define TESSERA_SUPPORT_ENUMNAMES_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace tessera::support {

template <typename Enum> struct EnumName {
  Enum value;
  const char *name;
};

/// The spelling of `value`, or "?" for a value the table lacks.
template <typename Enum, std::size_t N>
constexpr const char *enumName(const EnumName<Enum> (&table)[N], Enum value) {
  for (const EnumName<Enum> &entry : table)
    if (entry.value == value)
      return entry.name;
  return "?";
}

/// The value spelled `name`, or nullopt.
template <typename Enum, std::size_t N>
std::optional<Enum> parseEnum(const EnumName<Enum> (&table)[N],
                              std::string_view name) {
  for (const EnumName<Enum> &entry : table)
    if (name == entry.name)
      return entry.value;
  return std::nullopt;
}

} // namespace tessera::support

#endif // TESSERA_SUPPORT_ENUMNAMES_H
