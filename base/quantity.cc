#include "base/quantity.h"

#include <array>
#include <cstdlib>
#include <limits>
#include <utility>

#include "base/quote.h"

namespace vri {

namespace {

using Wide = __int128;  // exact intermediate arithmetic before range checks
constexpr Wide kMaxMilli = std::numeric_limits<int64_t>::max();

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// How a suffix scales the number: by 10^power or by 2^power.
struct Scale {
  Quantity::Format format;
  int power;
};

struct NamedScale {
  std::string_view suffix;
  Scale scale;
};

constexpr std::array<NamedScale, 16> kSuffixes = {{
    {"n", {Quantity::Format::kDecimalSI, -9}},
    {"u", {Quantity::Format::kDecimalSI, -6}},
    {"m", {Quantity::Format::kDecimalSI, -3}},
    {"", {Quantity::Format::kDecimalSI, 0}},
    {"k", {Quantity::Format::kDecimalSI, 3}},
    {"M", {Quantity::Format::kDecimalSI, 6}},
    {"G", {Quantity::Format::kDecimalSI, 9}},
    {"T", {Quantity::Format::kDecimalSI, 12}},
    {"P", {Quantity::Format::kDecimalSI, 15}},
    {"E", {Quantity::Format::kDecimalSI, 18}},
    {"Ki", {Quantity::Format::kBinarySI, 10}},
    {"Mi", {Quantity::Format::kBinarySI, 20}},
    {"Gi", {Quantity::Format::kBinarySI, 30}},
    {"Ti", {Quantity::Format::kBinarySI, 40}},
    {"Pi", {Quantity::Format::kBinarySI, 50}},
    {"Ei", {Quantity::Format::kBinarySI, 60}},
}};

Result<Scale> parseSuffix(std::string_view suffix) {
  for (const auto& named : kSuffixes) {
    if (named.suffix == suffix) return named.scale;
  }
  // A decimal exponent: e or E, an optional sign, then digits ("E" alone is exa).
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view digits = suffix.substr(1);
    bool negative = false;
    if (digits[0] == '+' || digits[0] == '-') {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (digits.empty() || digits.size() > 3) return Error::invalidArgument("unknown suffix " + quoteForMessage(suffix));
    int power = 0;
    for (char c : digits) {
      if (!isDigit(c)) return Error::invalidArgument("unknown suffix " + quoteForMessage(suffix));
      power = power * 10 + (c - '0');
    }
    return Scale{Quantity::Format::kDecimalExponent, negative ? -power : power};
  }
  return Error::invalidArgument("unknown suffix " + quoteForMessage(suffix) +
                                " (use n u m k M G T P E, Ki Mi Gi Ti Pi Ei, or an exponent such as e3)");
}

// ceil(numerator / denominator) for non-negative values.
Wide divideRoundingUp(Wide numerator, Wide denominator) { return (numerator + denominator - 1) / denominator; }

// 10^power, or -1 when it is far beyond any representable quantity.
Wide powerOfTen(int power) {
  Wide result = 1;
  for (int i = 0; i < power; ++i) {
    if (result > kMaxMilli * 10) return -1;  // far beyond any representable quantity
    result *= 10;
  }
  return result;
}

// mantissa * 10^shift, rounded up; -1 when the result exceeds kMaxMilli.
Wide scaleByPowerOfTen(Wide mantissa, int shift) {
  if (mantissa == 0) return 0;
  if (shift >= 0) {
    const Wide factor = powerOfTen(shift);
    if (factor < 0 || mantissa > kMaxMilli / factor) return -1;
    return mantissa * factor;
  }
  const Wide divisor = powerOfTen(-shift);
  if (divisor < 0) return 1;  // a positive amount far below one milli-unit rounds up to one
  return divideRoundingUp(mantissa, divisor);
}

int64_t wholeUnitsRoundingUp(int64_t milli) {
  const int64_t units = milli / 1000;
  return (milli % 1000 > 0) ? units + 1 : units;
}

}  // namespace

Quantity Quantity::fromValue(int64_t value, Format format) { return Quantity(value * 1000, format); }

int64_t Quantity::value() const { return wholeUnitsRoundingUp(milli_); }

Result<Quantity> Quantity::parse(std::string_view text) {
  const auto fail = [&](std::string why) {
    return Error::invalidArgument("invalid quantity " + quoteForMessage(text) + ": " + std::move(why));
  };
  if (text.empty()) return fail("empty");
  size_t pos = 0;
  if (text[0] == '-') return fail("negative amounts are not allowed");
  if (text[0] == '+') ++pos;

  std::string digits;  // integer and fraction digits without the point
  int fraction_digits = 0;
  bool any_digit = false;
  while (pos < text.size() && isDigit(text[pos])) {
    digits += text[pos++];
    any_digit = true;
  }
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    if (pos >= text.size() || !isDigit(text[pos])) return fail("a decimal point must be followed by digits");
    while (pos < text.size() && isDigit(text[pos])) {
      digits += text[pos++];
      ++fraction_digits;
      any_digit = true;
    }
  }
  if (!any_digit) return fail("no number before the suffix");

  auto scale = parseSuffix(text.substr(pos));
  if (!scale.ok()) return fail(scale.error().message());

  // Leading zeros carry no value; the rest must fit in the wide intermediate.
  const size_t significant = digits.find_first_not_of('0');
  Wide mantissa = 0;
  if (significant != std::string::npos) {
    if (digits.size() - significant > 30) return fail("too large");
    for (size_t i = significant; i < digits.size(); ++i) mantissa = mantissa * 10 + (digits[i] - '0');
  }

  Wide milli = 0;
  if (scale->format == Format::kBinarySI) {
    // mantissa * 2^power * 1000 / 10^fraction_digits, rounded up.
    const Wide scaled = mantissa * 1000;
    if (mantissa != 0 && (scaled >> (126 - scale->power)) != 0) return fail("too large");
    milli = scaleByPowerOfTen(scaled << scale->power, -fraction_digits);
  } else {
    milli = scaleByPowerOfTen(mantissa, scale->power + 3 - fraction_digits);
  }
  if (milli < 0 || milli > kMaxMilli) return fail("too large (the largest is 8 PiB or 9.2P)");
  return Quantity(static_cast<int64_t>(milli), scale->format);
}

std::string Quantity::toString() const {
  if (milli_ % 1000 != 0) return std::to_string(milli_) + "m";
  int64_t units = milli_ / 1000;
  if (units == 0) return "0";
  if (format_ == Format::kBinarySI && units % 1024 == 0) {
    static constexpr std::array<std::string_view, 6> kBinary = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    size_t step = 0;
    units /= 1024;
    while (step + 1 < kBinary.size() && units % 1024 == 0) {
      units /= 1024;
      ++step;
    }
    return std::to_string(units) + std::string(kBinary[step]);
  }
  int power = 0;
  while (units % 1000 == 0 && power < 18) {
    units /= 1000;
    power += 3;
  }
  if (power == 0) return std::to_string(units);
  if (format_ == Format::kDecimalExponent) return std::to_string(units) + "e" + std::to_string(power);
  static constexpr std::array<std::string_view, 6> kDecimal = {"k", "M", "G", "T", "P", "E"};
  return std::to_string(units) + std::string(kDecimal[static_cast<size_t>(power / 3 - 1)]);
}

}  // namespace vri
