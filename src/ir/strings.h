// Building text without iostreams. The extension can meet a different libstdc++ at run time (torch's
// process on the GPU image): numeric ostream inserts were seen to crash there, so messages are built
// with to_string/snprintf, which need no locale facets.
#pragma once
#include <concepts>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace mk {

class StrBuf {
 public:
  StrBuf& operator<<(std::string_view v) { s_ += v; return *this; }
  StrBuf& operator<<(const std::string& v) { s_ += v; return *this; }
  StrBuf& operator<<(const char* v) { s_ += v; return *this; }
  StrBuf& operator<<(char v) { s_ += v; return *this; }
  StrBuf& operator<<(bool v) { s_ += v ? '1' : '0'; return *this; }
  template <std::integral T>
  StrBuf& operator<<(T v) { s_ += std::to_string(v); return *this; }
  StrBuf& operator<<(double v) {  // like an ostream's default: 6 significant digits
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    s_ += buf;
    return *this;
  }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

// "a, b,c" -> {"a", "b", "c"}: split at `sep`, trim spaces; empty fields are kept.
inline std::vector<std::string> split_trimmed(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    std::string tok = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    tok.erase(0, tok.find_first_not_of(' '));
    tok.erase(tok.find_last_not_of(' ') + 1);
    out.push_back(std::move(tok));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

}  // namespace mk
