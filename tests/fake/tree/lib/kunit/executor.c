/* Fake executor: the runner reads this file to learn what kunit.filter_glob accepts. */
MODULE_PARM_DESC(filter_glob, "Filter which KUnit test suites/tests run at boot-time: a comma-separated list of globs");
