// fmt's compiled part, built in this project (cmake/static_deps.cmake: Debian ships libfmt only
// as a shared object, and `mtrain` must map no C++ shared object to start in about the time of
// exec).
//
// Protocol (fmt 9): format.h declares the library's functions and format-inl.h defines them.
// Included once without FMT_HEADER_ONLY, format-inl.h gives every non-template function
// (vformat, vprint, throw_format_error, is_printable, format_system_error, ...) one ordinary
// definition, here. Templates need their instances named: the ones below are those whose bodies
// exist only in format-inl.h, so no other translation unit can instantiate them (format.h even
// forbids it for thousands_sep_impl and decimal_point_impl with `extern template`). The other two
// templates libfmt.so instantiates, buffer<Char>::append and detail::vformat_to, have their bodies
// in format.h and are instantiated wherever they are used. fmt/os.h (file, buffered_file,
// ostream: libfmt's os.cc) is not built: nothing here includes it, and a use would fail to link.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

// Shortest round-trip float and double output: every `{}` of a floating-point value.
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

// Locale-aware output (`{:L}`, the fmt::format(std::locale, ...) overloads): the locale travels
// type-erased in locale_ref so that core.h need not include <locale>.
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;

}  // namespace detail
FMT_END_NAMESPACE
