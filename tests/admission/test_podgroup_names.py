"""Every PodGroup name the webhook derives is a valid object name (DNS-1123 subdomain), and stable."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from admission.inference import podgroup_name

# Written out from the Kubernetes rule (apimachinery IsDNS1123Subdomain), not shared with the code.
LABEL = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")


def assert_valid_subdomain(name: str) -> None:
    assert 0 < len(name) <= 253, name
    for label in name.split("."):
        assert LABEL.fullmatch(label), f"{name!r}: label {label!r}"


@pytest.mark.parametrize(
    "raw", ["UPPER..x", "a..b", "x.-y", "y-.x", ".lead", "trail.", "a\n", "-.-.-", "..", "ä.ö"]
)
def test_names_with_bad_labels_become_valid(raw):
    name = podgroup_name(raw)
    assert_valid_subdomain(name)
    assert name != raw


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("UPPER..x", "upper.x-563acb0955"),
        ("Spark_App", "spark-app-46bbacfae9"),
        ("UPPER", "upper-1dacd1c358"),
    ],
)
def test_derived_names_are_stable_across_releases(raw, expected):
    # Pods admitted earlier name these groups; the controller side must derive the same names.
    assert podgroup_name(raw) == expected


# The characters that matter most (case, dots, dashes, underscores), plus anything at all.
NAME_ALPHABET = st.sampled_from("aZ09.-_.-")
RAW_NAMES = st.one_of(st.text(), st.text(NAME_ALPHABET, max_size=300), st.text(min_size=240, max_size=400))


@settings(max_examples=400, deadline=None)
@given(RAW_NAMES)
@example("a" * 253)
@example("a" * 254)
@example("a." * 126 + "b")
def test_every_derived_name_is_a_valid_subdomain_and_deterministic(raw):
    name = podgroup_name(raw)
    assert_valid_subdomain(name)
    podgroup_name.cache_clear()
    assert podgroup_name(raw) == name


@settings(max_examples=200, deadline=None)
@given(
    st.from_regex(
        r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?){0,4}", fullmatch=True
    )
)
def test_valid_names_are_kept_as_they_are(raw):
    assert podgroup_name(raw) == raw


@pytest.mark.parametrize("name", ["abc\n", "a..b", "-a", "a-", "A", "", "a" * 64])
def test_api_rules_refuse_names_that_are_not_dns_labels(name):
    from admission.names import is_dns1123_label

    assert not is_dns1123_label(name)
