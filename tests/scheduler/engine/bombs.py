"""Snapshot texts that exhaust a reader expanding YAML aliases (test_reading.py, test_cli.py)."""

# 333 bytes that a reader expanding aliases turns into 9**9 (387 million) strings.
BILLION_LAUGHS = '- &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"- &{name} [{','.join(['*' + previous] * 9)}]\n" for previous, name in zip("abcdefgh", "bcdefghi")
)

# A List whose items are Lists of Lists through aliases: 10**8 ignored Secrets once flattened.
LIST_BOMB = (
    "kind: List\nitems:\n- &a {kind: List, items: [&x {kind: Secret}, *x, *x, *x, *x, *x, *x, *x, *x, *x]}\n"
    + "".join(
        f"- &{name} {{kind: List, items: [{', '.join(['*' + previous] * 10)}]}}\n"
        for previous, name in zip("abcdefg", "bcdefgh")
    )
)
