// Self-checks of the C++ binding that a differential test against Python cannot make:
// bounded recursion on a small thread stack (JSON, and the program verifier on the
// deep-12.ptg and deep-13.ptg of DIRECTORY: subgraphs 12 and 13 levels down, each level's
// call node checked against the operator table), the ptg-undefined-value findings of the
// undefined-*.ptg of DIRECTORY (by pointer and message, subgraphs 11 levels down on the
// small stack, the budget), the operator rules and ptg-redefined-value on operator-*.ptg
// and redefined.ptg (by pointer and message), the operator table's order and lookups, the
// CRC-32 against known values, the wide integers of packed sizes, opening a caller's
// buffer, the methods of PACKAGE, I/O errors as values. Built -fno-exceptions -fno-rtti
// under ASan and UBSan by tests/test_cpp_package.py:  unit_test PACKAGE.ptn DIRECTORY
#include <pthread.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "ptn/package.hpp"

namespace {

int failures = 0;

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

std::string rule_of(const ptn::Result<ptn::json::Document>& r) {
  return r ? "ok" : r.error().rule();
}

/// Nesting is parsed with a heap stack: a 899-level document and a million '[' both
/// finish on a 64 KiB thread stack, with the reference's rules.
void* nested(void*) {
  const std::string deep = std::string(899, '[') + std::string(899, ']');
  CHECK(rule_of(ptn::json::parse(deep)) == "json-too-deep");  // past 64 levels
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  CHECK(rule_of(ptn::json::parse(ok)) == "ok");
  const std::string cap(1000000, '[');
  CHECK(rule_of(ptn::json::parse(cap)) == "json-too-deep");  // at the parse cap, 900
  std::string objects;
  for (int i = 0; i < 899; ++i) objects += "{\"a\":";
  objects += "1";
  objects += std::string(899, '}');
  const auto parsed = ptn::Metadata::parse(objects);
  CHECK(!parsed && parsed.error().rule() == "json-too-deep");
  return nullptr;
}

/// The program verifier recurses (three frames a level of tables) but stops at the
/// layout's 64 levels: a method whose subgraphs nest 12 deep (64 levels) decodes, 13 deep
/// (69 levels) is refused, both on a 64 KiB thread stack.
void* deep_programs(void* arg) {
  const std::string directory = static_cast<const char*>(arg);
  for (const int depth : {12, 13}) {
    const auto file = ptn::MappedFile::open(directory + "/deep-" + std::to_string(depth) + ".ptg");
    CHECK(file.ok());
    if (!file) continue;
    const ptn::program::ProgramRead read = ptn::program::read_program(file->bytes());
    if (depth == 12) {
      // Decoded, and each level's torch.ops.higher_order.cond found in no table, the
      // deepest last (the operator rules walk subgraphs on a heap stack too).
      CHECK(read.program.has_value() && read.findings.size() == 12);
      for (const ptn::Finding& f : read.findings) CHECK(f.rule == "ptg-unknown-operator");
      std::string deepest = "/methods/0/graph";
      for (int level = 0; level < 11; ++level) deepest += "/nodes/0/inputs/0/arg/value/graph";
      CHECK(read.findings.back().pointer == deepest + "/nodes/0/target");
      CHECK(read.findings.back().message ==
            "method 'forward', node 'cond0': target 'torch.ops.higher_order.cond' is in "
            "namespace 'higher_order': ptn's operator table holds ATen operators only "
            "(torch.ops.aten.<operator>.<overload>)");
      if (read.program) CHECK(ptn::program::methods(*read.program).size() == 1);
    } else {
      CHECK(!read.program && read.findings.size() == 1);
      CHECK(!read.findings.empty() && read.findings[0].rule == "ptg-malformed" &&
            read.findings[0].message == "tables nest deeper than 64 levels");
    }
  }
  return nullptr;
}

using Found = std::vector<std::pair<std::string, std::string>>;

/// The (pointer, message) of each finding of `rule` that read_program gives for
/// DIRECTORY/NAME.ptg; `more` the count of its summary (0: none).
Found findings_of(const char* rule, const std::string& directory, const char* name,
                  std::size_t* more = nullptr) {
  Found out;
  const auto file = ptn::MappedFile::open(directory + "/" + name + ".ptg");
  CHECK(file.ok());
  if (!file) return out;
  const ptn::program::ProgramRead read = ptn::program::read_program(file->bytes());
  CHECK(read.program.has_value());
  for (const ptn::Finding& f : read.findings) {
    if (f.rule != rule) continue;
    CHECK(f.severity == (f.rule == "ptg-buffer-never-written" ? ptn::Severity::Warning
                                                               : ptn::Severity::Error));
    if (f.more) {
      CHECK(more != nullptr && !f.pointer);
      if (more) *more = f.more;
      continue;
    }
    out.emplace_back(f.pointer.value_or("(none)"), f.message);
  }
  return out;
}

Found undefined(const std::string& directory, const char* name, std::size_t* more = nullptr) {
  return findings_of("ptg-undefined-value", directory, name, more);
}

std::string used(const char* node, const std::string& what, const char* name) {
  return std::string("method 'forward', node '") + node + "': " + what + " uses " + name +
         ", which nothing before it in its graph defines";
}

/// ptg-undefined-value: each kind of use, placeholders, graph outputs, output specs (a
/// USER_INPUT_MUTATION of a constant is no input), subgraphs with their own names 11
/// levels down (walked on this thread's 64 KiB stack), and 10^4 findings listing 100.
void* undefined_values(void* arg) {
  const std::string dir = static_cast<const char*>(arg);
  const std::string nodes = "/methods/0/graph/nodes/";
  CHECK(undefined(dir, "undefined-uses") ==
        (Found{
            {nodes + "1/inputs/1/arg/value/name", used("a", "argument 'other'", "'later'")},
            {nodes + "2/inputs/0/arg/value/names/1", used("cat", "argument 'tensors'[1]", "\"it's\"")},
            {nodes + "3/inputs/1/arg/value/names/1", used("i", "argument 'indices'[1]", "'absent'")},
            {nodes + "4/inputs/1/arg/value/refs/1", used("v", "argument 'size'[1]", "'n'")},
            {nodes + "5/inputs/1/arg/value/ref", used("m", "argument 1", "'k'")},
            {nodes + "5/outputs/0/alias_of", used("m", "output 0's alias_of", "'q'")},
            {nodes + "6/inputs/0/arg/value/name", used("later", "argument 'self'", "'later'")},
        }));
  const std::string specs = "/methods/0/output_specs/";
  CHECK(undefined(dir, "undefined-specs") ==
        (Found{
            {nodes + "0/name",
             "method 'forward': placeholder 'ghost' names no input, constant or mutable buffer of "
             "its graph"},
            {nodes + "3/inputs/0/arg/value/name", used("output", "argument 0", "'y'")},
            {"/methods/0/graph/outputs/0",
             "method 'forward': graph output 0 is 'y', which no node, input, constant or buffer "
             "of its graph defines"},
            {specs + "0/name",
             "method 'forward': output spec 0 returns 'y', which nothing in the graph defines"},
            {specs + "1/target",
             "method 'forward': output spec 1 updates user input 'z', which is not an input of "
             "the graph"},
            {specs + "3/target",
             "method 'forward': output spec 3 updates user input 'p_w', which is not an input of "
             "the graph"},
        }));
  // Level i's graph uses missing<10 - i>, then holds level i + 1 in its last node.
  Found nested;
  std::string graph = "/methods/0/graph";
  for (int level = 0; level < 11; ++level) {
    const std::string u = "u" + std::to_string(10 - level);
    const std::string missing = "'missing" + std::to_string(10 - level) + "'";
    const std::string node = graph + "/nodes/" + (level == 0 ? "1" : "0");
    nested.emplace_back(node + "/inputs/0/arg/value/name",
                        used(u.c_str(), "argument 'self'", missing.c_str()));
    graph += std::string("/nodes/") + (level == 0 ? "2" : "1") + "/inputs/0/arg/value/graph";
  }
  nested.emplace_back(graph + "/nodes/0/inputs/1/arg/value/name",
                      used("deepest", "argument 'other'", "'x'"));
  nested.emplace_back(graph + "/outputs/1",
                      "method 'forward': graph output 1 is 'b', which no node, input, constant "
                      "or buffer of its graph defines");
  CHECK(undefined(dir, "undefined-nested") == nested);
  std::size_t more = 0;
  const Found many = undefined(dir, "undefined-many", &more);
  CHECK(many.size() == 100 && more == 9900);
  if (!many.empty()) {
    CHECK(many.back() == std::make_pair(nodes + "100/inputs/0/arg/value/name",
                                        used("n99", "argument 'self'", "'missing'")));
  }
  return nullptr;
}

/// The operator rules (spec section 4.5) on operator-calls.ptg, each kind of problem once:
/// operators outside the table (unknown, refused, another namespace, no operator at all,
/// an overload the table leaves out), arguments that do not bind (a name, a held value,
/// a position), in-place writes of a constant and of a view of a user input (not of a
/// mutated input, a buffer or a mutated constant), a subgraph's node, and the buffer read
/// and never written; then 10^4 unknown operators listing 100.
void* operator_rules(void* arg) {
  const std::string dir = static_cast<const char*>(arg);
  const std::string nodes = "/methods/0/graph/nodes/";
  const auto at = [](const char* node, const std::string& message) {
    return std::string("method 'forward', node '") + node + "': " + message;
  };
  const std::string only_aten =
      ": ptn's operator table holds ATen operators only (torch.ops.aten.<operator>.<overload>)";
  CHECK(findings_of("ptg-unknown-operator", dir, "operator-calls") ==
        (Found{
            {nodes + "6/target",
             at("a", "operator 'not_an_op' is not in ptn's operator table (version 1, from torch "
                     "2.13.0, holds pure tensor computation only)")},
            {nodes + "7/target", at("b", "operator 'from_file' is not in ptn's operator table (it "
                                         "reads and writes files of the host)")},
            {nodes + "8/target", at("c", "target 'torch.ops.torchvision.nms.default' is in "
                                         "namespace 'torchvision'" + only_aten)},
            {nodes + "9/target", at("d", "target \"it's.eval\" is not an ATen operator "
                                         "(torch.ops.aten.<operator>.<overload>)")},
            {nodes + "10/target", at("e", "operator 'linear' has no overload 'out' in ptn's "
                                          "operator table (it has: default)")},
            {nodes + "21/target", at("cond", "target 'torch.ops.higher_order.cond' is in "
                                             "namespace 'higher_order'" + only_aten)},
        }));
  CHECK(findings_of("ptg-operator-schema-mismatch", dir, "operator-calls") ==
        (Found{
            {nodes + "11/inputs/1/name",
             at("f", "linear has no argument 'bogus' (its arguments: input, weight, bias)")},
            {nodes + "12/inputs/2/arg/value",
             at("g", "argument 'device' may only be \"cpu\" or null: the operator table holds "
                     "it there to keep the call pure")},
            {nodes + "13/inputs/2", at("h", "argument 2 is positional but follows named ones")},
            {nodes + "21/inputs/0/arg/value/graph/nodes/0/inputs/0/name",
             at("inner", "neg has no argument 'bogus' (its arguments: self)")},
        }));
  CHECK(findings_of("ptg-undeclared-mutation", dir, "operator-calls") ==
        (Found{
            {nodes + "14/inputs/0/arg/value",
             at("i", "fill_.Scalar writes its argument 'self' in place, and 'p_w' is constant "
                     "'p_w' (data key 'w') or a view of it, which the method does not declare "
                     "as state (the method binds it with mutated = false)")},
            {nodes + "16/inputs/0/arg/value",
             at("j", "add_.Tensor writes its argument 'self' in place, and 'v' is user input "
                     "'y' or a view of it, which the method does not declare as state (no "
                     "USER_INPUT_MUTATION output spec of the method updates it)")},
        }));
  CHECK(findings_of("ptg-buffer-never-written", dir, "operator-calls") ==
        (Found{
            {"/methods/0/mutable_buffers/1",
             "method 'forward': non-persistent buffer 'b_scale' (fqn 'scale') is read, and no "
             "method writes it: a runtime zero-initialises it, so every read sees zeros, "
             "whatever it held when the model was exported"},
        }));
  std::size_t more = 0;
  const Found many = findings_of("ptg-unknown-operator", dir, "operator-many", &more);
  CHECK(many.size() == 100 && more == 9900);
  if (!many.empty()) {
    CHECK(many.back() == std::make_pair(nodes + "100/target",
                                        at("n99", "operator 'nope' is not in ptn's operator "
                                                  "table (version 1, from torch 2.13.0, holds "
                                                  "pure tensor computation only)")));
  }
  return nullptr;
}

/// ptg-redefined-value: an input, a constant and a buffer named as an earlier value, a
/// placeholder twice, a node's output and a tensor list's element named twice, a
/// subgraph's inputs (its own namespace).
void redefined_values(const char* dir) {
  const std::string m = "/methods/0/";
  const auto twice = [](const char* what, const char* name, const char* first) {
    return std::string("method 'forward': ") + what + " defines '" + name + "', which " + first +
           " already defines; each value of a graph is named once";
  };
  const auto placed = [](const char* name) {
    return std::string("method 'forward': placeholder '") + name +
           "' places a value that an earlier placeholder of its graph places: each value of "
           "a graph is named once";
  };
  CHECK(findings_of("ptg-redefined-value", dir, "redefined") ==
        (Found{
            {m + "graph/inputs/1", twice("input 1", "x", "input 0")},
            {m + "constants/1/name", twice("constant 1", "x", "input 0")},
            {m + "mutable_buffers/0/name", twice("mutable buffer 0", "p_w", "constant 0")},
            {m + "graph/nodes/1/name", placed("x")},
            {m + "graph/nodes/3/name", placed("x")},
            {m + "graph/nodes/4/name", placed("p_w")},
            {m + "graph/nodes/5/outputs/0/name", twice("node 'n1'", "p_w", "constant 0")},
            {m + "graph/nodes/6/outputs/0/names/1", twice("node 'n2'", "t", "node 'n2'")},
            {m + "graph/nodes/7/inputs/0/arg/value/graph/inputs/1",
             twice("input 1", "a", "input 0")},
        }));
}

/// The generated table is sorted where the lookups binary-search it, its spans tile the
/// overloads, and no refused operator is in it; lookups find what it lists.
void operator_table() {
  namespace ops = ptn::operators;
  std::size_t next = 0;
  for (std::size_t i = 0; i < sizeof ops::kOperators / sizeof ops::kOperators[0]; ++i) {
    const ops::Operator& op = ops::kOperators[i];
    CHECK(i == 0 || ops::kOperators[i - 1].name < op.name);
    CHECK(op.first == next && op.count > 0);
    for (std::size_t k = op.first; k < std::size_t{op.first} + op.count; ++k) {
      CHECK(ops::kSchemas[k].name == op.name);
      CHECK(k == op.first || ops::kSchemas[k - 1].overload < ops::kSchemas[k].overload);
    }
    next = std::size_t{op.first} + op.count;
  }
  CHECK(next == sizeof ops::kSchemas / sizeof ops::kSchemas[0]);
  for (std::size_t i = 0; i < sizeof ops::kRefused / sizeof ops::kRefused[0]; ++i) {
    CHECK(i == 0 || ops::kRefused[i - 1].name < ops::kRefused[i].name);
    ptn::program::NodeProblem problem;
    const std::string target = "torch.ops.aten." + std::string(ops::kRefused[i].name) + ".default";
    CHECK(ptn::program::lookup_operator(target, problem) == nullptr);
    CHECK(problem.message.find(std::string(ops::kRefused[i].why)) != std::string::npos);
  }
  for (const ops::Schema& s : ops::kSchemas) {
    ptn::program::NodeProblem problem;
    const std::string target =
        "torch.ops.aten." + std::string(s.name) + "." + std::string(s.overload);
    CHECK(ptn::program::lookup_operator(target, problem) == &s);
  }
  ptn::program::NodeProblem problem;
  for (const char* target : {"", "torch.ops.aten.add", "torch.ops.aten.add.Tensor.x",
                             "torch.ops.aten.1add.default", "torch.ops.aten.add.", "add"}) {
    CHECK(ptn::program::lookup_operator(target, problem) == nullptr);
    CHECK(problem.rule == std::string("ptg-unknown-operator") && problem.below == "/target");
  }
}

void small_stack(void* (*body)(void*), const char* arg) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t thread;
  CHECK(pthread_create(&thread, &attr, body, const_cast<char*>(arg)) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

/// Packed sizes are exact beyond 64 bits (the values Python's ints give).
void wide() {
  using ptn::program::Wide;
  const std::int64_t big = std::int64_t{1} << 40;
  Wide x(-3);
  for (const std::int64_t v : {big, big, std::int64_t{5}}) x.mul(v);
  CHECK(x.text() == "-18133887294219437620592640");
  Wide packed = x;
  packed.mul(7);
  CHECK(packed.ceil_div8().text() == "-15867151382442007918018560");
  CHECK(x.compare(0) < 0 && x.ceil_div8().compare(0) < 0);
  Wide y(1);
  for (int i = 0; i < 3; ++i) y.mul(INT64_MAX);
  CHECK(y.text() == "784637716923335095224261902710254454442933591094742482943");
  y.mul(32);
  CHECK(y.ceil_div8().text() == "3138550867693340380897047610841017817771734364378969931772");
  CHECK(y.compare(UINT64_MAX) > 0);
  Wide z(INT64_MIN);
  z.mul(INT64_MIN);
  CHECK(z.text() == "85070591730234615865843651857942052864");
  Wide w(INT64_MIN);
  w.mul(-3);
  CHECK(w.ceil_div8().text() == "3458764513820540928" && w.ceil_div8().compare(3458764513820540928u) == 0);
  Wide huge(1);
  for (int i = 0; i < 100; ++i) huge.mul(INT64_MAX);  // past the exact range: only "larger"
  CHECK(huge.compare(UINT64_MAX) > 0 && huge != y);
  huge.mul(0);
  CHECK(huge.text() == "0" && huge.compare(0) == 0);
}

/// The methods of the example package: one, "forward", binding every constant it stores.
void methods(const char* path) {
  const auto pkg = ptn::Package::open_file(path);
  CHECK(pkg.ok());
  if (!pkg) return;
  const auto list = pkg->methods();
  CHECK(list.ok() && (*list)->size() == 1);
  if (!list || (*list)->empty()) return;
  const ptn::Method& forward = (**list)[0];
  CHECK(forward.name == "forward" && !forward.constants.empty());
  for (const ptn::BoundConstant& c : forward.constants) {
    const auto view = pkg->tensor(c.data_key);
    CHECK(view.has_value() && c.spec.dtype == view->dtype);
    if (view) CHECK(c.spec.admits(view->shape, view->rank));
  }
}

std::size_t crc_calls = 0;

std::uint32_t counting_crc(const void* data, std::size_t size, std::uint32_t crc) {
  ++crc_calls;
  return ptn::crc32(data, size, crc);
}

/// A runtime's own CRC-32 is used by the deep check, with the same findings.
void own_crc(const char* path) {
  const auto file = ptn::MappedFile::open(path);
  CHECK(file.ok());
  if (!file) return;
  const auto ours = ptn::validate(file->bytes(), ptn::ValidateOptions{true, &counting_crc});
  const auto default_crc = ptn::validate(file->bytes(), ptn::ValidateOptions{true});
  CHECK(crc_calls == 4);  // one per member of the example package
  CHECK(ours.findings.size() == default_crc.findings.size() && ours.valid());
}

void crc() {
  const std::string digits = "123456789";
  CHECK(ptn::crc32(digits.data(), digits.size()) == 0xCBF43926u);
  CHECK(ptn::crc32(nullptr, 0) == 0);
  std::vector<unsigned char> data(100003);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 7 + 3);
  const std::uint32_t whole = ptn::crc32(data.data(), data.size());
  std::uint32_t pieces = 0;
  for (std::size_t at = 0; at < data.size(); at += 4097) {
    const std::size_t n = std::min<std::size_t>(4097, data.size() - at);
    pieces = ptn::crc32(data.data() + at, n, pieces);
  }
  CHECK(whole == pieces);
}

/// SHA-256: FIPS 180-4's examples, and any split of the input into update() calls gives the
/// one-shot digest (every length and split around the 64-byte blocks and the padding).
void sha256() {
  const auto hex = [](std::string_view s) { return ptn::sha256_hex(ptn::ByteSpan(s)); };
  CHECK(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  std::string data(200, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31 + 7);
  for (std::size_t n = 0; n <= data.size(); ++n) {
    for (std::size_t split = 0; split <= n; split += 13) {
      ptn::Sha256 a, b;
      a.update(data.data(), n);
      b.update(data.data(), split);
      b.update(data.data() + split, n - split);
      CHECK(a.digest() == b.digest());
    }
  }
}

/// A caller's buffer opens like the file, and views point into that buffer.
void caller_buffer(const char* path) {
  ptn::Result<ptn::MappedFile> file = ptn::MappedFile::open(path);
  CHECK(file.ok());
  if (!file) return;
  const std::vector<std::uint8_t> copy(file->bytes().data, file->bytes().data + file->size());
  const auto from_file = ptn::Package::open_file(path);
  const auto from_span = ptn::Package::open(ptn::ByteSpan(copy.data(), copy.size()));
  CHECK(from_file.ok() && from_span.ok());
  if (!from_file || !from_span) return;
  CHECK(from_file->keys() == from_span->keys());
  CHECK(!from_span->keys().empty());
  for (std::string_view key : from_span->keys()) {
    const auto view = from_span->tensor(key);
    CHECK(view.has_value());
    if (!view) continue;
    CHECK(view->data >= copy.data() && view->data + view->nbytes <= copy.data() + copy.size());
    CHECK(view->numel() * view->itemsize() == view->nbytes);
  }
  CHECK(!from_span->tensor("no such key").has_value());
  const auto program = from_span->program();
  CHECK(program.ok() && program->size >= 8 && program->data > copy.data());
  CHECK(ptn::validate(ptn::ByteSpan(copy.data(), copy.size())).findings.size() ==
        from_file->findings().size());
  const auto missing = from_span->metadata_int("no_such_name");
  CHECK(!missing && missing.error().rule() == "metadata-missing-name");
}

void io_errors(const char* directory) {
  const auto dir = ptn::Package::open_file(directory);
  CHECK(!dir && dir.error().rule() == "ptn-io-error");
  const auto missing = ptn::validate_file(std::string(directory) + "/missing.ptn");
  CHECK(!missing && missing.error().rule() == "ptn-io-error");
  const auto empty = ptn::validate(ptn::ByteSpan());
  CHECK(!empty.valid() && empty.findings.front().rule == "zip-not-a-zip");
  const auto strict = ptn::Package::open(ptn::ByteSpan());
  CHECK(!strict && strict.error().rule() == "zip-not-a-zip");
  const auto lenient = ptn::Package::open(ptn::ByteSpan(), ptn::OpenOptions{false, false});
  CHECK(lenient.ok() && lenient->keys().empty() && !lenient->program().ok());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: unit_test PACKAGE.ptn DIRECTORY\n");
    return 2;
  }
  small_stack(nested, nullptr);
  small_stack(deep_programs, argv[2]);
  small_stack(undefined_values, argv[2]);
  small_stack(operator_rules, argv[2]);
  redefined_values(argv[2]);
  operator_table();
  crc();
  sha256();
  wide();
  methods(argv[1]);
  own_crc(argv[1]);
  caller_buffer(argv[1]);
  io_errors(argv[2]);
  if (failures == 0) std::printf("ok\n");
  return failures == 0 ? 0 : 1;
}
