/* The fake suite modsuite (CONFIG_FAKE_MODULE_TEST): built in at =y, the module fake-module-test.ko at =m. */
