#include "wire/result.h"

namespace hg::wire {

std::string_view to_string(ParseError e) noexcept {
  switch (e) {
    case ParseError::Truncated:
      return "truncated";
    case ParseError::ShortHeader:
      return "short-header";
    case ParseError::LabelTooLong:
      return "label-too-long";
    case ParseError::NameTooLong:
      return "name-too-long";
    case ParseError::BadLabelType:
      return "bad-label-type";
    case ParseError::PointerNotBackward:
      return "pointer-not-backward";
    case ParseError::PointerIntoHeader:
      return "pointer-into-header";
    case ParseError::TooManyPointers:
      return "too-many-pointers";
    case ParseError::CountMismatch:
      return "count-mismatch";
    case ParseError::TrailingBytes:
      return "trailing-bytes";
    case ParseError::RdataLength:
      return "rdata-length";
    case ParseError::BadOpt:
      return "bad-opt";
    case ParseError::MultipleOpt:
      return "multiple-opt";
    case ParseError::BadEscape:
      return "bad-escape";
    case ParseError::EmptyLabel:
      return "empty-label";
    case ParseError::BadText:
      return "bad-text";
  }
  return "unknown";
}

}  // namespace hg::wire
