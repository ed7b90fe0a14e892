#include "sweep/cpu_throughput.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "core/error.hpp"
#include "util/json.hpp"
#include "util/json_writer.hpp"
#include "util/text_file.hpp"

namespace db::sweep {
namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

JsonValue to_json(const ThroughputMeasurement& m) {
  JsonObject o;
  o["machine"] = JsonValue(m.machine);
  o["measured_at"] = JsonValue(m.measured_at);
  o["arch"] = JsonValue(m.arch);
  o["n_layer"] = JsonValue(double(m.n_layer));
  o["d_model"] = JsonValue(double(m.d_model));
  o["seq_len"] = JsonValue(double(m.seq_len));
  o["micro_batch"] = JsonValue(double(m.micro_batch));
  o["threads_per_rank"] = JsonValue(double(m.threads_per_rank));
  o["ranks"] = JsonValue(double(m.ranks));
  o["flops_per_token"] = JsonValue(m.flops_per_token);
  o["tokens_per_second"] = JsonValue(m.tokens_per_second);
  return JsonValue(std::move(o));
}

ThroughputMeasurement from_json(const JsonValue& v) {
  auto member = [&](const char* key) -> const JsonValue& {
    const JsonValue* found = v.find(key);
    if (!found) throw Error(std::string("a measurement lacks \"") + key + "\"");
    return *found;
  };
  auto integer = [&](const char* key) {
    return member(key).as_integer(key, 1, std::numeric_limits<int32_t>::max());
  };
  ThroughputMeasurement m;
  m.machine = member("machine").as_string("machine");
  m.measured_at = member("measured_at").as_string("measured_at");
  m.arch = member("arch").as_string("arch");
  m.n_layer = int(integer("n_layer"));
  m.d_model = int(integer("d_model"));
  m.seq_len = int(integer("seq_len"));
  m.micro_batch = integer("micro_batch");
  m.threads_per_rank = int(integer("threads_per_rank"));
  m.ranks = int(integer("ranks"));
  m.flops_per_token = member("flops_per_token").as_number("flops_per_token");
  m.tokens_per_second = member("tokens_per_second").as_number("tokens_per_second");
  DB_REQUIRE(m.flops_per_token > 0 && m.tokens_per_second > 0,
             "a measurement has a throughput that is not positive");
  return m;
}

bool same_setting(const ThroughputMeasurement& a, const ThroughputMeasurement& b) {
  return a.machine == b.machine && a.arch == b.arch && a.n_layer == b.n_layer &&
         a.d_model == b.d_model && a.seq_len == b.seq_len && a.micro_batch == b.micro_batch &&
         a.threads_per_rank == b.threads_per_rank && a.ranks == b.ranks;
}

}  // namespace

std::string ThroughputMeasurement::describe() const {
  char text[256];
  std::snprintf(text, sizeof text, "%s L=%d d=%d T=%d B=%lld, %d thread(s) x %d rank(s), %s",
                arch.c_str(), n_layer, d_model, seq_len, (long long)micro_batch, threads_per_rank,
                ranks, measured_at.substr(0, 10).c_str());
  return text;
}

std::string this_machine() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown host");
  return std::string(host) + ", " + cpu_model() + ", " +
         std::to_string(std::thread::hardware_concurrency()) + " logical cores";
}

std::string throughput_cache_path() {
  std::string folder;
  if (const char* dir = std::getenv("DEPTHBENCH_CACHE_DIR"); dir && *dir)
    folder = dir;
  else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    folder = std::string(xdg) + "/depthbench";
  else if (const char* home = std::getenv("HOME"); home && *home)
    folder = std::string(home) + "/.cache/depthbench";
  else
    folder = ".depthbench-cache";
  return folder + "/cpu-throughput.json";
}

ThroughputCache read_throughput_cache(const std::string& path) {
  ThroughputCache cache;
  if (!std::filesystem::exists(path)) return cache;
  try {
    const JsonValue root = parse_json(read_text_file(path));
    const JsonValue* list = root.find("measurements");
    DB_REQUIRE(list, "no \"measurements\" list");
    for (const JsonValue& entry : list->as_array("measurements"))
      cache.measurements.push_back(from_json(entry));
  } catch (const std::exception& e) {
    cache.measurements.clear();
    cache.problem = path + ": " + e.what();
  }
  return cache;
}

void record_throughput(const std::string& path, const ThroughputMeasurement& measurement) {
  ThroughputCache cache = read_throughput_cache(path);
  std::erase_if(cache.measurements,
                [&](const ThroughputMeasurement& m) { return same_setting(m, measurement); });
  cache.measurements.push_back(measurement);
  JsonArray list;
  for (const ThroughputMeasurement& m : cache.measurements) list.push_back(to_json(m));
  JsonObject root;
  root["measurements"] = JsonValue(std::move(list));

  const std::filesystem::path target(path);
  std::error_code error;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), error);
  const std::string temporary = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << json_text(JsonValue(std::move(root))) << "\n";
    DB_REQUIRE(out.good(), "cannot write the throughput cache " + temporary);
  }
  std::filesystem::rename(temporary, target, error);
  if (error) {
    std::filesystem::remove(temporary);
    throw Error("cannot write the throughput cache " + path + ": " + error.message());
  }
}

std::optional<ThroughputMeasurement> nearest_measurement(const ThroughputCache& cache,
                                                         const std::string& machine,
                                                         const ModelConfig& model,
                                                         double flops_per_token) {
  std::optional<ThroughputMeasurement> best;
  std::pair<bool, double> best_distance;
  for (const ThroughputMeasurement& m : cache.measurements) {
    if (m.machine != machine) continue;
    // The same shape first (GEMM efficiency follows the width), then the nearest FLOPs.
    const bool other_shape = m.n_layer != model.n_layer || m.d_model != model.d_model;
    const std::pair distance{other_shape, std::abs(std::log(m.flops_per_token / flops_per_token))};
    // The list is oldest first (record_throughput appends), so "<=" keeps the newest on a tie.
    if (!best || distance <= best_distance) {
      best = m;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace db::sweep
