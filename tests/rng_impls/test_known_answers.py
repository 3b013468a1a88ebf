"""Known-answer vectors: Random123 (Philox4x64, Threefry4x64) and RFC 8439 (ChaCha20)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jext.rng_impls import (
    CHACHA20,
    PHILOX4X64,
    THREEFRY4X64,
    _common,
    chacha20_block,
    chacha20_key_data,
    philox4x64_block,
    threefry4x64_block,
)
from jext.testing._rng_checks import run_rng_check

# Copies of the published vectors, kept in the repository (sources in tests/data/README.md).
REFERENCE = Path(__file__).resolve().parents[1] / "data"


def random123_vectors(name: str) -> list[tuple[int, list[int], list[int], list[int]]]:
    """(rounds, counter, key, expected) for every ``name`` line of the Random123 KAT file."""
    words_per_block = {"philox4x64": (4, 2), "threefry4x64": (4, 4)}[name]
    out = []
    for line in (REFERENCE / "random123_kat.txt").read_text().splitlines():
        fields = line.split()
        if not fields or fields[0] != name:
            continue
        nctr, nkey = words_per_block
        words = [int(w, 16) for w in fields[2:]]
        assert len(words) == nctr + nkey + nctr, line
        out.append((int(fields[1]), words[:nctr], words[nctr : nctr + nkey], words[nctr + nkey :]))
    return out


def rfc8439_sections() -> list[dict[str, str]]:
    """The key/nonce/counter/(block|keystream) records of the RFC 8439 reference file."""
    records: list[dict[str, str]] = []
    for line in (REFERENCE / "rfc8439_chacha20.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        field, value = line.split()
        if field == "key":
            records.append({})
        records[-1][field] = value
    return records


def test_reference_files_are_found() -> None:
    assert len(random123_vectors("philox4x64")) == 3
    assert {r for r, *_ in random123_vectors("threefry4x64")} == {13, 20}
    assert [sorted(r) for r in rfc8439_sections()] == [
        ["block", "counter", "key", "nonce"],
        ["counter", "key", "keystream", "nonce"],
    ]


@pytest.mark.parametrize("vector", random123_vectors("philox4x64"), ids=str)
def test_philox4x64_random123(vector: tuple[int, list[int], list[int], list[int]]) -> None:
    rounds, ctr, key, expected = vector
    assert list(philox4x64_block(ctr, key, rounds)) == expected


@pytest.mark.parametrize("vector", random123_vectors("threefry4x64"), ids=str)
def test_threefry4x64_random123(vector: tuple[int, list[int], list[int], list[int]]) -> None:
    rounds, ctr, key, expected = vector
    assert list(threefry4x64_block(ctr, key, rounds)) == expected


def test_chacha20_block_function() -> None:
    (rec, _) = rfc8439_sections()
    out = chacha20_block(
        bytes.fromhex(rec["key"]), int(rec["counter"]), bytes.fromhex(rec["nonce"])
    )
    assert out.hex() == rec["block"]


def test_chacha20_keystream_through_random_bits() -> None:
    (_, rec) = rfc8439_sections()
    want = bytes.fromhex(rec["keystream"])
    data = chacha20_key_data(
        bytes.fromhex(rec["key"]), bytes.fromhex(rec["nonce"]), int(rec["counter"])
    )
    key = jax.random.wrap_key_data(jnp.asarray(data), impl=CHACHA20.jax_impl)
    got = np.asarray(jax.random.bits(key, (len(want),), jnp.uint8))
    assert got.tobytes() == want


def test_chacha20_block_is_the_first_block_of_the_stream() -> None:
    (rec, _) = rfc8439_sections()
    data = chacha20_key_data(
        bytes.fromhex(rec["key"]), bytes.fromhex(rec["nonce"]), int(rec["counter"])
    )
    key = jax.random.wrap_key_data(jnp.asarray(data), impl=CHACHA20.jax_impl)
    got = np.asarray(jax.random.bits(key, (16,), jnp.uint32)).astype("<u4").tobytes()
    assert got.hex() == rec["block"]


# --- every form of every generator (docs/rng.md, "Forms") --------------------------------


@pytest.fixture
def fresh_lowerings() -> Iterator[None]:
    # JEXT_RNG_FORM is read at lowering: programs compiled before must not be reused.
    jax.clear_caches()
    yield
    jax.clear_caches()


@pytest.mark.usefixtures("fresh_lowerings")
@pytest.mark.parametrize("form", _common.FORMS)
def test_jext_check_known_answers_pass_on_every_form(
    form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The known-answer check of ``jext check`` passes with each form forced on CPU (the
    pallas form in the Pallas interpreter), and the form forced is the one lowered."""
    if form == "native" and _common.native_cpu_target("jext_rng_chacha20_bits") is None:
        pytest.skip("jext-rng-native is not installed")
    monkeypatch.setenv("JEXT_RNG_FORM", form)
    for impl in (PHILOX4X64, CHACHA20, THREEFRY4X64):
        assert run_rng_check(impl, "known_answers").status == "pass", (impl.name, form)
    key = jax.random.key(0, impl=CHACHA20.jax_impl)
    text = jax.jit(lambda k: jax.random.bits(k, (2**16,), jnp.uint32)).lower(key).as_text()
    loops = {"native": 0, "chunked": 0, "unrolled": 0, "rolled": 1, "pallas": 2}
    assert text.count("stablehlo.while") == loops[form]
    assert ("custom_call @jext_rng_chacha20_bits" in text) == (form == "native")


@pytest.mark.usefixtures("fresh_lowerings")
def test_the_known_answer_check_fails_a_wrong_form(monkeypatch: pytest.MonkeyPatch) -> None:
    rolled = _common.stream_words_rolled

    def one_block_late(
        block: Any, prepared: Any, start: Any, block_words: int, nwords: int, *, unroll: int
    ) -> jax.Array:
        later = _common.add_to_counter(start, jnp.ones((), jnp.uint32))
        return rolled(block, prepared, later, block_words, nwords, unroll=unroll)

    monkeypatch.setattr(_common, "stream_words_rolled", one_block_late)
    monkeypatch.setenv("JEXT_RNG_FORM", "rolled")
    result = run_rng_check(PHILOX4X64, "known_answers")
    assert result.status == "fail" and "vector 0" in str(result.message)
