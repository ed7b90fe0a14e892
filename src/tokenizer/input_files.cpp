#include "tokenizer/input_files.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <span>

#include "core/error.hpp"

namespace db::tokenizer {
namespace fs = std::filesystem;
namespace {

bool has_wildcard(const std::string& part) {
  return part.find_first_of("*?[") != std::string::npos;
}

bool is_hidden(const fs::path& path) {
  return path.filename().string().starts_with('.');
}

// Sorted entries of a folder, so that the walk (and its errors) never depend on readdir order.
std::vector<fs::directory_entry> sorted_entries(const fs::path& dir) {
  std::vector<fs::directory_entry> entries;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error))
    if (!is_hidden(it->path())) entries.push_back(*it);
  DB_REQUIRE(!error, "cannot list input folder " + dir.string() + ": " + error.message());
  std::sort(entries.begin(), entries.end());
  return entries;
}

// A found path: a regular file is taken, a directory contributes every file below it.
void take(const fs::path& path, const fs::path& root, std::vector<InputFile>& out) {
  if (fs::is_directory(path)) {
    for (const fs::directory_entry& entry : sorted_entries(path)) take(entry.path(), root, out);
  } else if (fs::is_regular_file(path)) {
    fs::path relative = path.lexically_relative(root);
    out.push_back(
        {path.string(), relative.empty() ? path.filename().string() : relative.string(), 0});
  }
}

// Matches the pattern components `parts` below `dir`; `**` is any number of directories.
void walk(const fs::path& dir, std::span<const std::string> parts, const fs::path& root,
          std::vector<InputFile>& out) {
  if (parts.empty()) return take(dir, root, out);
  const std::string& part = parts.front();
  const std::span<const std::string> rest = parts.subspan(1);
  if (part == "**") {
    walk(dir, rest, root, out);  // zero directories
    for (const fs::directory_entry& entry : sorted_entries(dir))
      if (entry.is_directory() && !entry.is_symlink()) walk(entry.path(), parts, root, out);
    return;
  }
  if (!has_wildcard(part)) {
    const fs::path next = dir / part;
    if (fs::exists(next)) walk(next, rest, root, out);
    return;
  }
  if (!fs::is_directory(dir)) return;
  for (const fs::directory_entry& entry : sorted_entries(dir)) {
    const std::string name = entry.path().filename().string();
    if (::fnmatch(part.c_str(), name.c_str(), FNM_PERIOD) != 0) continue;
    if (rest.empty() || entry.is_directory()) walk(entry.path(), rest, root, out);
  }
}

std::vector<InputFile> expand_one(const std::string& entry) {
  std::vector<InputFile> found;
  const fs::path path(entry);
  std::vector<std::string> parts;
  for (const fs::path& part : path.relative_path()) parts.push_back(part.string());
  const auto first_wild = std::find_if(parts.begin(), parts.end(), has_wildcard);
  if (first_wild == parts.end()) {  // a plain file or directory
    DB_REQUIRE(fs::exists(path), "input '" + entry + "' does not exist");
    take(path, fs::is_directory(path) ? path : path.parent_path(), found);
    return found;
  }
  fs::path root = path.root_path();
  for (auto it = parts.begin(); it != first_wild; ++it) root /= *it;
  if (root.empty()) root = ".";
  walk(root, std::span<const std::string>(&*first_wild, parts.end() - first_wild), root, found);
  return found;
}

}  // namespace

std::vector<InputFile> expand_inputs(const std::vector<std::string>& entries) {
  if (std::find(entries.begin(), entries.end(), kStandardInput) != entries.end()) {
    DB_REQUIRE(entries.size() == 1,
               "--input - (standard input) cannot be combined with other inputs");
    return {InputFile{kStandardInput, kStandardInput, 0}};
  }
  std::map<std::string, InputFile> by_path;  // canonical path -> first name found for it
  for (const std::string& entry : entries) {
    std::vector<InputFile> found = expand_one(entry);
    DB_REQUIRE(!found.empty(), "input '" + entry + "' matches no file");
    for (InputFile& file : found) {
      // A symbolic link is read once, under its target's path (Debian's fortunes ships
      // `art.u8 -> art`): the same text twice would leak between training and validation.
      file.path = fs::canonical(file.path).string();
      file.bytes = static_cast<int64_t>(fs::file_size(file.path));
      by_path.emplace(file.path, file);
    }
  }
  std::vector<InputFile> files;
  for (auto& [path, file] : by_path) files.push_back(std::move(file));
  DB_REQUIRE(!files.empty(), "no input files");
  return files;
}

}  // namespace db::tokenizer
