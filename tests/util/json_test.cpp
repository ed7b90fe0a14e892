#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE json reader
#include "util/json.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>

#include "core/error.hpp"

using namespace db;

BOOST_AUTO_TEST_CASE(objects_arrays_numbers_and_literals_parse_to_their_values) {
  JsonValue v = parse_json(R"( {"a": [1, -2.5e2, 0.125, true, false, null], "b": {"c": "d"}} )");
  const JsonArray& a = v.find("a")->as_array();
  BOOST_TEST(a.size() == 6u);
  BOOST_TEST(a[0].as_number() == 1.0);
  BOOST_TEST(a[1].as_number() == -250.0);
  BOOST_TEST(a[2].as_number() == 0.125);
  BOOST_TEST(a[3].as_bool());
  BOOST_TEST(!a[4].as_bool());
  BOOST_TEST(a[5].is_null());
  BOOST_TEST(v.find("b")->find("c")->as_string() == "d");
  BOOST_TEST(v.find("missing") == nullptr);
}

BOOST_AUTO_TEST_CASE(string_escapes_decode_to_utf8_including_surrogate_pairs) {
  JsonValue v = parse_json(R"("q\" b\\ s\/ \b\f\n\r\t \u00e9 \u20AC \ud83d\ude00")");
  BOOST_TEST(v.as_string() == "q\" b\\ s/ \b\f\n\r\t \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
}

BOOST_AUTO_TEST_CASE(lone_surrogates_become_replacement_characters) {
  BOOST_TEST(parse_json(R"("a\ud83db")").as_string() ==
             "a\xEF\xBF\xBD"
             "b");
  BOOST_TEST(parse_json(R"("\ude00")").as_string() == "\xEF\xBF\xBD");
  // A high surrogate followed by an escape that is not a low surrogate keeps that escape.
  BOOST_TEST(parse_json(R"("\ud83d\u0041")").as_string() ==
             "\xEF\xBF\xBD"
             "A");
}

BOOST_AUTO_TEST_CASE(raw_utf8_in_strings_passes_through_unchanged) {
  BOOST_TEST(parse_json("\"caf\xC3\xA9 \xE6\x97\xA5\"").as_string() == "caf\xC3\xA9 \xE6\x97\xA5");
}

BOOST_AUTO_TEST_CASE(duplicate_keys_keep_the_last_value) {
  BOOST_TEST(parse_json(R"({"k": 1, "k": 2})").find("k")->as_number() == 2.0);
}

BOOST_AUTO_TEST_CASE(malformed_documents_are_rejected_with_the_byte_offset) {
  const char* bad[] = {
      "",      "{",  "[1,]", "{\"a\":1,}", "\"abc",           "\"a\\x\"", "\"\\u12G4\"",
      "01",    "1.", "-",    "tru",        "{1: 2}",          "[1 2]",    "\"a\tb\"",
      "{} {}", "1e", "nul",  "{\"a\" 1}",  "[\"\\ud83d\\u\"]"};
  for (const char* text : bad) {
    JsonValue v;
    std::string error;
    BOOST_TEST(!try_parse_json(text, v, error), "accepted: " << text);
    BOOST_TEST(error.find("at byte") != std::string::npos);
  }
  BOOST_CHECK_THROW(parse_json("[1,]"), db::Error);
}

BOOST_AUTO_TEST_CASE(nesting_beyond_the_limit_is_an_error_not_a_stack_overflow) {
  std::string deep(100000, '[');
  JsonValue v;
  std::string error;
  BOOST_TEST(!try_parse_json(deep, v, error));
  BOOST_TEST(error.find("nesting") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(accessors_of_the_wrong_kind_throw_naming_the_value) {
  JsonValue v = parse_json("[1.5]");
  BOOST_CHECK_THROW(v.as_object("root"), db::Error);
  BOOST_CHECK_THROW(v.as_array()[0].as_integer("id", 0, 10), db::Error);
  BOOST_TEST(parse_json("7").as_integer("id", 0, 10) == 7);
}

BOOST_AUTO_TEST_CASE(numbers_written_read_back_exactly_and_non_finite_ones_are_null) {
  for (double v : {0.1, -2.5e-300, 1.0 / 3.0, 989.0})
    BOOST_TEST(parse_json(json_number(v)).as_number() == v);
  BOOST_TEST(json_number(std::nan("")) == "null");
  BOOST_TEST(json_number(-INFINITY) == "null");
}
