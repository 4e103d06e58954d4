"""The pytest face: settings from options, collection nodes, failure reports, KCIDB results, the session's hooks."""
