"""Snapshot files read within bounds: the one way every reader turns a file, a stream or text into documents.

Whatever the input, reading it ends within seconds with the documents or with one ``SnapshotError`` line
that names the file and the problem:

- Only regular files are opened. A directory, a device (``/dev/zero``), a FIFO or a socket is refused
  from ``stat`` before it is opened; the open itself is non-blocking and checked again with ``fstat``,
  so a FIFO swapped in meanwhile cannot hang the reader either.
- At most ``max_snapshot_bytes()`` are read (``GANGWEB_SNAPSHOT_MAX_BYTES``, default 256 MiB; a
  50,000-node dump of ``testkit/synthetic.py`` is 73 MB as JSON, 75 MB as YAML). Standard input is read in
  chunks and refused as soon as it passes the cap.
- A file whose name ends in ``.json`` is JSON. Any other text that starts with ``{`` or ``[`` is tried as
  JSON (one document or a stream) and otherwise read as YAML.
- YAML aliases may repeat at most ``MAX_ALIAS_NODES`` nodes in all (billion laughs, an aliased
  ``kind: List`` of lists), and an alias may not refer to a node that contains it. Text without an
  alias token (every ``kubectl`` dump) takes the plain libyaml loader as before, untouched.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from .errors import SnapshotError

MAX_BYTES_ENV = "GANGWEB_SNAPSHOT_MAX_BYTES"
DEFAULT_MAX_BYTES = 256 * 2**20
# YAML nodes that aliases may add beyond the ones written out, summed over the file. kubectl never writes
# aliases; PyYAML writes one per repeated Python object (a shared ``resources`` dict across 50,000 pods is
# about 350,000 nodes). Beyond it the expansion is refused before anything is built.
MAX_ALIAS_NODES = 1_000_000
_CHUNK = 8 * 2**20
_TOO_DEEP = "nests lists or objects too deeply to be Kubernetes objects"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FILE_TYPES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def max_snapshot_bytes() -> int:
    """The cap on a snapshot's size in bytes: ``GANGWEB_SNAPSHOT_MAX_BYTES`` or 256 MiB."""
    value = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not value:
        return DEFAULT_MAX_BYTES
    try:
        cap = int(value.replace("_", ""))
    except ValueError:
        cap = 0
    if cap <= 0:
        raise SnapshotError(f"{MAX_BYTES_ENV} must be a positive number of bytes, got {value!r}")
    return cap


def read_snapshot(source: str | os.PathLike[str] | BinaryIO) -> list[Any]:
    """The documents of a snapshot file (a path) or of a binary stream such as ``sys.stdin.buffer``."""
    cap = max_snapshot_bytes()
    if hasattr(source, "read"):
        label = (
            "snapshot on standard input"
            if source is getattr(sys.stdin, "buffer", None)
            else "snapshot stream"
        )
        data = _read_at_most(source.read, cap, label)
        return snapshot_documents(_decode(data, label), label=label, cap=cap)
    path = Path(source)
    label = f"snapshot file {path}"
    data = _read_file(path, cap, label)
    return snapshot_documents(
        _decode(data, label), label=label, json_only=path.name.lower().endswith(".json"), cap=cap
    )


def snapshot_documents(
    text: str, *, label: str = "snapshot", json_only: bool = False, cap: int | None = None
) -> list[Any]:
    """The documents of snapshot text: JSON (a document or a stream) or multi-document YAML."""
    cap = max_snapshot_bytes() if cap is None else cap
    if len(text) > cap:
        raise _too_large(label, cap, f"{len(text):,} characters")
    stripped = text.lstrip()
    if not stripped:
        raise SnapshotError(f"{label} is empty")
    json_read: list[Any] = []
    json_error: json.JSONDecodeError | None = None
    if json_only or stripped[0] in "{[":
        json_read, json_error = _json_stream(text, label)
        if json_error is None:
            return json_read
        if json_only:
            raise SnapshotError(
                f"{label} is not valid JSON at line {json_error.lineno}, "
                f"column {json_error.colno}: {json_error.msg}"
            )
        # Not JSON from the first document on: maybe YAML flow style, which YAML reads.
    try:
        return _yaml_documents(text, label)
    except SnapshotError:
        raise
    except yaml.YAMLError as exc:
        if json_read and json_error is not None:  # a JSON stream that breaks later on: JSON knows where
            raise SnapshotError(
                f"{label} is not valid YAML/JSON at line {json_error.lineno}, "
                f"column {json_error.colno}: {json_error.msg}"
            ) from None
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "not valid YAML or JSON"
        raise SnapshotError(f"{label} is not valid YAML/JSON{where}: {problem}") from None
    except ValueError as exc:  # a scalar its tag cannot take: an over-long integer, a 13th month
        raise _unreadable_value(label, "YAML", exc) from None
    except RecursionError:  # the pure-Python loader composes nested nodes recursively
        raise SnapshotError(f"{label} {_TOO_DEEP}") from None


def _unreadable_value(label: str, language: str, exc: ValueError) -> SnapshotError:
    return SnapshotError(f"{label} is not valid {language}: {str(exc).split(';')[0]}")


