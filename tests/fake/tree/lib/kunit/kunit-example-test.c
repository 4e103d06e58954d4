// SPDX-License-Identifier: GPL-2.0
/* Fake source: gives the runner a C location for the example cases. */
#include <kunit/test.h>

static void example_simple_test(struct kunit *test)
{
}

static void example_failing_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 1 + 1, 3);
}

static struct kunit_case example_test_cases[] = {
	KUNIT_CASE(example_simple_test),
	KUNIT_CASE(example_failing_test),
	{}
};
