/* Fake KUnit core (its executor prints the case list): compiled into lib/kunit/core.o when guest.json asks for objects. */
const char kunit_list_format[] = "%s.%s";
