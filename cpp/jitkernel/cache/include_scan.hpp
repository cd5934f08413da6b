// The #include scan behind the include closure (include_closure.hpp): the
// names a text's #include, #include_next and __has_include directives give,
// found without preprocessing. Over-approximates, which is always safe for a
// cache key: directives in inactive #if branches count. Comments, string
// literals and line splices are honoured so that nothing real is skipped; a
// name given by a macro (#include HEADER) is reported as such.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace jk::cache {

struct IncludeDirective {
  enum class Form { Quoted, Angle, Computed };
  Form form = Form::Quoted;
  bool every_folder = false;  // #include_next / __has_include_next: looked for in every folder
  std::string name;           // the header name; for Computed, the directive's text
};

// The #include, #include_next and __has_include(...) names of `text`, in
// order, including those in inactive #if branches and in #define bodies.
std::vector<IncludeDirective> scan_includes(std::string_view text);

// The header names scan_includes finds in `source` ("cuda_fp16.h",
// "my/helper.h"), without empty or computed ones.
std::vector<std::string> include_targets(std::string_view source);

}  // namespace jk::cache
