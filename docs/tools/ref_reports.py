"""``docs/reference/reports.md``: the report folder's files and every field of each workflow's
``summary.json``, walked from its JSON Schema (the gate's published
``harness/gate/gate.schema.json``; the others as msgspec generates them from the result
records, the way the gate's is made), and the files each report view writes, from the view
modules' own docstrings."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from ref_cli import HEADER, cell

__all__ = ["render_reports"]

#: Each report kind: its title, the result record (module, class) whose msgspec encoding is its
#: summary.json, the shipped schema file if it has one, and the view module that writes it.
KINDS: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("run", "`proofdiff run`, `catch-matrix`, `repro` and the pytest plugin: a differential",
     "proofdiff.model.result", "DifferentialResult", "", "harness/report/differential_view.py"),
    ("gate", "`proofdiff gate`", "proofdiff.gate.gate_result", "GateResult",
     "harness/gate/gate.schema.json", "harness/gate/gate_view.py"),
    ("bisect", "`proofdiff bisect`", "proofdiff.bisect.bisect_result", "BisectResult", "",
     "harness/bisect/bisect_view.py"),
    ("nightly", "`proofdiff nightly`", "proofdiff.nightly.nightly_result", "NightlyResult", "",
     "harness/nightly/nightly_view.py"),
)


def _docstring(root: Path, rel: str) -> str:
    """A module's docstring, read from its source (no import: a view loads matplotlib)."""
    return ast.get_docstring(ast.parse((root / rel).read_text(encoding="utf-8"))) or ""


def _schema(root: Path, module: str, cls: str, shipped: str) -> dict[str, Any]:
    if shipped:
        doc: dict[str, Any] = json.loads((root / shipped).read_text(encoding="utf-8"))
        return doc
    import importlib

    import msgspec

    return msgspec.json.schema(getattr(importlib.import_module(module), cls))


def _type(s: Any, kind: str) -> str:
    if not isinstance(s, dict):
        return "any"
    if "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{kind}-{name.lower()})"
    if "anyOf" in s:
        return " or ".join(_type(x, kind) for x in s["anyOf"])
    if "enum" in s:
        return "one of " + ", ".join(f"`{v}`" for v in s["enum"])
    t = s.get("type")
    if t == "array" and "prefixItems" in s:
        return "array [" + ", ".join(_type(x, kind) for x in s["prefixItems"]) + "]"
    if t == "array":
        return f"array of {_type(s.get('items', {}), kind)}"
    if t == "object" and isinstance(s.get("additionalProperties"), dict):
        return f"object of {_type(s['additionalProperties'], kind)}"
    if isinstance(t, list):
        return " or ".join(map(str, t))
    return str(t or "any")


def _order(schema: dict[str, Any]) -> list[str]:
    """The schema's $defs, the root first, then as first referenced (breadth first)."""
    defs = schema.get("$defs", {})
    root = schema.get("$ref", "").rsplit("/", 1)[-1]
    seen, todo = [], [root] if root else []
    while todo:
        name = todo.pop(0)
        if name in seen or name not in defs:
            continue
        seen.append(name)
        text = json.dumps(defs[name], sort_keys=True)
        todo += [r.split('"')[0] for r in text.split('"$ref": "#/$defs/')[1:]]
    return seen + sorted(set(defs) - set(seen))


def _definition(kind: str, name: str, s: dict[str, Any]) -> list[str]:
    lines = [f"### {kind}: {name}", ""]
    if s.get("description"):
        lines += ["```text", s["description"], "```", ""]
    if "enum" in s:
        return lines + [f"One of {', '.join(f'`{v}`' for v in s['enum'])}.", ""]
    required = set(s.get("required", ()))
    props = s.get("properties", {})
    described = any("description" in p for p in props.values())  # else the docstring says it
    lines += ["| field | type | required | default |" + (" description |" if described else ""),
              "| --- | --- | --- | --- |" + (" --- |" if described else "")]
    for field, prop in props.items():
        default = f"`{json.dumps(prop['default'])}`" if "default" in prop else ""
        lines.append(f"| `{field}` | {cell(_type(prop, kind))} | "
                     f"{'yes' if field in required else ''} | {cell(default)} |"
                     + (f" {cell(prop.get('description', ''))} |" if described else ""))
    return lines + [""]


def render_reports(root: Path) -> str:
    """reports.md (module docstring); ``root`` is the checkout (the sources are read there)."""
    lines = ["# Reports", "", HEADER.format(source="the result records' JSON Schemas and the "
                                           "report views"), "",
             "Every workflow writes its report folder, `REPORT_DIR/RUN_ID/`, through one "
             "writer (`harness/report/writer.py`):", "", "```text",
             _docstring(root, "harness/report/writer.py"), "```", "",
             "`summary.json` is the workflow's result record, encoded by msgspec; its fields "
             "are below, per workflow, walked from its JSON Schema (a struct's description is "
             "its docstring).", ""]
    lines += [f"- [{title}](#{kind})" for kind, title, *_ in KINDS]
    lines.append("")
    for kind, title, module, cls, shipped, view in KINDS:
        schema = _schema(root, module, cls, shipped)
        source = f"`{shipped}`" if shipped else f"msgspec's schema of `{module}.{cls}`"
        lines += [f"## {kind}", "", f"Written by {title}. "
                  f"Schema: {source}. The files (`{view}`):", "", "```text",
                  _docstring(root, view), "```", ""]
        for name in _order(schema):
            lines += _definition(kind, name, schema["$defs"][name])
    return "\n".join(lines).rstrip("\n") + "\n"
