// ptn.package._native: the C++ binding's validator compiled into a Python install, the fast
// path of validating a small package (ptn/package/native.py says when Python uses it).
//
// validate(buffer, deep) -> findings on a whole package held in memory: (rule, severity,
// member, pointer, message, more) tuples in the validator's order, every rule of the
// specification checked (the operator rules against the operator table compiled in).
//
// validate_file(path, deep, max_size) -> the same for a local regular file of at most max_size
// bytes, opened, read whole and closed here (ptn validate of many small files pays one call a
// file), or None for anything else (not there, not a regular file, larger, changed while
// read, a signal): Python then opens it and says what it is.
//
// The buffer is the caller's bytes, or one read here (never a mapping, which a file truncated
// meanwhile would turn into SIGBUS); the GIL is released while the validator runs.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "ptn/package.hpp"

namespace {

std::vector<ptn::Finding> run(ptn::ByteSpan bytes, bool deep) {
  ptn::detail::Parsed<ptn::Schema::Metadata> parsed;
  const ptn::ValidateOptions options{deep, nullptr};
  return ptn::detail::Stages<ptn::Schema>(bytes, options, parsed).run();
}

/// Text from the validator: its strings are UTF-8 (names from the file are escaped or
/// replaced before they reach a message), so a decoding error here is a bug and raises.
PyObject* text(const std::string& s) {
  return PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "strict");
}

PyObject* optional_text(const std::optional<std::string>& s) {
  if (!s) Py_RETURN_NONE;
  return text(*s);
}

PyObject* finding_tuple(const ptn::Finding& f) {
  PyObject* rule = text(f.rule);
  PyObject* member = optional_text(f.member);
  PyObject* pointer = optional_text(f.pointer);
  PyObject* message = text(f.message);
  if (!rule || !member || !pointer || !message) {
    Py_XDECREF(rule);
    Py_XDECREF(member);
    Py_XDECREF(pointer);
    Py_XDECREF(message);
    return nullptr;
  }
  return Py_BuildValue("(NsNNNn)", rule, ptn::severity_name(f.severity), member, pointer, message,
                       static_cast<Py_ssize_t>(f.more));
}

PyObject* finding_list(const std::vector<ptn::Finding>& findings) {
  PyObject* found = PyList_New(static_cast<Py_ssize_t>(findings.size()));
  if (!found) return nullptr;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    PyObject* t = finding_tuple(findings[i]);
    if (!t) {
      Py_DECREF(found);
      return nullptr;
    }
    PyList_SET_ITEM(found, static_cast<Py_ssize_t>(i), t);
  }
  return found;
}

PyObject* validate(PyObject*, PyObject* args) {
  Py_buffer view;
  int deep = 0;
  if (!PyArg_ParseTuple(args, "y*p:validate", &view, &deep)) return nullptr;
  const ptn::ByteSpan bytes{static_cast<const std::uint8_t*>(view.buf),
                            static_cast<std::size_t>(view.len)};
  std::vector<ptn::Finding> findings;
  bool no_memory = false;
  Py_BEGIN_ALLOW_THREADS
  try {
    findings = run(bytes, deep != 0);
  } catch (const std::bad_alloc&) {
    no_memory = true;
  }
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&view);
  if (no_memory) return PyErr_NoMemory();
  return finding_list(findings);
}

/// The whole of the regular file ``path`` if it holds at most ``max_size`` bytes, read as
/// Python's ptn.core.buffers.open_regular opens it (non-blocking: a FIFO is not waited
/// for); false for anything else, Python's path then saying what it is. No retry on EINTR:
/// the signal (a time limit) is Python's to handle, once this returns.
bool read_small_file(const char* path, std::size_t max_size, std::vector<std::uint8_t>& out) {
  const int fd = ::open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat info {};
  bool whole = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size >= 0 &&
               static_cast<std::uint64_t>(info.st_size) <= max_size;
  if (whole) {
    out.resize(static_cast<std::size_t>(info.st_size));
    std::size_t done = 0;
    while (whole && done < out.size()) {
      const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
      whole = n > 0;  // 0: truncated meanwhile; -1: an error, or a signal
      if (whole) done += static_cast<std::size_t>(n);
    }
  }
  ::close(fd);
  return whole;
}

PyObject* validate_file(PyObject*, PyObject* args) {
  const char* path = nullptr;
  Py_ssize_t length = 0;
  int deep = 0;
  Py_ssize_t max_size = 0;
  if (!PyArg_ParseTuple(args, "y#pn:validate_file", &path, &length, &deep, &max_size)) {
    return nullptr;
  }
  if (max_size < 0 || std::strlen(path) != static_cast<std::size_t>(length)) Py_RETURN_NONE;
  std::vector<std::uint8_t> data;
  std::vector<ptn::Finding> findings;
  bool read = false;
  bool no_memory = false;
  Py_BEGIN_ALLOW_THREADS
  try {
    read = read_small_file(path, static_cast<std::size_t>(max_size), data);
    if (read) findings = run(ptn::ByteSpan{data.data(), data.size()}, deep != 0);
  } catch (const std::bad_alloc&) {
    no_memory = true;
  }
  Py_END_ALLOW_THREADS
  if (no_memory) return PyErr_NoMemory();
  if (!read) Py_RETURN_NONE;
  return finding_list(findings);
}

PyMethodDef kMethods[] = {
    {"validate", validate, METH_VARARGS,
     "validate(buffer, deep) -> findings: the C++ validator on a package in memory "
     "(ptn.package.native)"},
    {"validate_file", validate_file, METH_VARARGS,
     "validate_file(path, deep, max_size) -> findings, or None: the C++ validator on a small "
     "regular file read whole (ptn.package.native)"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT,
    "ptn.package._native",
    "The C++ binding's validator: the fast path of validating a small package "
    "(ptn.package.native).",
    -1,
    kMethods,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit__native() { return PyModule_Create(&kModule); }
