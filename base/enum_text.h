// An enum's text form, written once: a table of (value, name) beside the
// enum's parser gives both directions and the choices an error names.
//
//   constexpr EnumText<Durability, 2> kDurabilityText{"durability", {{{Durability::kNormal, "normal"}, ...}}};
//   kDurabilityText.parse("full"); kDurabilityText.name(Durability::kFull);
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "base/quote.h"
#include "base/result.h"

namespace vri {

template <typename E, size_t N>
struct EnumText {
  std::string_view what;  // "durability", for "unknown durability "x" (use normal or full)"
  std::array<std::pair<E, std::string_view>, N> names;

  constexpr std::string_view name(E value) const {
    for (const auto& [v, text] : names) {
      if (v == value) return text;
    }
    return "?";
  }

  Result<E> parse(std::string_view text) const {
    for (const auto& [v, name] : names) {
      if (name == text) return v;
    }
    std::string choices;
    for (size_t i = 0; i < N; ++i) {
      choices += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i].second);
    }
    return Error::invalidArgument("unknown " + std::string(what) + " " + quoteForMessage(text) + " (use " + choices +
                                  ")");
  }
};

}  // namespace vri
