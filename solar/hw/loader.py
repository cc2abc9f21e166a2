"""Find, read and validate hardware-spec YAML files.

Contract: `load_hardware_spec(name_or_path) -> HardwareSpec` accepts a bundled
spec's canonical name (case-insensitive; ``-``, ``_`` and spaces are
interchangeable) or the path of a user YAML file. Bundled specs live in the
top-level ``hardware_specs/`` directory of the source tree, or in
``solar/hardware_specs`` inside a wheel (force-included at build time), one file
per device named ``<canonical name lowercased>.yaml``.

Every failure is a `solar.diagnostics.HardwareSpecError`; no yaml or pydantic
exception escapes:

* ``E0401`` unknown spec name or unreadable file (the message suggests close names);
* ``E0402`` YAML syntax error or duplicate key (with file, line and column);
* ``E0403`` schema error: unknown keys, missing or mistyped fields, each listed;
* ``E0404`` sanity error: see `solar.hw.spec.sanity_problems`.

YAML is read with a safe loader that also accepts exponent floats without a
dot or sign (``989.4e12``, ``80e9``), which YAML 1.1 would read as strings.
Loaded specs are cached; a user file is re-read when its mtime changes.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections.abc import Hashable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from solar.diagnostics import HardwareSpecError, Span, UsageError
from solar.diagnostics import Source as TextSource
from solar.files import read_text
from solar.hw.spec import SANITY_ERROR_TYPE, HardwareSpec

__all__ = [
    "dump_hardware_spec",
    "hardware_spec_dir",
    "list_hardware_specs",
    "load_hardware_spec",
    "parse_hardware_spec",
    "validate_hardware_spec",
]

SPEC_DIR_NAME = "hardware_specs"
_SENTINEL = "h100_sxm.yaml"
_MAX_SPEC_BYTES = 1 << 20
"""A hardware spec is a page of YAML; a larger file is refused unread (E0401)."""

_Loc = Sequence[str | int]


class _SpecLoader(yaml.SafeLoader):
    """A safe loader that rejects duplicate keys and reads YAML 1.2 exponent floats."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        # PyYAML silently keeps the last of two equal keys; in a spec that hides
        # a typo'd figure, so it is a syntax error here.
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable):
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key!r}",
                        key_node.start_mark,
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def hardware_spec_dir() -> Path:
    """Return the directory holding the bundled spec YAML files.

    The source tree wins (editable installs cannot see force-included files);
    otherwise the copy packaged inside the wheel.

    Returns:
        The directory path (it may not exist in a broken install).
    """
    source_tree = Path(__file__).resolve().parents[2] / SPEC_DIR_NAME
    if (source_tree / _SENTINEL).is_file():
        return source_tree
    return Path(str(resources.files("solar") / SPEC_DIR_NAME))


def load_hardware_spec(name_or_path: str | os.PathLike[str]) -> HardwareSpec:
    """Load a bundled spec by name, or a user spec from a YAML file.

    A string is taken as a path if it ends in ``.yaml``/``.yml`` or contains a
    path separator; otherwise as a name.

    Args:
        name_or_path: e.g. ``"H100_SXM"``, ``"h100-sxm"`` or ``"specs/my_gpu.yaml"``.

    Returns:
        The validated spec (cached: treat it as immutable).

    Raises:
        HardwareSpecError: E0401 unknown name or unreadable file; E0402 YAML
            syntax; E0403 schema; E0404 sanity.
    """
    if isinstance(name_or_path, os.PathLike) or _looks_like_path(name_or_path):
        path = Path(name_or_path)
        try:
            mtime_ns = path.stat().st_mtime_ns
        except OSError as err:
            raise HardwareSpecError(
                f"cannot read hardware spec file `{path}`: {err.strerror}", code="E0401"
            ) from err
        return _load_file(path.resolve(), mtime_ns)
    key = _normalize(name_or_path)
    if key not in _bundled_files():
        raise _unknown_name_error(name_or_path.strip(), key)
    return _load_bundled(key)


@functools.lru_cache(maxsize=1)
def list_hardware_specs() -> tuple[HardwareSpec, ...]:
    """Return every bundled spec, sorted by canonical name.

    Raises:
        HardwareSpecError: if a bundled file is invalid (a packaging bug).
    """
    specs = (_load_bundled(stem) for stem in _bundled_files())
    return tuple(sorted(specs, key=lambda spec: spec.name))


