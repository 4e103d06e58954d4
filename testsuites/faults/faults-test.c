// SPDX-License-Identifier: GPL-2.0
/*
 * Cases that fail in every way a kernel test can: the runner must report each one with the right outcome and
 * evidence, and lose none of the passing cases around them. Never enable this in a kernel anyone uses.
 */
#include <kunit/test.h>
#include <linux/bug.h>
#include <linux/delay.h>
#include <linux/kernel.h>

static void faults_pass_first(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 2, 1 + 1);
}

static void faults_fail(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 3, 1 + 1);
}

static void faults_pass_after_fail(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, true);
}

static const int faults_params_values[] = { 1, 2, 3 };

static void faults_params_desc(const int *value, char *desc)
{
	snprintf(desc, KUNIT_PARAM_DESC_SIZE, "value %d", *value);
}

KUNIT_ARRAY_PARAM(faults_params, faults_params_values, faults_params_desc);

/* One parameter of three fails: the case fails, naming that parameter. */
static void faults_params_one_fails(struct kunit *test)
{
	const int *value = test->param_value;

	KUNIT_EXPECT_NE(test, *value, 2);
}

static void faults_null_dereference(struct kunit *test)
{
	int *volatile nothing = NULL;

	KUNIT_EXPECT_EQ(test, 0, *nothing);
}

static void faults_pass_after_null_dereference(struct kunit *test)
{
	KUNIT_EXPECT_STREQ(test, "still", "still");
}

static void faults_bug(struct kunit *test)
{
	BUG();
}

static void faults_pass_after_bug(struct kunit *test)
{
	KUNIT_EXPECT_NE(test, 0, 1);
}

static void faults_hang_forever(struct kunit *test)
{
	/* Ignores kthread_stop(): only the runner's watchdog can end this. */
	for (;;)
		msleep(1000);
}

static void faults_pass_after_hang(struct kunit *test)
{
	KUNIT_EXPECT_LT(test, 1, 2);
}

static void faults_panic(struct kunit *test)
{
	panic("pytest-kunit fault suite: deliberate panic");
}

static void faults_pass_last(struct kunit *test)
{
	KUNIT_EXPECT_GE(test, 2, 2);
}

static struct kunit_case faults_cases[] = {
	KUNIT_CASE(faults_pass_first),
	KUNIT_CASE(faults_fail),
	KUNIT_CASE(faults_pass_after_fail),
	KUNIT_CASE_PARAM(faults_params_one_fails, faults_params_gen_params),
	KUNIT_CASE(faults_null_dereference),
	KUNIT_CASE(faults_pass_after_null_dereference),
	KUNIT_CASE(faults_bug),
	KUNIT_CASE(faults_pass_after_bug),
	KUNIT_CASE(faults_hang_forever),
	KUNIT_CASE(faults_pass_after_hang),
	KUNIT_CASE(faults_panic),
	KUNIT_CASE(faults_pass_last),
	{}
};

static struct kunit_suite faults_suite = {
	.name = "faults",
	.test_cases = faults_cases,
};
kunit_test_suite(faults_suite);

MODULE_LICENSE("GPL");
