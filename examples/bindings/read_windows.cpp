// Read get_windows from a package's metadata.json with the ptn C++ binding.
//
//   g++ -std=c++17 -Wall -Wextra -Werror -I generated/cpp/include
//       examples/bindings/read_windows.cpp -o read_windows
//   ./read_windows tests/vectors/metadata/valid/llm_full.json     # 512 0 512 0
//   unzip -p model.ptn metadata.json | ./read_windows -
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <ptn/metadata.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: read_windows METADATA_JSON   (- reads standard input)\n";
    return 2;
  }
  const std::string path = argv[1];
  std::ifstream file;
  if (path != "-") file.open(path, std::ios::binary);
  std::istream& in = path == "-" ? std::cin : file;
  if (!in) {
    std::cerr << "cannot read " << path << "\n";
    return 1;
  }
  const std::string data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const ptn::Result<ptn::Metadata> metadata = ptn::Metadata::parse(data);
  if (!metadata) {
    // rule() is the rule id of spec.md, pointer() a JSON pointer into the member.
    std::cerr << path << ": " << metadata.error().what() << "\n";
    return 1;
  }
  // get_windows -> windows(): std::nullopt when the package does not publish it.
  const std::optional<std::vector<std::int64_t>> windows = metadata->windows();
  if (!windows) {
    std::cout << "no get_windows\n";
    return 0;
  }
  const char* separator = "";
  for (const std::int64_t window : *windows) {
    std::cout << separator << window;
    separator = " ";
  }
  std::cout << "\n";
  return 0;
}