def parse_hardware_spec(text: str, *, filename: str = "<string>") -> HardwareSpec:
    """Parse and validate a spec from YAML text.

    Args:
        text: the YAML document.
        filename: shown in diagnostics.

    Returns:
        The validated spec.

    Raises:
        HardwareSpecError: E0402 YAML syntax; E0403 schema; E0404 sanity. Errors
            carry a span pointing at the offending key where one can be found.
    """
    data, source, root = _yaml_mapping(text, filename=filename, what="hardware spec")
    try:
        return HardwareSpec.model_validate(data)
    except ValidationError as err:
        raise _validation_error(err, filename, source, root) from err


def _yaml_mapping(
    text: str, *, filename: str, what: str
) -> tuple[Mapping[str, object], TextSource, yaml.Node | None]:
    """Read a spec file's YAML mapping with the spec loader (shared by cluster specs).

    Raises:
        HardwareSpecError: E0402 YAML syntax; E0403 not a mapping.
    """
    source = TextSource(filename, text)
    loader: _SpecLoader | None = None
    try:
        loader = _SpecLoader(text)  # its reader refuses a NUL or another control character
        root = loader.get_single_node()
        data: object = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as err:
        raise _yaml_error(err, source) from err
    except RecursionError:
        raise HardwareSpecError(
            f"invalid YAML in {what} {filename}: nested too deeply", code="E0402"
        ) from None
    except ValueError as err:  # e.g. an integer over Python's conversion digit limit
        raise HardwareSpecError(
            f"invalid YAML in {what} {filename}: {str(err).split(';')[0]}", code="E0402"
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(data, Mapping):
        raise HardwareSpecError(
            f"{what} {filename} must be a YAML mapping of field names to values",
            code="E0403",
        )
    return data, source, root


def validate_hardware_spec(data: Mapping[str, object], *, origin: str) -> HardwareSpec:
    """Validate a spec given as a mapping (e.g. built by calibration code).

    Args:
        data: field names to values, as in a spec YAML file.
        origin: what produced ``data``; shown in diagnostics.

    Returns:
        The validated spec.

    Raises:
        HardwareSpecError: E0403 schema; E0404 sanity.
    """
    try:
        return HardwareSpec.model_validate(data)
    except ValidationError as err:
        raise _validation_error(err, origin, None, None) from err


def dump_hardware_spec(spec: HardwareSpec) -> str:
    """Render a spec as YAML that `parse_hardware_spec` reads back to an equal spec.

    Args:
        spec: the spec to write.

    Returns:
        The YAML text (fields in schema order and spelled as in spec files,
        ``None`` fields omitted).
    """
    data = spec.model_dump(mode="json", exclude_none=True, by_alias=True)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def _looks_like_path(name_or_path: str) -> bool:
    return name_or_path.endswith((".yaml", ".yml")) or "/" in name_or_path or os.sep in name_or_path


def _normalize(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip()).lower()


@functools.lru_cache(maxsize=1)
def _bundled_files() -> dict[str, Path]:
    directory = hardware_spec_dir()
    if not directory.is_dir():
        return {}
    return {path.stem: path for path in sorted(directory.glob("*.yaml"))}


@functools.cache
def _load_bundled(key: str) -> HardwareSpec:
    path = _bundled_files().get(key)
    if path is None:
        raise _unknown_name_error(key, key)
    spec = parse_hardware_spec(path.read_text(encoding="utf-8"), filename=str(path))
    if spec.name.lower() != path.stem:
        raise HardwareSpecError(
            f"bundled spec {path} holds `{spec.name}`; its file must be named "
            f"`{spec.name.lower()}.yaml`",
            code="E0404",
        )
    return spec


@functools.lru_cache(maxsize=64)
def _load_file(path: Path, mtime_ns: int) -> HardwareSpec:
    # mtime_ns is part of the cache key only: an edited file is read afresh.
    del mtime_ns
    try:  # a FIFO, a device or a huge file is refused unread (Note [Guarded reads])
        text = read_text(path, max_bytes=_MAX_SPEC_BYTES)
    except UsageError as err:
        reason = err.message.removeprefix(f"cannot read {path}: ")
        if "UTF-8" in reason:
            raise HardwareSpecError(
                f"hardware spec file `{path}` is {reason}", code="E0402"
            ) from None
        raise HardwareSpecError(
            f"cannot read hardware spec file `{path}`: {reason}", code="E0401"
        ) from None
    return parse_hardware_spec(text, filename=str(path))


def _unknown_name_error(name: str, key: str) -> HardwareSpecError:
    canonical = {_normalize(spec.name): spec.name for spec in list_hardware_specs()}
    # A name the user typed a prefix of ("a100") beats difflib's ranking,
    # which would put "h200" first.
    partial = [c for c in sorted(canonical) if key and key in c]
    fuzzy = difflib.get_close_matches(key, list(canonical), n=3, cutoff=0.5)
    close = list(dict.fromkeys(partial + fuzzy))[:3]
    message = f"unknown hardware spec `{name}`"
    if close:
        message += "; did you mean " + " or ".join(f"`{canonical[c]}`" for c in close) + "?"
    available = ", ".join(sorted(canonical.values())) or f"none found in {hardware_spec_dir()}"
    return HardwareSpecError(
        message,
        code="E0401",
        notes=(f"available: {available}", "or pass the path of a spec YAML file"),
    )


def _yaml_error(err: yaml.YAMLError, source: TextSource) -> HardwareSpecError:
    mark = err.problem_mark if isinstance(err, yaml.MarkedYAMLError) else None
    problem = (err.problem if isinstance(err, yaml.MarkedYAMLError) else None) or str(err)
    problem = problem.splitlines()[0] if problem else "?"
    if mark is None:
        return HardwareSpecError(
            f"invalid YAML in hardware spec {source.name}: {problem}", code="E0402"
        )
    return HardwareSpecError(
        f"invalid YAML in hardware spec {source.name}:{mark.line + 1}:{mark.column + 1}: {problem}",
        code="E0402",
        span=Span(source, mark.index, mark.index + 1),
    )


def _validation_error(
    err: ValidationError,
    origin: str,
    source: TextSource | None,
    root: yaml.Node | None,
) -> HardwareSpecError:
    items: list[tuple[_Loc, str]] = []
    code = "E0403"
    for detail in err.errors():
        if detail["type"] == SANITY_ERROR_TYPE:
            code = "E0404"
            problems: tuple[tuple[str, str], ...] = detail.get("ctx", {})["problems"]
            items.extend((_split_loc(loc), msg) for loc, msg in problems)
        else:
            items.append((detail["loc"], _describe(detail["type"], detail["loc"], detail["msg"])))
    nodes = [_find_node(root, loc) for loc, _ in items]
    # One problem is fully told by the message and span; several are listed.
    notes = tuple(
        f"{_show_loc(loc)}: {msg}" + (f" (line {node.start_mark.line + 1})" if node else "")
        for (loc, msg), node in zip(items, nodes, strict=True)
        if len(items) > 1
    )
    kind = "fails sanity checks" if code == "E0404" else "does not match the schema"
    first_loc, first_msg = items[0]
    message = f"hardware spec {origin} {kind}: {_show_loc(first_loc)}: {first_msg}"
    if len(items) > 1:
        message += f" (and {len(items) - 1} more)"
    span = None
    if source is not None and nodes[0] is not None:
        start, end = nodes[0].start_mark.index, nodes[0].end_mark.index
        span = Span(source, start, max(end, start + 1))
    return HardwareSpecError(message, code=code, span=span, notes=notes)


def _describe(error_type: str, loc: _Loc, msg: str) -> str:
    if error_type == "extra_forbidden":
        return f"unknown key `{loc[-1]}`"
    if error_type == "missing":
        return "required key is missing"
    return msg[0].lower() + msg[1:] if msg else error_type


def _split_loc(loc: str) -> list[str | int]:
    return [int(part) if part.isdigit() else part for part in loc.split(".")]


def _show_loc(loc: _Loc) -> str:
    shown = [str(part) for part in loc if part != "[key]"]
    return ".".join(shown) or "<spec>"


def _find_node(root: yaml.Node | None, loc: _Loc) -> yaml.Node | None:
    """Return the YAML node (the key, for mapping entries) that ``loc`` names.

    Stops at the deepest part of ``loc`` found, so a missing key points at its
    parent mapping's key.
    """
    node, found = root, None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            entry = next(
                ((k, v) for k, v in node.value if getattr(k, "value", None) == str(part)), None
            )
            if entry is None:
                break
            found, node = entry
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                break
            node = found = node.value[part]
        else:
            break
    return found
