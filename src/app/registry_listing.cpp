#include "app/registry_listing.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "diag/diagnostics.hpp"
#include "model/residual/registry.hpp"
#include "util/json.hpp"

namespace db::app {
namespace {

std::string json_strings(const std::vector<std::string>& words) {
  std::string out = "[";
  for (size_t i = 0; i < words.size(); ++i) out += (i ? ", " : "") + json_quote(words[i]);
  return out + "]";
}

std::string option_json(const DesignOption& o) {
  const OptionValues& v = o.values;
  return "{\"key\": " + json_quote(o.key) + ", \"default\": " + json_quote(o.default_value) +
         ", \"help\": " + json_quote(o.help) + ", \"kind\": " + json_quote(kind_name(v.kind)) +
         ", \"min\": " + json_number(v.min) + ", \"max\": " + json_number(v.max) +
         ", \"min_exclusive\": " + (v.min_exclusive ? "true" : "false") +
         ", \"words\": " + json_strings(v.words) +
         ", \"values\": " + json_quote(describe_values(v)) + "}";
}

ModelConfig listing_shape(const DesignInfo& d) {
  ModelConfig c;
  c.arch = d.name;
  c.d_model = kListingDModel;
  c.n_head = kListingHeads;
  return c;
}

}  // namespace

std::string designs_json() {
  std::ostringstream out;
  out << "{\n  \"schema\": 1,\n  \"state_shape\": {\"d_model\": " << kListingDModel
      << ", \"n_head\": " << kListingHeads << "},\n  \"designs\": [";
  int order = 0;
  for (const DesignInfo& d : all_designs()) {
    out << (order ? "," : "") << "\n    {\"name\": " << json_quote(d.name)
        << ", \"title\": " << json_quote(d.title) << ", \"order\": " << order
        << ",\n     \"summary\": " << json_quote(d.summary) << ",\n     \"options\": [";
    for (size_t i = 0; i < d.options.size(); ++i)
      out << (i ? "," : "") << "\n       " << option_json(d.options[i]);
    out << "],\n     \"no_decay\": " << json_strings(d.no_decay)
        << ",\n     \"state_values_per_token_block\": "
        << json_number(d.state_values_per_token(listing_shape(d))) << "}";
    ++order;
  }
  out << "\n  ]\n}\n";
  return out.str();
}

std::string designs_text() {
  std::ostringstream out;
  for (const DesignInfo& d : all_designs()) {
    out << d.name << " (" << d.title << "): " << d.summary << "\n";
    for (const DesignOption& o : d.options)
      out << "    model." << o.key << " = " << (o.default_value.empty() ? "''" : o.default_value)
          << "   [" << describe_values(o.values) << "] " << o.help << "\n";
    if (!d.no_decay.empty()) {
      out << "    no weight decay:";
      for (const std::string& p : d.no_decay) out << " " << p;
      out << "\n";
    }
    const double state = d.state_values_per_token(listing_shape(d));
    if (state > 0)
      out << "    state per token and block at d_model " << kListingDModel << ": " << state
          << " values\n";
  }
  return out.str();
}

std::string diagnostics_json() {
  const diag::DiagSettings defaults;
  std::ostringstream out;
  out << "{\n  \"schema\": 1,\n  \"interval_suffixes\": [\"_ci_low\", \"_ci_high\"],\n"
      << "  \"diagnostics\": [";
  bool first = true;
  for (const diag::Diagnostic& d : diag::all_diagnostics()) {
    out << (first ? "" : ",") << "\n    {\"name\": " << json_quote(d.name)
        << ", \"summary\": " << json_quote(d.summary) << ",\n     \"options\": [";
    for (size_t i = 0; i < d.options.size(); ++i) {
      const diag::DiagnosticOption& o = d.options[i];
      out << (i ? "," : "") << "\n       {\"flag\": " << json_quote(o.flag)
          << ", \"default\": " << json_quote(o.value(defaults))
          << ", \"help\": " << json_quote(o.help) << "}";
    }
    out << "],\n     \"datasets\": " << json_strings(d.datasets) << "}";
    first = false;
  }
  out << "\n  ]\n}\n";
  return out.str();
}

std::string diagnostics_text() {
  const diag::DiagSettings defaults;
  std::ostringstream out;
  for (const diag::Diagnostic& d : diag::all_diagnostics()) {
    out << d.name << ": " << d.summary << "\n";
    for (const diag::DiagnosticOption& o : d.options) {
      const std::string value = o.value(defaults);
      out << "    --" << o.flag << " " << (value.empty() ? "''" : value) << "   " << o.help
          << "\n";
    }
    out << "    writes diagnostics/:";
    for (const std::string& name : d.datasets) out << " " << name;
    out << "\n";
  }
  return out.str();
}

}  // namespace db::app
