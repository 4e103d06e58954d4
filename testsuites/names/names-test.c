// SPDX-License-Identifier: GPL-2.0
/*
 * Names KUnit allows that no C identifier can be: a suite and cases named with spaces, punctuation and non-ASCII
 * letters (net/handshake's suite is "Handshake API tests"), and parameters described with spaces. One case fails on
 * purpose, so that a failure under such a name is reported too. Never enable this in a kernel anyone uses.
 */
#include <kunit/test.h>
#include <linux/kernel.h>

static void names_pass(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 2, 1 + 1);
}

static void names_fail(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 3, 1 + 1);
}

static const char * const names_params_values[] = { "first value", "second value" };

static void names_params_desc(const char * const *value, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "%s", *value);
}

KUNIT_ARRAY_PARAM(names_params, names_params_values, names_params_desc);

static void names_params_pass(struct kunit *test)
{
	const char * const *value = test->param_value;

	KUNIT_EXPECT_NOT_NULL(test, *value);
}

static struct kunit_case names_cases[] = {
	{ .run_case = names_pass, .name = "a case with spaces" },
	{ .run_case = names_pass, .name = "punctuation (parens) [brackets] & more" },
	{ .run_case = names_pass, .name = "non-ASCII naïve café" },
	{ .run_case = names_fail, .name = "a failing case with spaces" },
	{ .run_case = names_params_pass, .name = "parameters with spaces",
	  .generate_params = names_params_gen_params },
	{}
};

static struct kunit_suite names_suite = {
	.name = "pytest-kunit names with spaces",
	.test_cases = names_cases,
};
kunit_test_suite(names_suite);

MODULE_LICENSE("GPL");
