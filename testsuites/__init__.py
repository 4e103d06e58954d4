"""pytest-kunit's kernel suites. This file makes them a package, so an installed pytest-kunit runs them with
`pytest --kunit --pyargs pytest_kunit.testsuites`; from a checkout, `pytest --kunit testsuites/`."""
