"""The token estimate is an upper bound in the places BPE tokenizers are expensive."""

from __future__ import annotations

import random

from engram.retrieval import estimate_tokens


def test_empty_and_plain_words() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("hello") == 2  # 5 letters / 4, rounded up
    assert estimate_tokens("the cat sat") == 3


def test_ids_and_hashes_cost_a_token_per_character() -> None:
    # cl100k splits "m-3f2a9c1e7b" into m, -, 3, f, 2, a, 9, c, 1, e, 7, b: 12 tokens
    assert estimate_tokens("m-3f2a9c1e7b") >= 12
    assert estimate_tokens("deadbeefcafe0123456789") >= 6


def test_digits_group_by_three() -> None:
    assert estimate_tokens("1234567") == 3


def test_identifiers_cost_more_than_words() -> None:
    assert estimate_tokens("getUserById") >= 4
    assert estimate_tokens("LGBTQ") == 2


def test_punctuation_and_non_ascii() -> None:
    assert estimate_tokens("({[]})") == 6
    assert estimate_tokens("é") == 2  # two UTF-8 bytes
    assert estimate_tokens("日本") == 6
    assert estimate_tokens("\u00a0") >= 1  # unicode whitespace is counted, not skipped


def test_additive_across_newlines() -> None:
    rng = random.Random(7)
    alphabet = "ab cD_1.\t(é"
    for _ in range(200):
        a = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        b = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        n = rng.randint(1, 3)
        assert estimate_tokens(a + "\n" * n + b) == estimate_tokens(a) + n + estimate_tokens(b)


def test_at_least_one_token_per_five_characters_of_ascii() -> None:
    rng = random.Random(3)
    for _ in range(100):
        text = "".join(chr(rng.randint(32, 126)) for _ in range(rng.randint(1, 200)))
        assert estimate_tokens(text) * 5 >= len(text)


def test_a_space_before_digits_is_its_own_token() -> None:
    # cl100k never joins a space to digits: " 11" is " " + "11"
    assert estimate_tokens(" 11") == 2
    assert estimate_tokens("datetime(2026, 11, 26)") >= 12
