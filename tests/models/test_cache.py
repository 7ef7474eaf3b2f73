"""The dequantised-weights cache: atomic writes, source checksum, detection and rebuild of corrupt,
truncated and partial entries — on a cheap synthetic build, and on the real SmolLM2 GGUF once."""

from __future__ import annotations

import json
import os

import pytest

from numerics.models import cache
from numerics.models.cache import cached_build, file_sha256, verify_entry


@pytest.fixture
def src(tmp_path):
    p = tmp_path / "weights.bin"
    p.write_bytes(os.urandom(4096))
    return p


class Builder:
    def __init__(self):
        self.calls = 0

    def __call__(self, tmp):
        self.calls += 1
        (tmp / "model.safetensors").write_bytes(b"x" * 1000)
        (tmp / "sub").mkdir()
        (tmp / "sub" / "tok.json").write_text("{}")


def test_env_var_sets_the_root(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "c"))
    assert cache.cache_root() == tmp_path / "c"
    monkeypatch.delenv(cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.cache_root() == tmp_path / "x" / "connwalk"


def test_miss_then_hit(src, tmp_path):
    b = Builder()
    root = tmp_path / "cache"
    i1 = cached_build("k", src, b, root=root)
    assert not i1.hit and b.calls == 1
    man = json.loads((i1.path / "manifest.json").read_text())
    assert man["source_sha256"] == file_sha256(src)
    assert set(man["files"]) == {"model.safetensors", "sub/tok.json"}
    i2 = cached_build("k", src, b, root=root)
    assert i2.hit and i2.path == i1.path and b.calls == 1
    assert [p.name for p in root.iterdir()] == [i1.path.name]  # no temporary leftovers


@pytest.mark.parametrize(
    "damage, reason",
    [
        ("truncate", "truncated"),
        ("flip", "CRC-32"),
        ("no-manifest", "partial"),
        ("bad-manifest", "manifest"),
        ("missing-file", "missing"),
    ],
)
def test_damaged_entry_is_detected_and_rebuilt(src, tmp_path, damage, reason):
    b = Builder()
    root = tmp_path / "cache"
    entry = cached_build("k", src, b, root=root).path
    f = entry / "model.safetensors"
    if damage == "truncate":
        f.write_bytes(f.read_bytes()[:10])
    elif damage == "flip":
        f.write_bytes(b"y" + f.read_bytes()[1:])
    elif damage == "no-manifest":
        (entry / "manifest.json").unlink()
    elif damage == "bad-manifest":
        (entry / "manifest.json").write_text("{")
    else:
        f.unlink()
    assert reason in verify_entry(entry, file_sha256(src))
    with pytest.warns(UserWarning, match=reason):
        info = cached_build("k", src, b, root=root)
    assert not info.hit and reason in info.rebuilt_reason and b.calls == 2
    assert verify_entry(info.path, file_sha256(src)) is None
    assert f.read_bytes() == b"x" * 1000


def test_changed_source_gets_a_new_entry(src, tmp_path):
    b = Builder()
    root = tmp_path / "cache"
    e1 = cached_build("k", src, b, root=root).path
    src.write_bytes(os.urandom(4096))
    e2 = cached_build("k", src, b, root=root).path
    assert e1 != e2 and b.calls == 2
    assert "checksum" in verify_entry(e1, file_sha256(src))


def test_failed_build_leaves_nothing(src, tmp_path):
    root = tmp_path / "cache"

    def boom(tmp):
        (tmp / "half.bin").write_bytes(b"partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        cached_build("k", src, boom, root=root)
    assert list(root.iterdir()) == []


@pytest.mark.slow
def test_smollm2_cache_cold_then_warm(smollm_cold):
    """The session fixture built the entry from the GGUF (cold); the manifest holds the GGUF's
    SHA-256; a second call is a verified hit; a flipped byte in the weights is detected."""
    from numerics.models.registry import load_gguf_dir

    info = smollm_cold["info"]
    entry = smollm_cold["path"]
    assert not info.hit
    man = json.loads((entry / "manifest.json").read_text())
    assert man["source_sha256"] == file_sha256(smollm_cold["gguf"])
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= set(man["files"])
    path2, info2 = load_gguf_dir(smollm_cold["gguf"])
    assert info2.hit and path2 == entry
    f = entry / "model.safetensors"
    with open(f, "r+b") as fh:
        fh.seek(-1, os.SEEK_END)
        last = fh.read(1)
        fh.seek(-1, os.SEEK_END)
        fh.write(bytes([last[0] ^ 0xFF]))
    try:
        assert "CRC-32" in verify_entry(entry, man["source_sha256"])
    finally:
        with open(f, "r+b") as fh:
            fh.seek(-1, os.SEEK_END)
            fh.write(last)
    assert verify_entry(entry, man["source_sha256"]) is None


def test_concurrent_builder_keeps_the_first_complete_entry(src, tmp_path):
    """Two processes miss at once: the one that finishes second must not delete the first's entry."""
    root = tmp_path / "cache"
    first = Builder()

    def racing(tmp):
        first(tmp)
        cached_build("k", src, Builder(), root=root)  # the 'other process' completes meanwhile

    info = cached_build("k", src, racing, root=root)
    assert verify_entry(info.path, file_sha256(src)) is None
    assert [p.name for p in root.iterdir()] == [info.path.name]
