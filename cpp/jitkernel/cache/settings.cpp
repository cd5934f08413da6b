// Parsing of the disk cache's environment settings (settings.hpp).
#include "jitkernel/cache/settings.hpp"

#include <cctype>
#include <cstring>
#include <limits>

namespace jk::cache {

std::optional<bool> parse_enabled(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "1") == 0) return true;
  if (std::strcmp(value, "0") == 0) return false;
  return std::nullopt;
}

std::optional<std::uint64_t> parse_max_bytes(const std::string& value) {
  std::size_t i = 0;
  std::uint64_t number = 0;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  for (; i < value.size() && std::isdigit(static_cast<unsigned char>(value[i])); ++i) {
    std::uint64_t digit = static_cast<std::uint64_t>(value[i] - '0');
    if (number > (kMax - digit) / 10) return std::nullopt;
    number = number * 10 + digit;
  }
  if (i == 0) return std::nullopt;
  std::string suffix = value.substr(i);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (!suffix.empty()) {
    const char* units = "KMGT";
    const char* unit = std::strchr(units, suffix[0]);
    const std::string rest = suffix.substr(1);
    if (unit == nullptr || !(rest.empty() || rest == "B" || rest == "IB")) return std::nullopt;
    shift = 10 * static_cast<int>(unit - units + 1);
  }
  if (shift > 0 && number > (kMax >> shift)) return std::nullopt;
  return number << shift;
}

std::optional<std::int64_t> parse_seconds(const std::string& value) {
  constexpr std::int64_t kSecond = 1000000000, kMaxSeconds = 86400;
  std::size_t i = 0;
  std::int64_t seconds = 0;
  for (; i < value.size() && std::isdigit(static_cast<unsigned char>(value[i])); ++i) {
    seconds = seconds * 10 + (value[i] - '0');
    if (seconds > kMaxSeconds) return std::nullopt;
  }
  if (i == 0) return std::nullopt;
  std::int64_t fraction = 0, scale = kSecond;
  if (i < value.size() && value[i] == '.') {
    for (++i; i < value.size() && std::isdigit(static_cast<unsigned char>(value[i])); ++i) {
      if (scale >= 10) {
        scale /= 10;
        fraction += (value[i] - '0') * scale;
      }
    }
  }
  if (i != value.size()) return std::nullopt;
  const std::int64_t total = seconds * kSecond + fraction;
  if (total > kMaxSeconds * kSecond) return std::nullopt;
  return total;
}

std::vector<std::string> split_folders(const std::string& value) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find(':', start);
    if (end == std::string::npos) end = value.size();
    if (end > start) out.push_back(value.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace jk::cache
