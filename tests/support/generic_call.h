// A gRPC call by method name with raw bytes, as the CRI proxy's tests make
// them: writes its messages, half-closes, and collects the replies, the
// status and both kinds of metadata.
#pragma once

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <future>
#include <string>
#include <utility>
#include <vector>

namespace vri::testing {

inline std::string text(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  (void)buffer.Dump(&slices);
  std::string out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

inline grpc::ByteBuffer buffer(const std::string& s) {
  grpc::Slice slice(s);
  return grpc::ByteBuffer(&slice, 1);
}

// A caller that writes its messages, half-closes and collects everything.
class GenericCall final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  GenericCall(grpc::GenericStub& stub, grpc::ClientContext& context, const std::string& method,
              std::vector<std::string> messages)
      : context_(context), messages_(std::move(messages)) {
    stub.PrepareBidiStreamingCall(&context, method, grpc::StubOptions(), this);
    StartRead(&in_);
    writeNext();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok) writeNext();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    replies.push_back(text(in_));
    StartRead(&in_);
  }
  void OnDone(const grpc::Status& s) override {
    status = s;
    for (const auto& [k, v] : context_.GetServerInitialMetadata())
      headers.emplace_back(std::string(k.data(), k.size()), std::string(v.data(), v.size()));
    for (const auto& [k, v] : context_.GetServerTrailingMetadata())
      trailers.emplace_back(std::string(k.data(), k.size()), std::string(v.data(), v.size()));
    done_.set_value();
  }
  bool wait(std::chrono::seconds limit = std::chrono::seconds(15)) {
    return done_.get_future().wait_for(limit) == std::future_status::ready;
  }

  std::vector<std::string> replies;
  grpc::Status status;
  std::vector<std::pair<std::string, std::string>> headers, trailers;

 private:
  void writeNext() {
    if (next_ == messages_.size()) {
      StartWritesDone();
      return;
    }
    out_ = buffer(messages_[next_++]);
    StartWrite(&out_);
  }
  grpc::ClientContext& context_;
  std::vector<std::string> messages_;
  size_t next_ = 0;
  grpc::ByteBuffer in_, out_;
  std::promise<void> done_;
};

}  // namespace vri::testing
