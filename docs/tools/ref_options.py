"""``docs/reference/run-options.md`` and ``profile-keys.md``: the run options' one table
(``harness/model/run_options.toml``, loaded as :data:`proofdiff.model.run_options.OPTIONS`)
with the commands and the pytest flags that take each, and every key a profile may set
(:data:`proofdiff.model.profile.PROFILE_KEYS`)."""

from __future__ import annotations

import argparse

from ref_cli import HEADER, _subparsers, cell

__all__ = ["render_profile_keys", "render_run_options"]


def _default(value: object) -> str:
    if value in ("", (), {}, None):
        return ""
    return f"`{getattr(value, 'value', value)}`"


def render_run_options(parser: argparse.ArgumentParser) -> str:
    """run-options.md: the options by group, in the table's order."""
    from proofdiff.model.run_options import OPTIONS, PARSERS, shown_default
    from proofdiff_pytest.plugin_options import PLUGIN_OPTIONS, PREFIX

    sub, _ = _subparsers(parser)
    takers: dict[str, list[str]] = {}
    for name, p in sub.choices.items():
        for action in p._actions:
            for flag in action.option_strings:
                takers.setdefault(f"{flag}={action.dest}", []).append(name)
    parse_names = {fn: name for name, fn in PARSERS.items()}
    in_pytest = {spec.flag for spec in PLUGIN_OPTIONS}
    lines = ["# Run options", "", HEADER.format(source="harness/model/run_options.toml"), "",
             "What a run is asked to do: one table (`harness/model/run_options.toml`) from "
             "which every command line and the pytest plugin declare their options; a command "
             "takes the groups that apply to it. In pytest each flag is `--proofdiff-FLAG`. "
             "The default column is `RunOptions`' own (empty: none, or each profile's or the "
             "environment's, as the help says).", ""]
    groups = list(dict.fromkeys(spec.group for spec in OPTIONS))
    for group in groups:
        lines += [f"## {group}", "",
                  "| option | pytest | sets | checked as | default | commands | what it does |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for spec in (s for s in OPTIONS if s.group == group):
            flag = f"--{spec.flag}"
            shown = flag if spec.switch else f"{flag} {spec.metavar}"
            notes = [n for n, on in (("repeatable", spec.repeat), ("switch", spec.switch)) if on]
            if spec.bare is not None:
                notes.append(f"value optional (alone: `{spec.bare}`)")
            checked = "; ".join([parse_names.get(spec.parse, "") if spec.parse else "text",
                                 *notes])
            commands = ", ".join(takers.get(f"{flag}={spec.dest}", [])) or "none"
            pytest_flag = f"`--{PREFIX}{spec.flag}`" if spec.flag in in_pytest else ""
            lines.append(f"| {cell(f'`{shown}`')} | {cell(pytest_flag)} | "
                         f"`{spec.field}` | {cell(checked)} | "
                         f"{cell(_default(shown_default(spec)))} | {cell(commands)} | "
                         f"{cell(spec.help)} |")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def render_profile_keys() -> str:
    """profile-keys.md: every key a profile may set, in :data:`PROFILE_KEYS` order."""
    from proofdiff.model.profile import PROFILE_KEYS

    lines = ["# Profile keys", "", HEADER.format(source="proofdiff.model.profile.PROFILE_KEYS"),
             "", "Every key a profile may set, in a profile file (`[profiles.NAME]`) or with "
             "`--set PROFILE.KEY=VALUE`; a key not in this table is refused, with this table "
             "in the error.", "", "| key | meaning |", "| --- | --- |"]
    lines += [f"| `{key}` | {cell(meaning)} |" for key, meaning in PROFILE_KEYS.items()]
    return "\n".join(lines) + "\n"
