//===- Options.h - reading the C API's growable options structs -*- C++ -*-===//
//
// Every options struct of loom/runtime.h opens with `size_t struct_size`,
// the sizeof the caller compiled against. The library refuses a size
// below the first versioned layout and reads only the fields that fit, so
// structs grow at their end without breaking compiled callers.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_OPTIONS_H
#define LOOM_RUNTIME_OPTIONS_H

#include "loom/runtime.h"
#include "runtime/src/Session.h"

#include <cstddef>
#include <string>
#include <type_traits>

namespace loom::runtime {

/// The bytes of struct `T` up to the end of its member `field`: a layout's
/// size (the first versioned layout ends at its last field then).
#define LOOM_OPTIONS_END(T, field) (offsetof(T, field) + sizeof(T::field))

/// `options->field` when the caller's struct has it, else `fallback`.
#define LOOM_OPTION(options, field, fallback)                                  \
  ((options) &&                                                                \
           offsetof(                                                           \
               std::remove_cv_t<std::remove_pointer_t<decltype(options)>>,     \
               field) +                                                        \
                   sizeof((options)->field) <=                                 \
               (options)->struct_size                                          \
       ? (options)->field                                                      \
       : (fallback))

/// Null when `options` is null (the defaults) or its struct_size covers at
/// least `oldest` bytes; otherwise LOOM_INVALID_ARGUMENT naming `api` and
/// the struct `name`.
template <typename T>
loom_status checkOptionsSize(const T *options, size_t oldest, const char *api,
                             const char *name) {
  if (!options || options->struct_size >= oldest)
    return nullptr;
  return makeStatus(LOOM_INVALID_ARGUMENT,
                    std::string(api) + ": " + name + ".struct_size is " +
                        std::to_string(options->struct_size) + ", at least " +
                        std::to_string(oldest) + " expected (call " + name +
                        "_initialize before setting fields)");
}

} // namespace loom::runtime

#endif // LOOM_RUNTIME_OPTIONS_H
