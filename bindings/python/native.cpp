// ptn.package._native: the C++ binding's validator compiled into a Python install, the fast
// path of validating a small package (ptn/package/native.py says when Python uses it).
//
// validate(buffer, deep) -> (call_nodes, findings) on a whole package held in memory:
// findings are (rule, severity, member, pointer, message, more) tuples in the validator's
// order; call_nodes counts the program's call nodes (subgraphs included) as
// ptn.program.calls.call_nodes yields them, or is -1 when the program was not decoded.
// Python's deep mode checks call nodes against ATen's schemas, which this binding cannot
// (tools/conformance/capabilities.py), so Python validates those files itself.
//
// The buffer is the caller's bytes (never a mapping, which a file truncated meanwhile would
// turn into SIGBUS); the GIL is released while the validator runs.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "ptn/package.hpp"

namespace {

namespace pf = ptn::program::f;

constexpr std::int64_t kCallFunction = ptn::program::enum_value("OpKind", "CALL_FUNCTION");

/// The call nodes of every method's graph and of the subgraphs its nodes pass, counted as
/// ptn.program.calls.call_nodes yields them. A heap stack of graphs, not the call stack:
/// nesting is as deep as the file makes it (the verifier bounds the objects, not the depth).
std::size_t call_nodes(const ptn::program::Decoded& program) {
  using ptn::program::TableRef;
  std::size_t count = 0;
  std::vector<TableRef> graphs;
  const auto methods = ptn::program::root(program).vec(pf::kProgramMethods);
  for (std::size_t i = 0; i < methods.size(); ++i) {
    graphs.push_back(*methods.table(i).child(pf::kMethodGraph));  // required: verified
  }
  while (!graphs.empty()) {
    const TableRef graph = graphs.back();
    graphs.pop_back();
    const auto nodes = graph.vec(pf::kGraphNodes);
    for (std::size_t j = 0; j < nodes.size(); ++j) {
      const TableRef node = nodes.table(j);
      if (node.integer(pf::kNodeOpKind) == kCallFunction) ++count;
      const auto inputs = node.vec(pf::kNodeInputs);
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        const TableRef arg = *inputs.table(k).child(pf::kNamedArgumentArg);  // required
        if (arg.code(pf::kArgumentValueField) != pf::kGraphArgCode) continue;
        const auto member = arg.member(pf::kArgumentValueField);
        if (member) graphs.push_back(*member->child(pf::kGraphArgGraph));  // required
      }
    }
  }
  return count;
}

struct Outcome {
  long long call_nodes = -1;
  std::vector<ptn::Finding> findings;
};

Outcome run(ptn::ByteSpan bytes, bool deep) {
  Outcome out;
  ptn::detail::Parsed<ptn::Schema::Metadata> parsed;
  const ptn::ValidateOptions options{deep, nullptr};
  out.findings = ptn::detail::Stages<ptn::Schema>(bytes, options, parsed).run();
  if (parsed.program) out.call_nodes = static_cast<long long>(call_nodes(*parsed.program));
  return out;
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

PyObject* validate(PyObject*, PyObject* args) {
  Py_buffer view;
  int deep = 0;
  if (!PyArg_ParseTuple(args, "y*p:validate", &view, &deep)) return nullptr;
  const ptn::ByteSpan bytes{static_cast<const std::uint8_t*>(view.buf),
                            static_cast<std::size_t>(view.len)};
  Outcome outcome;
  bool no_memory = false;
  Py_BEGIN_ALLOW_THREADS
  try {
    outcome = run(bytes, deep != 0);
  } catch (const std::bad_alloc&) {
    no_memory = true;
  }
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&view);
  if (no_memory) return PyErr_NoMemory();
  PyObject* found = PyList_New(static_cast<Py_ssize_t>(outcome.findings.size()));
  if (!found) return nullptr;
  for (std::size_t i = 0; i < outcome.findings.size(); ++i) {
    PyObject* t = finding_tuple(outcome.findings[i]);
    if (!t) {
      Py_DECREF(found);
      return nullptr;
    }
    PyList_SET_ITEM(found, static_cast<Py_ssize_t>(i), t);
  }
  return Py_BuildValue("(LN)", outcome.call_nodes, found);
}

PyMethodDef kMethods[] = {
    {"validate", validate, METH_VARARGS,
     "validate(buffer, deep) -> (call_nodes, findings): the C++ validator on a package in "
     "memory (ptn.package.native)"},
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
