"""kunit.py's repeatable knobs given more than once, against the fake kernel: every occurrence reaches make, the
guest's command line and QEMU's, in the order given, as kunit.py appends them."""

from __future__ import annotations

import json
import shlex

import pytest

from .conftest import FakeKernel


def test_every_occurrence_reaches_make_the_kernel_and_qemu(project: pytest.Pytester, fake_kernel: FakeKernel) -> None:
    options = (
        "--kunit-make-options=W=1",
        "--kunit-make-options=KCFLAGS='-O1 -g'",
        "--kunit-kernel-args=fake.first=1",
        '--kunit-kernel-args=fake.label="a b"',
        "--kunit-qemu-args=-smp 2",
        "--kunit-qemu-args=-name twice",
    )
    result = project.runpytest(*fake_kernel.options("-k", "other", *options))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["kunit: kernel source *; make options W=1 'KCFLAGS=-O1 -g'*"])
    runs = [
        shlex.split(json.loads(line)[1])
        for record in fake_kernel.cache.glob("build/*/make-variables")
        for line in record.read_text().splitlines()
    ]
    assert runs and all({"W=1", "KCFLAGS=-O1 -g"} <= set(variables) for variables in runs)
    boots = fake_kernel.boots()
    assert len(boots) == 2  # the list boot and the test boot
    for boot in boots:
        assert (boot["params"]["fake.first"], boot["params"]["fake.label"]) == ("1", "a b")
        assert boot["argv"][-4:] == ["-smp", "2", "-name", "twice"]
