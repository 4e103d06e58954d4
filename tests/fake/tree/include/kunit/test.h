/* Fake KUnit header: the runner reads struct kunit_suite's first member, where the suite tables' names are. */
struct kunit_suite {
	char name[256];
	struct kunit_case *test_cases;
};
