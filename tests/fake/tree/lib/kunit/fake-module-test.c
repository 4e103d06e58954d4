/* The fake suite whose "config" is FAKE_MODULE_TEST (tests/plugin/test_modules.py): built in at =y, the module fake-module-test.ko at =m. */