def _read_file(path: Path, cap: int, label: str) -> bytes:
    try:
        info = os.stat(path)
        _require_regular(info, label)  # before opening: opening a device or a FIFO may block or act
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise SnapshotError(f"snapshot file not found: {path}") from None
    except OSError as exc:
        raise SnapshotError(f"cannot read {label}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        _require_regular(info, label)  # the name may have been pointed elsewhere since the stat
        if info.st_size > cap:
            raise _too_large(label, cap, f"{info.st_size:,} bytes")
        return _read_at_most(lambda size: os.read(fd, size), cap, label)
    except OSError as exc:
        raise SnapshotError(f"cannot read {label}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _require_regular(info: os.stat_result, label: str) -> None:
    if stat.S_ISREG(info.st_mode):
        return
    what = next((name for test, name in _FILE_TYPES if test(info.st_mode)), "not a regular file")
    raise SnapshotError(f"cannot read {label}: it is {what}, not a regular file")


def _read_at_most(read: Callable[[int], bytes], cap: int, label: str) -> bytes:
    """Everything ``read`` gives until end of input, refused as soon as it passes ``cap`` bytes."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = read(min(_CHUNK, cap + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > cap:
            raise _too_large(label, cap, f"at least {total:,} bytes")


def _too_large(label: str, cap: int, size: str) -> SnapshotError:
    return SnapshotError(f"{label} is larger than the {cap:,}-byte limit ({size}); {MAX_BYTES_ENV} raises it")


def _decode(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SnapshotError(f"{label} is not UTF-8 text: byte {exc.start}: {exc.reason}") from None


_JSON = json.JSONDecoder()
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _after_space(text: str, position: int = 0) -> int:
    """Where the JSON whitespace at ``position`` ends (the pattern matches the empty string too)."""
    match = _JSON_SPACE.match(text, position)
    assert match is not None
    return match.end()


def _json_stream(text: str, label: str) -> tuple[list[Any], json.JSONDecodeError | None]:
    """One JSON document, or several one after another (``jq -c`` output, newline-delimited or
    simply concatenated). Returns the documents read and the error that stopped reading, if any."""
    documents: list[Any] = []
    position = _after_space(text)
    while position < len(text):
        try:
            document, position = _JSON.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            return documents, exc
        except ValueError as exc:  # an integer longer than sys.get_int_max_str_digits()
            raise _unreadable_value(label, "JSON", exc) from None
        except RecursionError:
            raise SnapshotError(f"{label} {_TOO_DEEP}") from None
        documents.append(document)
        position = _after_space(text, position)
    return documents, None


# An alias is ``*`` and at least one of these characters (PyYAML's and libyaml's scanners accept no
# others), at the start of a token: after the start, white space, a flow indicator, ``:``/``?`` in flow
# style, or a quoted scalar's closing quote. Anything else is text inside a scalar.
_ALIAS_START = re.compile(r"\*[0-9A-Za-z_-]")
_BEFORE_TOKEN = frozenset("[]{},:?\"'\ufeff")


def _has_alias(text: str) -> bool:
    if "*" not in text:
        return False
    for match in _ALIAS_START.finditer(text):
        at = match.start()
        if at == 0 or text[at - 1].isspace() or text[at - 1] in _BEFORE_TOKEN:
            return True
    return False


def _yaml_documents(text: str, label: str) -> list[Any]:
    if not _has_alias(text):  # no alias, no repetition: the plain loader, exactly as fast as ever
        return [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc is not None]
    loader = _LOADER(text)
    budget = MAX_ALIAS_NODES
    documents = []
    try:
        while loader.check_node():
            node = loader.get_node()  # composing shares aliased nodes: no expansion yet
            budget -= _alias_nodes(node, budget, label)
            document = loader.construct_document(node)
            if document is not None:
                documents.append(document)
    finally:
        loader.dispose()
    return documents


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return (child for pair in node.value for child in pair)
    if isinstance(node, yaml.SequenceNode):
        return iter(node.value)
    return iter(())


def _alias_nodes(root: yaml.Node, budget: int, label: str) -> int:
    """How many nodes the aliases under ``root`` add when expanded, computed on the composed graph
    (each distinct node once, without recursion); ``SnapshotError`` once that passes ``budget`` or
    an alias refers to a node that contains it."""
    expanded: dict[yaml.Node, int] = {root: 0}  # 0: being walked (an ancestor); else its expanded size
    frames = [[root, _children(root), 1]]
    while frames:
        frame = frames[-1]
        for child in frame[1]:
            size = expanded.get(child)
            if size is None:
                if child.__class__ is yaml.ScalarNode:  # most nodes: a leaf, counted without a frame
                    expanded[child] = 1
                    frame[2] += 1
                    continue
                expanded[child] = 0
                frames.append([child, _children(child), 1])
                break
            if size == 0:
                raise SnapshotError(
                    f"{label}: a YAML alias refers to the node that contains it (the node at "
                    f"line {child.start_mark.line + 1}); Kubernetes objects are not recursive"
                )
            frame[2] += size  # an alias: its node was counted once already, this is a repetition
        else:
            frames.pop()
            node, _, size = frame
            # The nodes seen so far include all of this node's distinct ones; more than the budget
            # beyond them means its aliases alone add more than the budget (and so does the document).
            if size - len(expanded) > budget:
                raise _alias_bomb(label)
            expanded[node] = size
            if frames:
                frames[-1][2] += size
    added = expanded[root] - len(expanded)
    if added > budget:
        raise _alias_bomb(label)
    return added


def _alias_bomb(label: str) -> SnapshotError:
    return SnapshotError(
        f"{label}: YAML aliases repeat more than {MAX_ALIAS_NODES:,} nodes (an alias bomb?); "
        "write the objects out in full (kubectl never writes aliases)"
    )
