// Quantity: a Kubernetes-style resource amount ("500m", "2", "128Mi", "1.5Gi", "1e3").
//
// Stored as an integer number of milli-units, which holds every CPU amount
// and every memory amount up to 8 PiB exactly. Like Kubernetes' MilliValue(),
// parts finer than a milli-unit ("1n", "1u") round up. The suffix family of the
// input (binary, decimal or exponent) is kept so that format() answers in kind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace vri {

class Quantity {
 public:
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

  constexpr Quantity() = default;
  static constexpr Quantity fromMilli(int64_t milli, Format format = Format::kDecimalSI) {
    return Quantity(milli, format);
  }
  static Quantity fromValue(int64_t value, Format format = Format::kDecimalSI);

  // Strict parse of Kubernetes' quantity grammar: an unsigned decimal number
  // ("2", "0.5", ".5", "+2") followed by nothing, a decimal SI suffix
  // (n u m k M G T P E), a binary SI suffix (Ki Mi Gi Ti Pi Ei) or a decimal
  // exponent (e3, E-2). Rejects signs other than '+', whitespace, unknown or
  // wrongly cased suffixes ("1K", "1mi"), bare suffixes and amounts too large
  // to hold, quoting the input.
  static Result<Quantity> parse(std::string_view text);

  int64_t milliValue() const { return milli_; }
  // Whole units, rounded up as Kubernetes' Value() does ("1500m" -> 2).
  int64_t value() const;
  Format format() const { return format_; }

  // The canonical form: "<n>m" when there is a fractional unit, otherwise the
  // largest suffix of the input's family that divides the amount exactly
  // ("1Gi", "1536", "2k", "2e3").
  std::string toString() const;

  friend bool operator==(const Quantity& a, const Quantity& b) { return a.milli_ == b.milli_; }
  friend auto operator<=>(const Quantity& a, const Quantity& b) { return a.milli_ <=> b.milli_; }

 private:
  constexpr Quantity(int64_t milli, Format format) : milli_(milli), format_(format) {}

  int64_t milli_ = 0;
  Format format_ = Format::kDecimalSI;
};

}  // namespace vri
