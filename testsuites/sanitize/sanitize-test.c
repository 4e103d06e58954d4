// SPDX-License-Identifier: GPL-2.0
/*
 * Cases that break memory and arithmetic rules on purpose, among cases that pass: the runner must fail exactly the
 * case each sanitizer report belongs to. Needs KASAN and UBSAN; never enable this in a kernel anyone uses.
 */
#include <kunit/test.h>
#include <linux/compiler.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>

/* Not a multiple of KASAN's 8-byte granule: the byte after the buffer is poisoned in the same granule. */
#define BUFFER_SIZE 123

static void overflow(char *buffer, size_t size)
{
	OPTIMIZER_HIDE_VAR(buffer);
	OPTIMIZER_HIDE_VAR(size);
	((volatile char *)buffer)[size] = 'x';
}

static void sanitize_pass_first(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, 2, 1 + 1);
}

/* In the test's own thread: KASAN's KUnit integration fails the case itself. */
static void sanitize_kmalloc_overflow(struct kunit *test)
{
	char *buffer = kmalloc(BUFFER_SIZE, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, buffer);
	overflow(buffer, BUFFER_SIZE);
	kfree(buffer);
}

/*
 * Leaks on purpose: kmemleak (--kunit-sanitize kmemleak) finds it in the scan after the last suite, which fails the
 * run. Early in the suite, so the later cases' threads reuse and overwrite this thread's stack: a stale copy of the
 * pointer there would hide the leak from kmemleak's conservative scan.
 */
static void sanitize_leak(struct kunit *test)
{
	char *leaked = kmalloc(BUFFER_SIZE, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, leaked);
	memset(leaked, 'l', BUFFER_SIZE);
}

static void sanitize_pass_after_overflow(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, true);
}

struct overflow_work {
	struct work_struct work;
	char *buffer;
};

static void overflow_work_fn(struct work_struct *work)
{
	overflow(container_of(work, struct overflow_work, work)->buffer, BUFFER_SIZE);
}

/* In a work item, where current->kunit_test is NULL: the case's own result line says ok. */
static void sanitize_overflow_in_work(struct kunit *test)
{
	struct overflow_work item;

	item.buffer = kunit_kmalloc(test, BUFFER_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, item.buffer);
	INIT_WORK_ONSTACK(&item.work, overflow_work_fn);
	schedule_work(&item.work);
	flush_work(&item.work);
	destroy_work_on_stack(&item.work);
}

/* Undefined behaviour UBSAN reports (and, through kunit_fail_current_test, fails the case for). */
static void sanitize_shift_overflow(struct kunit *test)
{
	volatile int one = 1;
	volatile int shift = 40;

	KUNIT_EXPECT_NE(test, one << shift, 12345);
}

static void sanitize_pass_last(struct kunit *test)
{
	KUNIT_EXPECT_STREQ(test, "still", "still");
}

static struct kunit_case sanitize_cases[] = {
	KUNIT_CASE(sanitize_pass_first),
	KUNIT_CASE(sanitize_leak),
	KUNIT_CASE(sanitize_kmalloc_overflow),
	KUNIT_CASE(sanitize_pass_after_overflow),
	KUNIT_CASE(sanitize_overflow_in_work),
	KUNIT_CASE(sanitize_shift_overflow),
	KUNIT_CASE(sanitize_pass_last),
	{}
};

static struct kunit_suite sanitize_suite = {
	.name = "sanitize",
	.test_cases = sanitize_cases,
};
kunit_test_suite(sanitize_suite);

MODULE_LICENSE("GPL");
