"""Snapshot files read within bounds (scheduler/engine/reading.py): every refusal is one SnapshotError line
that names the file; ordinary snapshots, aliases in moderation included, load as before.

The bombs that would hang or exhaust the machine on an unguarded reader (a FIFO, /dev/zero) are in
test_cli.py, run as subprocesses under a timeout.
"""

import io
import json
import os

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.engine import SnapshotError, load_snapshot, plan, reading
from scheduler.engine.builders import as_list, node, pod, podgroup
from scheduler.engine.reading import DEFAULT_MAX_BYTES, MAX_ALIAS_NODES, max_snapshot_bytes, read_snapshot

from .bombs import BILLION_LAUGHS, LIST_BOMB


def _objects():
    return [
        node("n1"),
        podgroup("g", min_count=1, priority=100),
        pod("g-0", group="g", gpus=8),
        pod("low", node="n1", gpus=8, priority=1),
    ]


def _write(tmp_path, text, name="snapshot.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _refused(source, *expected):
    with pytest.raises(SnapshotError) as caught:
        load_snapshot(source)
    message = str(caught.value)
    assert "\n" not in message
    for words in expected:
        assert words in message, message
    return message


def test_the_billion_laughs_is_333_bytes_and_refused_naming_the_file(tmp_path):
    assert len(BILLION_LAUGHS.encode()) == 333
    path = _write(tmp_path, BILLION_LAUGHS)
    _refused(path, f"snapshot file {path}", f"YAML aliases repeat more than {MAX_ALIAS_NODES:,} nodes")
    _refused(BILLION_LAUGHS, "snapshot: YAML aliases repeat")  # the same text given as text


def test_an_aliased_list_of_lists_is_refused(tmp_path):
    path = _write(tmp_path, LIST_BOMB)
    _refused(path, f"snapshot file {path}", "YAML aliases repeat more than")


@pytest.mark.parametrize(
    "text", ["- &a [*a]\n", "&m {kind: List, items: [*m]}\n", "a: &b {c: [1, {d: *b}]}\n"]
)
def test_an_alias_inside_the_node_it_names_is_refused(tmp_path, text):
    _refused(_write(tmp_path, text), "a YAML alias refers to the node that contains it", "line 1")


def test_aliases_in_moderation_load_like_the_objects_written_out(tmp_path):
    objects = _objects()
    shared = {"requests": {"cpu": "1", "nvidia.com/gpu": "8"}}
    for obj in objects[2:]:
        obj["spec"]["containers"][0]["resources"] = shared  # PyYAML writes &id001 ... *id001
    aliased = yaml.safe_dump(as_list(objects))  # one document: anchors do not cross documents
    assert "*id001" in aliased
    plain = json.dumps(as_list(objects))
    a, b = load_snapshot(_write(tmp_path, aliased)), load_snapshot(_write(tmp_path, plain, "plain.json"))
    assert [p.key for p in a.pods] == [p.key for p in b.pods]
    assert plan(a, "default/g").to_dict() == plan(b, "default/g").to_dict()
    assert plan(a, "default/g").evictions == ["default/low"]


def test_aliases_just_under_the_limit_load_and_just_over_are_refused():
    items = (
        "[" + ", ".join(["*s"] * (MAX_ALIAS_NODES // 3)) + "]"
    )  # each alias repeats a map and its 2 scalars
    under = "kind: List\nitems: [&s {kind: Secret}]\nmore: {kind: List, items: " + items + "}\n"
    assert reading.snapshot_documents(under)
    over = under.replace("items: [&s {kind: Secret}]", "items: [&s {kind: Secret, a: b}]")  # 5 nodes each
    with pytest.raises(SnapshotError, match="YAML aliases repeat"):
        reading.snapshot_documents(over)


def test_text_without_alias_tokens_takes_the_plain_loader():
    """Stars inside scalars are no aliases: such files keep the plain (fast) libyaml path."""
    for text in [
        'command: ["sh", "-c", "ls *.txt && rm a*b"]\n',
        'verbs: ["*"]\n',
        "a: b*c\n",
        "a: '**'\n",
        "x: 2 * 3\n",
        "a: '*'\n",
    ]:
        assert not reading._has_alias(text), text
    for text in ["- *a\n", "[*a]\n", "{a: *a}\n", '{"a":*a}\n', "[a,*b]\n", "? *a\n", "*a : 1\n", "a:\t*b\n"]:
        assert reading._has_alias(text), text


_YAML_CHARACTERS = st.text(alphabet=list("*&ab- \t\n[]{},:?\"'#!|>%@`.\u2028\x85"), max_size=24)


def _alias_tokens(text, loader):
    found = False
    try:
        for token in yaml.scan(text, Loader=loader):
            found = found or isinstance(token, yaml.AliasToken)
    except yaml.YAMLError:
        pass
    return found


@settings(max_examples=3000, deadline=None)
@given(_YAML_CHARACTERS)
def test_every_alias_the_yaml_scanners_see_is_caught_by_the_fast_check(text):
    """Soundness of the fast path: text it lets through has no alias for libyaml or PyYAML's scanner."""
    if not reading._has_alias(text):
        assert not _alias_tokens(text, yaml.SafeLoader)
        assert not _alias_tokens(text, getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def test_a_file_named_like_json_text_is_a_file(tmp_path, monkeypatch):
    """``[snap].json`` starts like a JSON array: it is still a file name, and its content is JSON."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "[snap].json").write_text(json.dumps(as_list(_objects())))
    for source in ("[snap].json", tmp_path / "[snap].json", str(tmp_path / "[snap].json")):
        assert [n.name for n in load_snapshot(source).nodes] == ["n1"]
    _refused("[missing].json", "snapshot file not found: [missing].json")


def test_a_json_file_is_read_as_json_only(tmp_path):
    path = _write(tmp_path, yaml.safe_dump(as_list(_objects())), "cluster.JSON")
    _refused(path, f"snapshot file {path} is not valid JSON at line 1, column 1")
    stream = _write(tmp_path, "\n".join(json.dumps(obj) for obj in _objects()), "stream.json")
    assert sorted(p.key for p in load_snapshot(stream).pods) == ["default/g-0", "default/low"]


def test_directories_and_devices_are_refused_before_reading(tmp_path):
    _refused(tmp_path, f"cannot read snapshot file {tmp_path}: it is a directory, not a regular file")
    _refused("/dev/null", "cannot read snapshot file /dev/null: it is a character device")


def test_a_symlink_to_a_regular_file_is_read_and_one_to_a_device_is_not(tmp_path):
    target = _write(tmp_path, json.dumps(as_list(_objects())), "real.json")
    (tmp_path / "link.json").symlink_to(target)
    assert load_snapshot(tmp_path / "link.json").nodes
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    _refused(tmp_path / "zero.yaml", "it is a character device")


def test_the_size_cap_is_a_setting(tmp_path, monkeypatch):
    text = json.dumps(as_list(_objects()))
    path = _write(tmp_path, text, "s.json")
    assert max_snapshot_bytes() == DEFAULT_MAX_BYTES == 256 * 2**20
    monkeypatch.setenv("GANGWEB_SNAPSHOT_MAX_BYTES", str(len(text)))
    assert load_snapshot(path).nodes  # exactly the cap: loads
    monkeypatch.setenv("GANGWEB_SNAPSHOT_MAX_BYTES", str(len(text) - 1))
    _refused(
        path,
        f"snapshot file {path} is larger than the {len(text) - 1:,}-byte limit ({len(text):,} bytes)",
        "GANGWEB_SNAPSHOT_MAX_BYTES",
    )
    _refused(io.BytesIO(text.encode()), "snapshot stream is larger than", f"at least {len(text):,} bytes")
    _refused(text + "\n", "snapshot is larger than")
    for bad in ("0", "-1", "lots"):
        monkeypatch.setenv("GANGWEB_SNAPSHOT_MAX_BYTES", bad)
        _refused(path, "GANGWEB_SNAPSHOT_MAX_BYTES must be a positive number of bytes")


def test_a_stream_is_read_in_bounded_chunks(monkeypatch):
    """A stream that never ends (standard input from /dev/zero) stops one chunk past the cap."""
    monkeypatch.setenv("GANGWEB_SNAPSHOT_MAX_BYTES", str(3 * 2**20))
    asked = []

    class Endless(io.RawIOBase):
        def read(self, size=-1):
            asked.append(size)
            return b"\0" * size

    _refused(Endless(), "snapshot stream is larger than the 3,145,728-byte limit")
    assert sum(asked) == 3 * 2**20 + 1 and max(asked) <= 8 * 2**20


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a: " + "1" * 5000 + "\n", "is not valid YAML: Exceeds the limit"),
        ('{"a": ' + "1" * 5000 + "}", "is not valid JSON: Exceeds the limit"),
        ("a: 2001-13-45\n", "is not valid YAML: month must be in 1..12"),
    ],
)
def test_values_python_cannot_take_are_bad_input(text, expected):
    _refused(text + "\n", expected)


def test_not_utf8_names_the_file(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes(b"kind: Node\n\xff")
    _refused(path, f"snapshot file {path} is not UTF-8 text: byte 11")


@pytest.mark.slow
def test_a_50000_node_dump_is_read_under_the_default_cap(tmp_path):
    """The default cap leaves room: synthetic.py's 50,000-node dump (about 73 MB as JSON; the same objects
    as block YAML are about 2 % bigger) is read whole, with the cap above twice its size."""
    from testkit.synthetic import synthetic_cluster

    path = tmp_path / "50k.json"
    path.write_text(json.dumps(as_list(synthetic_cluster(50_000, seed=7))))
    size = os.path.getsize(path)
    assert size > 60e6 and 2 * size < max_snapshot_bytes(), size
    (document,) = read_snapshot(path)
    assert sum(item["kind"] == "Node" for item in document["items"]) == 50_000
