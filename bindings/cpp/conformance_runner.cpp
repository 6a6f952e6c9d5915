// Metadata conformance runner of the C++ binding (the protocol of tools/conformance):
//   conformance_runner FILE...
// prints one line per file, "<path>\tvalid" or "<path>\tinvalid\t<rule-id>".
#include <exception>
#include <fstream>
#include <iostream>
#include <string>

#include "ptn/metadata.hpp"

int main(int argc, char** argv) {
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string path = argv[i];
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      std::cout << path << "\tinvalid\tptn-io-error\n";
      continue;
    }
    // One buffer of the file's size (a stringstream held it twice).
    file.seekg(0, std::ios::end);
    const std::streamoff size = file.tellg();
    file.seekg(0, std::ios::beg);
    std::string data(size > 0 ? static_cast<std::size_t>(size) : 0, '\0');
    if (!file.read(data.data(), static_cast<std::streamsize>(data.size()))) {
      std::cout << path << "\tinvalid\tptn-io-error\n";
      continue;
    }
    try {
      ptn::Metadata::parse(data);
      std::cout << path << "\tvalid\n";
    } catch (const ptn::Error& err) {
      std::cout << path << "\tinvalid\t" << err.rule() << "\n";
    } catch (const std::exception& err) {
      // Not a rule of the spec: a bug of the binding. Make it visible and fail.
      std::cout << path << "\tinvalid\tinternal-error\n";
      std::cerr << path << ": " << err.what() << "\n";
      status = 1;
    }
  }
  return status;
}
