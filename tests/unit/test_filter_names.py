"""Names KUnit can print (spaces, punctuation, non-ASCII) in kunit.filter_glob: every wanted case runs, exactly
when the filter can name it, and the value reaches the kernel whole."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_kunit.guest.planning import (
    BootFilter,
    case_glob,
    executed_cases,
    list_filters,
    single_case_filters,
    single_glob_filters,
)
from pytest_kunit.model import CaseId

HANDSHAKE = [("Handshake API tests", "req_alloc API fuzzing"), ("Handshake API tests", "req_alloc excessive privsize")]
ODD = [("odd", "star*case"), ("odd", "what?"), ("odd", "[bracket]"), ("odd", "naïve café"), ("odd", "a.b")]
ROOM = 1500


def list_filter(all_cases: list[CaseId], wanted: list[CaseId]) -> str | None:
    """The one boot's filter, where the command line has room for one."""
    [glob] = list_filters(all_cases, wanted, ROOM)
    return glob


ALL: list[CaseId] = [*HANDSHAKE, *ODD, ("comma,suite", "x"), ("odd", "c,d"), ("dotted.suite", "y"), ("q", 'say "hi"')]


def kernel_param(command_line: str, name: str) -> str | None:
    """The value the kernel's own parser (lib/cmdline.c next_arg) gives `name`: words end at unquoted spaces, a
    `"` toggles quoting anywhere, and one pair of quotes around the value is dropped."""
    args = command_line.encode()
    found = None
    while args:
        args = args.lstrip(b" \t\n\xa0")
        if not args:
            break
        quoted = in_quote = args.startswith(b'"')
        if quoted:
            args = args[1:]
        index, equals = 0, 0
        while index < len(args):
            char = args[index : index + 1]
            if (char.isspace() or char == b"\xa0") and not in_quote:
                break
            if not equals and char == b"=":
                equals = index
            if char == b'"':
                in_quote = not in_quote
            index += 1
        word, args = args[:index], args[index + 1 :]
        if quoted and word.endswith(b'"'):
            word = word[:-1]
        key, value = (word[:equals], word[equals + 1 :]) if equals else (word, b"")
        if value.startswith(b'"'):
            value = value[1:]
            if value.endswith(b'"') and not quoted:
                value = value[:-1]
        if key.decode() == name:
            found = value.decode()
    return found


def test_names_with_spaces_are_filtered_exactly_and_quoted() -> None:
    wanted = [HANDSHAKE[0]]
    glob = list_filter(ALL, wanted)
    assert glob == "Handshake API tests.req_alloc API fuzzing"
    arg = BootFilter(glob).kernel_args()[0]
    assert arg == 'kunit.filter_glob="Handshake API tests.req_alloc API fuzzing"'
    assert kernel_param(f"console=ttyS0 {arg} panic=-1", "kunit.filter_glob") == glob
    assert executed_cases(ALL, glob) == wanted


def test_glob_characters_in_names_match_only_themselves() -> None:
    for case in ODD:
        glob = case_glob(case, in_list=True)
        assert glob is not None
        assert executed_cases(ALL, BootFilter(glob)) == [case]
    assert case_glob(("odd", "star*case"), in_list=True) == "odd.star[*]case"


def test_what_the_filter_cannot_name_runs_its_suite_or_everything() -> None:
    # A comma splits our series' list: its case runs with its whole suite.
    assert list_filter(ALL, [("odd", "c,d")]) == "odd"
    # A suite name with a comma (in a list), a dot (the kernel splits there) or a quote: an unfiltered boot.
    for wanted in (("comma,suite", "x"), ("dotted.suite", "y")):
        assert list_filter(ALL, [wanted]) is None
    assert case_glob(("q", 'say "hi"'), in_list=False) is None
    assert list_filter(ALL, [("q", 'say "hi"')]) == "q"
    # One glob only: a comma is a plain character there.
    assert single_case_filters([("odd", "c,d")]) == [BootFilter("odd.c,d", single=True)]
    assert executed_cases(ALL, BootFilter("odd.c,d", single=True)) == [("odd", "c,d")]
    assert single_case_filters([("dotted.suite", "y"), ("odd", "a.b")]) == [BootFilter()]
    assert single_glob_filters(ALL, [("dotted.suite", "y")]) == [BootFilter()]


NAME = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12).map(str.strip).filter(bool)


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(st.tuples(NAME, NAME), min_size=1, max_size=8, unique=True), st.data(), st.booleans())
def test_every_wanted_case_runs_and_the_value_reaches_the_kernel_whole(
    cases: list[CaseId], data: st.DataObject, in_list: bool
) -> None:
    wanted = data.draw(st.lists(st.sampled_from(cases), min_size=1, unique=True))
    in_order = [case for case in cases if case in wanted]
    if in_list:
        filters = [BootFilter(list_filter(cases, wanted))]
        nameable = list_filter(cases, wanted) is not None and all(case_glob(case, True) for case in wanted)
    else:
        filters = single_case_filters(wanted)
        nameable = all(case_glob(case, False) for case in wanted)
    for boot in filters:
        for arg in boot.kernel_args():
            assert kernel_param(f"a=b {arg} c", "kunit.filter_glob") == boot.glob
    ran = [case for boot in filters for case in executed_cases(cases, boot)]
    assert set(wanted) <= set(ran)  # nothing lost
    if nameable:
        assert sorted(ran) == sorted(in_order)  # and nothing more where the filter can name every case
    # The suite-per-boot plan runs every wanted case too.
    assert set(wanted) <= {case for boot in single_glob_filters(cases, wanted) for case in executed_cases(cases, boot)}
