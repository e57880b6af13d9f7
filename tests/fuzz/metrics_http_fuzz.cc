// libFuzzer target for the metrics endpoint's HTTP request parser: metrics_http_response on
// any request head.
//
// Properties checked, each an abort when violated:
//  1. the reply is a complete HTTP/1.1 response: a status line, headers ending in an empty
//     line, and a body exactly as long as its Content-Length says (or none, for a HEAD);
//  2. only a GET or HEAD of /metrics is answered 200.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "resolver/ops/metrics.h"
#include "resolver/query/query_engine.h"

namespace {

using namespace hg;

resolver::Config make_config() {
  return resolver::Config{};
}

std::size_t content_length(std::string_view headers) {
  constexpr std::string_view kName = "\r\nContent-Length: ";
  const std::size_t at = headers.find(kName);
  if (at == std::string_view::npos) std::abort();
  std::size_t n = 0;
  for (std::size_t i = at + kName.size(); i < headers.size() && headers[i] != '\r'; ++i) {
    if (headers[i] < '0' || headers[i] > '9') std::abort();
    n = n * 10 + static_cast<std::size_t>(headers[i] - '0');
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static resolver::Shared shared(make_config());
  const std::string_view head(reinterpret_cast<const char*>(data), size);
  const std::string reply = resolver::metrics_http_response(shared, head);
  if (!reply.starts_with("HTTP/1.1 ")) std::abort();
  const std::size_t end = reply.find("\r\n\r\n");
  if (end == std::string::npos) std::abort();
  const std::string_view headers(reply.data(), end);
  const std::size_t body = reply.size() - end - 4;
  const bool is_head = head.starts_with("HEAD ");
  // A HEAD answered 200 or 404 carries no body; every other reply carries exactly its length.
  if (body != content_length(headers) && !(is_head && body == 0)) std::abort();
  if (reply.starts_with("HTTP/1.1 200") &&
      !(head.starts_with("GET /metrics") || head.starts_with("HEAD /metrics")))
    std::abort();
  return 0;
}
