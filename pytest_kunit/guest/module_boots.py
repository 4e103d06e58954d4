"""--kunit-modules boots: which of a kernel's modules a boot loads, and which cases that boot runs.

A boot runs the built-in suites its filter selects at boot, then /init loads its modules, each running its suites
as it comes in. 6.6 and later filter a loaded module's suites with kunit.filter_glob as they do built-in ones; 6.1
(with or without the series) runs every suite of every module loaded. So a boot loads only the modules holding a
case it runs (and the modules those need); on 6.1 the other cases of those modules run too, and their results are
ignored: never reported as the outcome of a case that was not selected.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..model import Attributes, CaseId, Kernel, SuiteModule
from .planning import BootFilter, executed_cases


def module_cases(module: SuiteModule) -> list[CaseId]:
    return [(suite, case) for suite, cases in module.suites for case in cases]


def builtin_cases(kernel: Kernel) -> list[CaseId]:
    """The kernel's cases that run at boot, in order."""
    in_modules = {suite for module in kernel.modules for suite, _ in module.suites}
    return [case for case in kernel.cases if case[0] not in in_modules]


def loading(kernel: Kernel, boot_filter: BootFilter) -> BootFilter:
    """The filter with the modules its boot loads: those holding a case it selects, and those they need."""
    selected = set(executed_cases(kernel.cases, boot_filter))
    by_name = {module.name: module for module in kernel.modules}
    needed: set[str] = set()

    def need(module: SuiteModule) -> None:
        if module.name not in needed:
            needed.add(module.name)
            for other in module.depends:
                if other in by_name:
                    need(by_name[other])

    for module in kernel.modules:
        if any(case in selected for case in module_cases(module)):
            need(module)
    return replace(boot_filter, modules=tuple(module.name for module in kernel.modules if module.name in needed))


def executed(kernel: Kernel, boot_filter: BootFilter, attributes: Mapping[CaseId, Attributes]) -> list[CaseId]:
    """The cases a boot runs, in the order it runs them: the built-in ones its filter selects, then those of each
    module it loads (on a kernel whose module loader applies no filter, every one of them)."""
    cases = executed_cases(builtin_cases(kernel), boot_filter, attributes)
    loaded = set(boot_filter.modules or ())
    for module in kernel.modules:
        if module.name in loaded:
            own = module_cases(module)
            cases += executed_cases(own, boot_filter) if kernel.features.module_filter else own
    return cases
