// A read-only mapping of a regular file (POSIX open + fstat + mmap): how BasicPackage
// opens a path. The bytes are never copied; pages are read when a check or a tensor view
// touches them. Failures are ptn-io-error, as in the Python reference. A mapping's one
// hazard: a file truncated by another program while mapped raises SIGBUS on access.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "ptn/bytes.hpp"
#include "ptn/error.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define PTN_HAS_MMAP 1
#else
#define PTN_HAS_MMAP 0
#endif

namespace ptn {

/// A file mapped read-only; movable, not copyable; unmapped on destruction.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MappedFile& operator=(MappedFile&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~MappedFile() { release(); }

  /// Map `path` (a regular file; an empty one maps to no bytes).
  static Result<MappedFile> open(const std::string& path) {
#if PTN_HAS_MMAP
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return io_error("cannot open '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return io_error("cannot stat '" + path + "': " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return io_error("'" + path + "' is not a regular file");
    }
    MappedFile out;
    out.size_ = static_cast<std::size_t>(st.st_size);
    if (out.size_ > 0) {
      void* p = ::mmap(nullptr, out.size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        out.size_ = 0;
        return io_error("cannot map '" + path + "': " + std::strerror(err));
      }
      out.data_ = p;
    }
    ::close(fd);  // the mapping keeps the file
    return out;
#else
    return io_error("cannot map '" + path +
                    "': this platform has no POSIX mmap; map the file "
                    "yourself and pass its bytes");
#endif
  }

  ByteSpan bytes() const noexcept { return ByteSpan(data_, size_); }
  std::size_t size() const noexcept { return size_; }

 private:
  static Error io_error(std::string message) { return Error("ptn-io-error", std::move(message)); }

  void release() noexcept {
#if PTN_HAS_MMAP
    if (data_ != nullptr) ::munmap(data_, size_);
#endif
    data_ = nullptr;
    size_ = 0;
  }

  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ptn
