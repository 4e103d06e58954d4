"""Project-wide pytest set-up: the pytester fixture for the plugin's own end-to-end tests."""

pytest_plugins = ["pytester"]
